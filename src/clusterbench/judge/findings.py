"""Everything a report shows, gathered once: groups of runs, validation, comparison, degraded
nodes and efficiency vs theory and vs datasheet peaks. HTML and Markdown render this."""

from __future__ import annotations

from dataclasses import dataclass, field

from clusterbench.errors import UsageError
from clusterbench.families.collectives.spec import ALGBW, BUSBW, optimal_algbw
from clusterbench.judge.compare import Comparison, compare
from clusterbench.judge.degraded import Degraded, find_degraded
from clusterbench.judge.efficiency import (
    DevicePercent,
    device_percent_of_peak,
    nodes_of,
    run_link_efficiency,
)
from clusterbench.judge.history import Series, build_series, detect, run_time
from clusterbench.judge.profiles import Profile
from clusterbench.judge.select import Row, rows_of
from clusterbench.judge.theory import Efficiency, link_speed_for
from clusterbench.judge.validate import Outcome, evaluate
from clusterbench.records import Measurement, Run


@dataclass
class Group:
    label: str  # the selector the user gave
    runs: list[tuple[Run, list[Measurement]]]

    @property
    def rows(self) -> list[Row]:
        return rows_of(self.runs)


@dataclass
class Findings:
    groups: list[Group]
    profile: Profile | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    compare_error: str = ""
    degraded: list[Degraded] = field(default_factory=list)
    efficiencies: list[tuple[int, Efficiency]] = field(default_factory=list)  # (run id, eff)
    device_percents: list[tuple[int, DevicePercent]] = field(default_factory=list)
    theory: dict[tuple[str, str], float] = field(default_factory=dict)  # (benchmark, metric) -> GB/s
    link: str | None = None
    history: list[Series] = field(default_factory=list)  # headline per host over time, with changes

    @property
    def all_rows(self) -> list[Row]:
        return [r for g in self.groups for r in g.rows]


def gather(groups: list[Group], *, profile: Profile | None = None, link: str | None = None,
           nodes: int | None = None) -> Findings:
    f = Findings(groups, profile=profile, link=link)
    rows = f.all_rows
    if profile is not None:
        f.outcomes = evaluate(profile, rows)
    if len(groups) == 2:
        try:
            f.comparisons = compare(groups[0].rows, groups[1].rows)
        except UsageError as e:
            f.compare_error = str(e)
    f.degraded = find_degraded(rows)
    f.history = history_of(groups)
    for g in groups:
        for run, ms in g.runs:
            f.efficiencies += [(run.id, e) for e in run_link_efficiency(run, ms, link, nodes)]
            f.device_percents += [(run.id, d) for d in device_percent_of_peak(run, ms)]
            rate = link_speed_for(run.tags, link)
            n = nodes_of(run, nodes)
            if rate and n >= 2:
                for m in ms:
                    opt = optimal_algbw(m.benchmark, rate, n)
                    if opt is None or (m.benchmark, m.metric) in f.theory:
                        continue
                    if m.metric == ALGBW.name:
                        f.theory[(m.benchmark, m.metric)] = opt
                    elif m.metric == BUSBW.name:  # busbw at the optimum is the link speed itself
                        f.theory[(m.benchmark, m.metric)] = rate / 1e9
    return f


HISTORY_MIN_RUNS = 4


def history_of(groups: list[Group]) -> list[Series]:
    """Each host's headline series across the selected runs in time order, with the changes
    found in it; only series measured in at least ``HISTORY_MIN_RUNS`` runs."""
    runs = {run.id: (run, ms) for g in groups for run, ms in g.runs}
    ordered = sorted(runs.values(), key=lambda rm: (run_time(rm[0]) is None, rm[0].started_at or "", rm[0].id or 0))
    series = [s for s in build_series(ordered) if len(s.points) >= HISTORY_MIN_RUNS]
    return detect(series)
