"""Scaling tables from stored runs: throughput at n nodes against n x throughput at the baseline.

Scaling efficiency = T(n) / ((n / n0) x T(n0)), where n0 is the smallest node count measured
(usually 1) and T the run's overall throughput (for ``train``: samples/s with ``stat=avg``).
Runs with the same node count are averaged. 1.0 is perfect linear scaling; the OpenShift study's
L40S pod-network runs (2.04 samples/s on 1 node, 5.46 on 8) give 5.46 / (8 x 2.04) = 0.33.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Context, Decimal

from clusterbench.errors import UsageError
from clusterbench.families.workloads.spec import SCALING_EFFICIENCY, SPEEDUP
from clusterbench.judge.compare import exact_ratio
from clusterbench.judge.stats import summarize
from clusterbench.records import COMPLETE, Measurement, Run
from clusterbench.store import Store
from clusterbench.units import fixed, whole_number


@dataclass(frozen=True)
class Point:
    group: str
    nodes: int
    ranks: int
    throughput: float
    run: int | None = None


@dataclass(frozen=True)
class ScalingRow:
    group: str
    nodes: int
    ranks: int
    runs: int
    throughput: float
    baseline_nodes: int
    baseline_throughput: float

    def _exact_speedup(self) -> Decimal | None:
        return exact_ratio(self.throughput, self.baseline_throughput)

    def _exact_efficiency(self) -> Decimal | None:
        speedup = self._exact_speedup()
        return None if speedup is None else speedup * self.baseline_nodes / self.nodes

    @property
    def speedup(self) -> float:
        exact = self._exact_speedup()
        return self.throughput / self.baseline_throughput if exact is None else float(exact)

    @property
    def efficiency(self) -> float:
        """Rounded once from the exact quotient: a speedup past the largest float over 8 nodes
        can be a finite efficiency."""
        exact = self._exact_efficiency()
        return self.speedup / (self.nodes / self.baseline_nodes) if exact is None else float(exact)

    def cells(self) -> tuple[str, str]:
        """Speedup and efficiency as the table prints them: 3 decimals in 8 and 10 columns, %g
        where the figure is too wide, and never ``inf`` for a figure past the largest float (a
        throughput of 1.7e308 over a baseline of 5e-324 is a speedup of 3.4e+631)."""
        return _cell(self._exact_speedup(), self.speedup, 8), _cell(self._exact_efficiency(), self.efficiency, 10)

    def measurements(self, benchmark: str, metric: str) -> list[Measurement]:
        p = {"group": self.group, "nodes": self.nodes, "ranks": self.ranks, "runs": self.runs,
             "metric": metric, "throughput": self.throughput, "baseline_nodes": self.baseline_nodes,
             "baseline_throughput": self.baseline_throughput}
        return [SPEEDUP(benchmark, self.speedup, p), SCALING_EFFICIENCY(benchmark, self.efficiency, p)]


def overall_value(measurements: Iterable[Measurement], metric: str) -> float | None:
    """A run's overall figure for ``metric``: its one row without a ``step`` and with ``stat=avg``.
    A run with several such rows (a sweep, e.g. infer_tp's batch sizes) has no single figure."""
    rows = [m for m in measurements
            if m.metric == metric and "step" not in m.params and m.params.get("stat", "avg") == "avg"]
    if len(rows) > 1:
        raise UsageError(f"{len(rows)} overall {metric} rows in one run (a sweep): scaling needs one per run")
    return rows[0].value if rows else None


def node_count(run: Run, by: str) -> int:
    """The run's distinct hosts (``--by nodes``; a ``nodes`` tag where the run names no host, as
    an imported log without host lines) or its ranks (``--by ranks``). A run that records neither
    is refused: counted as 1 node it was averaged into the baseline and skewed every speedup."""
    if by == "ranks":
        if run.ranks is None or run.ranks < 1:
            raise UsageError(f"run {run.id} records no rank count: cannot place it in a scaling table")
        return run.ranks
    if run.hosts:
        return len(set(run.hosts))
    if "nodes" in run.tags:
        return whole_number(run.tags["nodes"], what=f"tag nodes of run {run.id}", minimum=1)
    raise UsageError(f"run {run.id} records no hosts and has no nodes tag: its node count is unknown "
                     "(tag it when importing, --tag nodes=N, or use --by ranks)")


def point_for(group: str, run: Run, measurements: list[Measurement], metric: str, by: str) -> Point | None:
    value = overall_value(measurements, metric)
    if value is None:
        return None
    return Point(group, node_count(run, by), run.ranks or 0, value, run.id)


def _cell(exact: Decimal | None, value: float, width: int) -> str:
    if exact is None or math.isfinite(value):
        return fixed(value, width, 3)
    # past the largest float: the exact quotient in %g form, as few digits as the column needs
    for digits in range(6, 0, -1):
        text = f"{exact.normalize(Context(prec=digits)):g}"
        if len(text) <= width:
            break
    return f"{text:>{width}}"


def _mean(values: list[float]) -> float:
    """The mean without overflow: sum() of two throughputs near 1.7e308 is inf."""
    return summarize(values).mean


def scaling_table(points: list[Point], baseline: list[Point] | None = None) -> list[ScalingRow]:
    """One row per (group, node count). ``baseline``: points shared by every group (e.g. the
    single-node run that uses no network); otherwise each group's smallest node count."""
    if not points:
        raise UsageError("no runs with an overall throughput to build a scaling table from")
    groups: dict[str, dict[int, list[Point]]] = {}
    for p in [*points, *(baseline or [])]:
        # a throughput below 0 (a metric that is no rate) gives speedups below 0 that read as numbers
        if p.throughput < 0:
            raise UsageError(f"throughput {p.throughput:g} of run {p.run} ({p.group!r}, {p.nodes} nodes) is "
                             "below 0: not a rate to scale")
    for p in points:
        groups.setdefault(p.group, {}).setdefault(p.nodes, []).append(p)
    base_pair: tuple[int, float] | None = None
    if baseline:
        n0 = min(p.nodes for p in baseline)
        vals = [p.throughput for p in baseline if p.nodes == n0]
        base_pair = (n0, _mean(vals))
    rows = []
    for group, by_n in groups.items():
        if base_pair is not None:
            n0, t0 = base_pair
        else:
            n0 = min(by_n)
            t0 = _mean([p.throughput for p in by_n[n0]])
        if t0 <= 0:
            raise UsageError(f"baseline throughput of {group!r} is {t0}: cannot scale against it")
        for n in sorted(by_n):
            ps = by_n[n]
            rows.append(ScalingRow(group, n, max(p.ranks for p in ps), len(ps),
                                   _mean([p.throughput for p in ps]), n0, t0))
    return rows


def format_table(rows: list[ScalingRow], unit: str) -> list[str]:
    lines = [f"# {'group':<24} {'nodes':>5} {'ranks':>5} {'runs':>4} {'throughput':>12} {'speedup':>8} "
             f"{'efficiency':>10}", f"# throughput in {unit}; efficiency = T(n) / ((n/n0) x T(n0))"]
    for r in rows:
        lines.append(f"  {r.group:<24} {r.nodes:>5} {r.ranks:>5} {r.runs:>4} {r.throughput:>12.4g} "
                     f"{' '.join(r.cells())}")
    return lines


def load_points(store: Store, selectors: Iterable[str], benchmark: str, metric: str, by: str,
                since: str | None = None) -> list[Point]:
    """One point per complete ``benchmark`` run of each selector (a group)."""
    points = []
    for sel in selectors:
        runs = [r for r in store.select(sel, since) if r.status == COMPLETE]
        found = store.measurements_by_run([int(r.id or 0) for r in runs])   # not a query per run
        # By what a run measured, not by the command that stored it: an imported log's run is
        # ``import`` and a suite's ``suite``, and neither matched ``r.benchmark == benchmark``.
        measured = [(run, ms) for run in runs
                    if (ms := [m for m in found[int(run.id or 0)] if m.benchmark == benchmark])]
        if not measured:
            raise UsageError(f"selector {sel!r} matches no complete {benchmark} run")
        for run, ms in measured:
            p = point_for(sel, run, ms, metric, by)
            if p is None:
                raise UsageError(f"run {run.id} has no overall {metric}")
            points.append(p)
    return points


def stored_scaling(db: str | os.PathLike[str] | None, selectors: Iterable[str], baseline: str | None,
                   benchmark: str, metric: str, by: str, since: str | None = None) -> list[ScalingRow]:
    """The scaling table of the complete ``benchmark`` runs each selector picks in ``db`` (a
    group each; a selector given twice is one group), against the smallest node count of
    ``baseline``'s runs where given."""
    with Store.open_to_read(db) as store:
        # a selector given twice is one group, not each run counted twice
        points = load_points(store, dict.fromkeys(selectors), benchmark, metric, by, since)
        # `is not None`: an empty --baseline is a selector the store refuses, not "no baseline"
        base = load_points(store, (baseline,), benchmark, metric, by, since) if baseline is not None else None
    return scaling_table(points, base)
