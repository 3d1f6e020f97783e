"""What stored runs say about a fabric and its nodes, for ``clusterbench predict``: the measured
collective curves (time per message size, per op, group and placement) and the nodes' compute
rates (GEMM TFLOP/s per shape, memory bandwidth from stream).

A curve is read at a size by interpolating linearly in log(size) and log(time) between the two
measured sizes around it: exact on both a latency-bound (flat) and a bandwidth-bound (slope 1)
stretch. A size outside the measured range is not extrapolated silently: below it the time of the
smallest size is used (a smaller message is no slower), above it the largest size's bandwidth,
and the lookup says which (``Lookup.where``).

A synchronous step runs at the pace of its slowest rank, so a node's rate is the slowest of the
hosts and devices measured (each one's median over its runs).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from clusterbench.families.collectives.spec import SPECS
from clusterbench.families.gemm.spec import BENCHMARK as GEMM
from clusterbench.families.stream.spec import BENCHMARK as STREAM
from clusterbench.records import COMPLETE, Measurement, Run
from clusterbench.units import format_size

INSIDE, BELOW, ABOVE = "inside", "below", "above"
STREAM_KERNEL = "Triad"    # two reads and a write, as most of a step's elementwise work


@dataclass(frozen=True)
class Lookup:
    seconds: float
    where: str     # inside / below / above the measured sizes


@dataclass(frozen=True)
class Curve:
    """Mean time per size of one op on one group (``ranks`` over ``nodes``; 0: not known)."""

    op: str
    ranks: int
    nodes: int
    placement: str
    dtype: str
    sizes: tuple[int, ...]
    seconds: tuple[float, ...]
    runs: tuple[int, ...]

    @property
    def span(self) -> str:
        return f"{format_size(self.sizes[0])}..{format_size(self.sizes[-1])}"

    def at(self, size: int) -> Lookup:
        xs, ys = self.sizes, self.seconds
        if size <= xs[0]:
            return Lookup(ys[0], INSIDE if size == xs[0] else BELOW)
        if size >= xs[-1]:
            return Lookup(ys[-1] * size / xs[-1], INSIDE if size == xs[-1] else ABOVE)
        i = next(j for j in range(1, len(xs)) if xs[j] >= size)
        x0, x1, y0, y1 = math.log(xs[i - 1]), math.log(xs[i]), math.log(ys[i - 1]), math.log(ys[i])
        return Lookup(math.exp(y0 + (y1 - y0) * (math.log(size) - x0) / (x1 - x0)), INSIDE)

    @property
    def latency_s(self) -> float:
        """The time no link speed changes: the intercept of ``t = latency + size / bandwidth``
        fitted to the curve, each point weighted by its relative error (a 2% spread at the
        largest size must not swamp a millisecond's latency), within [0, the fastest time]."""
        if len(self.sizes) < 2:
            return 0.0
        w = [1 / t ** 2 for t in self.seconds]
        sw = sum(w)
        mx = sum(wi * x for wi, x in zip(w, self.sizes, strict=True)) / sw
        my = sum(wi * y for wi, y in zip(w, self.seconds, strict=True)) / sw
        sxx = sum(wi * (x - mx) ** 2 for wi, x in zip(w, self.sizes, strict=True))
        sxy = sum(wi * (x - mx) * (y - my) for wi, x, y in zip(w, self.sizes, self.seconds, strict=True))
        slope = sxy / sxx if sxx > 0 else 0.0
        return min(max(my - slope * mx, 0.0), min(self.seconds))

    def at_link(self, factor: float) -> Curve:
        """The curve over a link ``factor`` times slower (``measured rate / new rate``), with the
        measured efficiency: what each size takes beyond the fitted latency scales with the link,
        the latency does not. (The smallest size's time is no latency floor on a slow link: 256
        KiB at 100 Mbit/s is 21 ms of wire time, which a 1 Gbit/s link does not keep.)"""
        floor = self.latency_s
        return replace(self, seconds=tuple(floor + (t - floor) * factor for t in self.seconds))


def _time_rows(ms: Iterable[Measurement]) -> list[Measurement]:
    """A collective run's per-size times: ``time_us`` rows without a ``stat`` (those are the
    spread of the iterations, for the noise check)."""
    return [m for m in ms if m.benchmark in SPECS and m.metric == "time_us" and "stat" not in m.params
            and isinstance(m.params.get("bytes"), int) and m.params["bytes"] > 0 and m.value > 0]


def run_nodes(run: Run) -> int:
    """Distinct hosts of a run; 0 where it names none (an imported log)."""
    return len(set(run.hosts))


def curves_of(runs: Iterable[tuple[Run, list[Measurement]]]) -> list[Curve]:
    """One curve per (op, ranks, nodes, placement, dtype), the mean over runs at each size."""
    by_key: dict[tuple[str, int, int, str, str], dict[int, list[float]]] = {}
    sources: dict[tuple[str, int, int, str, str], set[int]] = {}
    for run, ms in runs:
        if run.status != COMPLETE:
            continue
        for m in _time_rows(ms):
            ranks = m.params.get("ranks") or run.ranks
            key = (m.benchmark, int(ranks), run_nodes(run), str(m.params.get("placement", "in")),
                   str(m.params.get("dtype", "float")))
            by_key.setdefault(key, {}).setdefault(m.params["bytes"], []).append(m.value * 1e-6)
            sources.setdefault(key, set()).add(int(run.id or 0))
    out = []
    for key, points in sorted(by_key.items()):
        sizes = sorted(points)
        out.append(Curve(*key, tuple(sizes), tuple(statistics.fmean(points[s]) for s in sizes),
                         tuple(sorted(sources[key]))))
    return out


@dataclass(frozen=True)
class Choice:
    curve: Curve
    caveats: tuple[str, ...] = ()


def choose_curve(curves: list[Curve], op: str, ranks: int, nodes: int, placement: str, dtype: str) -> Choice | None:
    """The curve measured closest to how the step issues ``op``: the same op and group size,
    then the same node count, placement and dtype where measured; what differs is said."""
    same = [c for c in curves if c.op == op and c.ranks == ranks]
    if not same:
        return None

    def rank(c: Curve) -> tuple[bool, bool, bool, int]:
        return (c.nodes not in (nodes, 0), c.placement != placement, c.dtype != dtype, -len(c.sizes))

    best = min(same, key=rank)
    caveats = []
    if best.nodes not in (nodes, 0):
        caveats.append(f"{op} on {ranks} ranks was measured over {best.nodes} node(s), the layout spans {nodes}")
    if best.placement != placement:
        caveats.append(f"{op} is issued {placement}-place, measured {best.placement}-place")
    if best.dtype != dtype:
        caveats.append(f"{op} moves {dtype}, measured with {best.dtype}")
    return Choice(best, tuple(caveats))


# -- the nodes' compute rates ---------------------------------------------------------------------

@dataclass(frozen=True)
class GemmPoint:
    m: int
    n: int
    k: int
    dtype: str
    tflops: float       # the slowest host's median at this shape and dtype
    where: str          # that host and device


@dataclass(frozen=True)
class StepPoint:
    """A one-rank ``train`` run's step: the node's compute for that model and batch, measured
    with no network."""

    shape: tuple[tuple[str, int], ...]    # the model's shape, as ``ModelShape.to_dict`` items
    batch: int
    dtype: str
    seconds: float       # the slowest host's median
    where: str
    runs: tuple[int, ...]


@dataclass
class NodeRates:
    """GEMM rates per shape and dtype, memory bandwidth, one-rank steps, and what the nodes are."""

    gemm: list[GemmPoint] = field(default_factory=list)
    steps: list[StepPoint] = field(default_factory=list)
    bandwidth_gbs: float | None = None     # stream Triad, the slowest host's median
    bandwidth_where: str = ""
    cpu: bool = True                       # CPU ranks (gloo), else GPUs
    device_name: str | None = None
    runs: tuple[int, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.gemm and not self.steps

    def step_for(self, shape: dict[str, int], batch: int, dtype: str) -> StepPoint | None:
        key = tuple(sorted(shape.items()))
        return next((p for p in self.steps if (p.shape, p.batch, p.dtype) == (key, batch, dtype)), None)

    def gemm_for(self, m: int, n: int, k: int, dtype: str) -> GemmPoint | None:
        """The measured shape nearest to m x n x k (log distance) in ``dtype``."""
        points = [p for p in self.gemm if p.dtype == dtype]
        if not points:
            return None
        return min(points, key=lambda p: abs(math.log(p.m / m)) + abs(math.log(p.n / n)) + abs(math.log(p.k / k)))


def _host(run: Run) -> str:
    return run.hosts[0] if run.hosts else ""


def _device_name(run: Run, label: str) -> str | None:
    names = run.meta.get("device_names")
    if isinstance(names, dict) and names.get(label):
        return str(names[label])
    return run.devices[0] if run.devices else None


def node_rates(runs: Iterable[tuple[Run, list[Measurement]]]) -> NodeRates:
    """The gemm and stream runs' rates: per (host, device), the median over runs; per shape the
    slowest of them."""
    gemm: dict[tuple[int, int, int, str], dict[str, list[float]]] = {}
    stream: dict[str, list[float]] = {}
    steps: dict[tuple[Any, ...], dict[str, list[float]]] = {}
    step_runs: dict[tuple[Any, ...], set[int]] = {}
    out = NodeRates()
    ids: set[int] = set()
    for run, ms in runs:
        if run.status != COMPLETE:
            continue
        one = _one_rank_step(run, ms)
        if one is not None:
            steps.setdefault(one[0], {}).setdefault(_host(run), []).append(one[1])
            step_runs.setdefault(one[0], set()).add(int(run.id or 0))
            continue
        for m in ms:
            device = str(m.params.get("device", ""))
            if device == "all":     # the sum over devices that ran at once
                continue
            where = " ".join(x for x in (_host(run), device) if x)
            if m.benchmark == GEMM and m.metric == "tflops" and m.params.get("stat") == "median" \
                    and int(m.params.get("batch", 1)) == 1:
                key = (int(m.params["m"]), int(m.params["n"]), int(m.params["k"]), str(m.params["dtype"]))
                gemm.setdefault(key, {}).setdefault(where, []).append(m.value)
                out.cpu = device == "cpu"
                out.device_name = out.device_name or _device_name(run, device)
                ids.add(int(run.id or 0))
            elif m.benchmark == STREAM and m.metric == "bandwidth" and m.params.get("kernel") == STREAM_KERNEL:
                stream.setdefault(where, []).append(m.value)
                ids.add(int(run.id or 0))
    for (m_, n, k, dtype), per in sorted(gemm.items()):
        where, rate = min(((w, statistics.median(v)) for w, v in per.items()), key=lambda wv: wv[1])
        out.gemm.append(GemmPoint(m_, n, k, dtype, rate, where))
    for key, per in steps.items():
        where, seconds = max(((w, statistics.median(v)) for w, v in per.items()), key=lambda wv: wv[1])
        out.steps.append(StepPoint(*key, seconds, where, tuple(sorted(step_runs[key]))))
    if stream:
        out.bandwidth_where, out.bandwidth_gbs = min(((w, statistics.median(v)) for w, v in stream.items()),
                                                     key=lambda wv: wv[1])
    out.runs = tuple(sorted(ids))
    return out


def _one_rank_step(run: Run, ms: list[Measurement]) -> tuple[tuple[Any, ...], float] | None:
    """(shape, batch, dtype) and the overall step time of a one-rank ``train`` run."""
    train = run.meta.get("train")
    if run.ranks != 1 or not isinstance(train, dict) or not isinstance(train.get("shape"), dict):
        return None
    step = next((m for m in ms if m.benchmark == "train" and m.metric == "step_time_ms" and "step" not in m.params
                 and m.params.get("stat") == "avg"), None)
    if step is None:
        return None
    try:
        key = (tuple(sorted((str(k), int(v)) for k, v in train["shape"].items())), int(train["batch"]),
               str(train["dtype"]))
    except (KeyError, TypeError, ValueError):
        return None
    return key, step.value / 1e3


def link_of(runs: Iterable[tuple[Run, list[Measurement]]]) -> set[str]:
    """The ``link_speed`` tags of the runs that measured collectives."""
    return {run.tags["link_speed"] for run, ms in runs if run.tags.get("link_speed") and _time_rows(ms)}
