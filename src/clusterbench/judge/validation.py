"""``validate``'s judgement of stored runs: a profile's criteria, the tools' own checks, the
efficiency against a link speed and the percent of datasheet peaks, read from the database in
one go and returned for the command to print."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from clusterbench.judge.blame import NodeFindings, node_findings
from clusterbench.judge.efficiency import (
    DevicePercent,
    best_per_placement,
    best_percent_of_peak,
    run_link_efficiency,
)
from clusterbench.judge.profiles import Profile
from clusterbench.judge.select import Row, interrupted_note, rows_of
from clusterbench.judge.theory import Efficiency
from clusterbench.judge.tool_checks import tool_outcomes
from clusterbench.judge.validate import STATUSES, Outcome, evaluate, exit_code, nothing_checked
from clusterbench.records import WARNINGS, Measurement, Run
from clusterbench.store import Store
from clusterbench.store.runs import loaded, read_runs


@dataclass
class Validation:
    profile: Profile
    loaded: list[tuple[Run, list[Measurement]]]
    rows: list[Row]
    outcomes: list[Outcome]                    # the profile's criteria, then the tools' own checks
    efficiencies: list[tuple[Run, Efficiency]]
    peaks: list[tuple[str, DevicePercent]]
    partial: str | None                        # the note interrupted runs need
    nothing_checked: bool                      # no criterion of the profile matched a measurement
                                               # (runs on other hardware than the profile's are an answer)

    @property
    def run_ids(self) -> list[int]:
        return [r.id for r, _ in self.loaded]

    @property
    def exit_code(self) -> int:
        """2 when nothing was checked, else 1 when a criterion failed or errored, else 0."""
        return 2 if self.nothing_checked else exit_code(self.outcomes)

    def best(self) -> list[tuple[Run, Efficiency]]:
        """The efficiency at each op's and placement's largest size, with the run it is of."""
        run_of = {id(e): run for run, e in self.efficiencies}
        return [(run_of[id(e)], e) for e in best_per_placement([e for _, e in self.efficiencies])]

    def counts(self) -> dict[str, int]:
        return {s: sum(o.status == s for o in self.outcomes) for s in STATUSES}

    def warnings(self) -> list[tuple[int, str]]:
        """What imports doubted about their runs' figures: (run id, text)."""
        return [(run.id, text) for run, _ in self.loaded for text in run.meta.get(WARNINGS) or []]

    def nodes(self) -> NodeFindings:
        """The nodes failed criteria are on (``--on-fail``)."""
        return node_findings(self.outcomes, self.rows)


def validate_runs(db: str | os.PathLike[str] | None, profile: Profile, selectors: Iterable[str],
                  since: str | None = None, link_speed: str | None = None,
                  nodes: int | None = None) -> Validation:
    """Judge the runs ``selectors`` pick in ``db`` against ``profile``; ``link_speed`` (else each
    run's ``link_speed`` tag) and ``nodes`` for the efficiency of collective rows."""
    loaded = read_runs(db, selectors, since, shared=True)   # read-only records: one params dict a set
    rows = rows_of(loaded)
    judged = evaluate(profile, rows)
    outcomes = judged + tool_outcomes(loaded)   # the tools' own checks (nccl-tests' error tolerance)
    effs = [(run, e) for run, ms in loaded for e in run_link_efficiency(run, ms, link_speed, nodes)]
    return Validation(profile=profile, loaded=loaded, rows=rows, outcomes=outcomes, efficiencies=effs,
                      peaks=best_percent_of_peak(loaded), partial=interrupted_note(r for r, _ in loaded),
                      nothing_checked=nothing_checked(judged))


@dataclass
class GroupJudgement:
    """The runs of a group (``qualify``'s tag) judged against a profile's criteria."""

    loaded: list[tuple[Run, list[Measurement]]]
    rows: list[Row]
    outcomes: list[Outcome]   # every criterion, measured or not: one nothing measured is skipped

    @property
    def run_ids(self) -> list[int]:
        return [r.id for r, _ in self.loaded]


def judge_group(db: str | os.PathLike[str] | None, profile: Profile, tags: dict[str, str],
                leave_out: str = "preflight") -> GroupJudgement:
    """Judge the runs carrying every one of ``tags`` in ``db`` against ``profile``, runs of the
    benchmark ``leave_out`` (a health check that measured nothing) not among them."""
    with Store.open(db) as store:
        runs = store.runs_with_tags(tags)
        found = loaded(store, [str(r.id) for r in runs if r.benchmark != leave_out])
    rows = rows_of(found)
    return GroupJudgement(found, rows, evaluate(profile, rows))
