"""From per-node and per-pair results to suspects: pure functions, no processes.

A node's pair score is the median of the pairs it took part in. A degraded link makes every
pair of its node slow, while a healthy node has at most one slow pair per bad neighbour, so
the median separates the two; a single noisy pair drags two nodes equally and flags neither.
Outliers among node scores come from ``clusterbench.judge.outliers`` (modified z-score).
A subset that failed to run at all (a node that never joined, died, or cannot be reached) is
evidence by itself: its hosts named in the failure are suspects.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from clusterbench.errors import UsageError
from clusterbench.hostlist import expand_hostlist
from clusterbench.judge.outliers import Outlier, flag_outliers
from clusterbench.judge.stats import median


@dataclass
class SubsetResult:
    hosts: tuple[str, ...]
    stage: str                       # "single" or "pair"
    value: float | None = None       # the chosen metric; None when the subset failed
    unit: str = ""
    error: str | None = None


@dataclass
class Suspect:
    host: str
    reason: str
    evidence: list[str] = field(default_factory=list)


@dataclass
class Analysis:
    single_scores: dict[str, float]
    pair_scores: dict[str, float]
    suspects: list[Suspect]
    switch_scores: dict[str, float] = field(default_factory=dict)


def pick_value(records: Sequence[Mapping], metric: str) -> tuple[float, str] | None:
    """Mean of ``metric`` over the rows at the largest ``bytes`` (all rows when none has bytes)."""
    rows = [r for r in records if r.get("metric") == metric]
    if not rows:
        return None
    sizes = [r.get("params", {}).get("bytes") for r in rows if r.get("params", {}).get("bytes") is not None]
    if sizes:
        top = max(sizes)
        rows = [r for r in rows if r.get("params", {}).get("bytes") == top]
    values = [float(r["value"]) for r in rows]
    try:
        mean = statistics.fmean(values)
    except OverflowError:   # the sum of values near the float limit overflows; their mean does not
        mean = 2 * statistics.fmean(v / 2 for v in values)
    return mean, str(rows[0].get("unit", ""))


def node_pair_scores(results: Sequence[SubsetResult]) -> dict[str, float]:
    per: dict[str, list[float]] = {}
    for r in results:
        if r.stage == "pair" and r.value is not None:
            for h in r.hosts:
                per.setdefault(h, []).append(r.value)
    # stats.median: statistics.median gives inf for two scores near the float limit, which the
    # store refuses to keep
    return {h: median(v) for h, v in per.items()}


def blamed_hosts(r: SubsetResult) -> list[str]:
    """The hosts a launch failure names: 'X, Y never joined', 'host X ...', else all of them."""
    text = r.error or ""
    m = re.search(r": ((?:[^\s,:]+(?:, )?)+) never joined", text)
    if m:
        return [h for h in m.group(1).split(", ") if h in r.hosts]
    m = re.search(r"\bhost (\S+)", text)
    if m and m.group(1) in r.hosts:
        return [m.group(1)]
    return list(r.hosts)


def parse_topology(text: str, name: str = "topology.conf") -> dict[str, str]:
    """Slurm topology.conf (tree): leaf ``SwitchName=s1 Nodes=gpu[01-04]`` lines -> host: switch.
    ``Nodes=`` takes the Slurm hostlist grammar of ``--hosts``; a malformed one names its line."""
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0]
        sw = re.search(r"\bSwitchName=(\S+)", line)
        nodes = re.search(r"\bNodes=(\S+)", line)
        if sw and nodes:
            try:
                hosts = expand_hostlist(nodes.group(1), "Nodes=")
            except UsageError as e:
                raise UsageError(f"{name} line {n}: {e}") from None
            for h in hosts:
                out[h] = sw.group(1)
    return out


def analyze(results: Sequence[SubsetResult], *, threshold: float = 3.5, min_rel_dev: float = 0.05,
            higher_is_better: bool = True, switches: Mapping[str, str] | None = None) -> Analysis:
    suspects: dict[str, Suspect] = {}

    def add(host: str, reason: str, evidence: list[str]) -> None:
        s = suspects.setdefault(host, Suspect(host, reason))
        if reason not in s.reason:
            s.reason += "; " + reason
        s.evidence += evidence

    for r in results:
        if r.error is not None:
            named = blamed_hosts(r)
            for h in named:
                add(h, f"{r.stage} run failed", [f"{'+'.join(r.hosts)}: {r.error}"])

    singles = {r.hosts[0]: r.value for r in results if r.stage == "single" and r.value is not None}
    pairs = node_pair_scores(results)
    unit = next((r.unit for r in results if r.value is not None), "")
    for stage, scores in (("single", singles), ("pair", pairs)):
        for o in flag_outliers(scores, threshold=threshold, higher_is_better=higher_is_better,
                               min_rel_dev=min_rel_dev):
            evidence = [o.describe(unit)]
            if stage == "pair":
                evidence += [f"{'+'.join(r.hosts)}: {r.value:.4g} {unit}" for r in results
                             if r.stage == "pair" and o.key in r.hosts and r.value is not None]
            add(o.key, f"{stage} score is an outlier", evidence)

    switch_scores: dict[str, float] = {}
    if switches:
        groups: dict[str, list[float]] = {}
        for h, v in pairs.items():
            if h in switches:
                groups.setdefault(switches[h], []).append(v)
        switch_scores = {sw: median(v) for sw, v in groups.items()}
        for o in flag_outliers(switch_scores, threshold=threshold, higher_is_better=higher_is_better,
                               min_rel_dev=min_rel_dev):
            for h in sorted(h for h, sw in switches.items() if sw == o.key and h in pairs):
                add(h, f"behind switch {o.key}, an outlier", [_describe_switch(o, unit)])
    return Analysis(singles, pairs, list(suspects.values()), switch_scores)


def _describe_switch(o: Outlier, unit: str) -> str:
    return "switch " + o.describe(unit)
