"""What a benchmark family declares once, and the table every family's renderer shares.

A ``Family`` names the ``benchmark`` values it owns, the metrics it records (unit, which
direction is better, whether it is a headline figure, whether it is a performance figure at
all), the params that identify a row, the command that measures it, how reports plot it and the
terminal table that prints it. Judge, compare, baseline, sweep, report and the importers ask the
registry (``clusterbench.families``) instead of naming families or metrics themselves.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from clusterbench.records import Measurement, Params, Run
from clusterbench.units import compact, fit, fixed

# Stats that say how a row's iterations spread, not how fast it ran (sample standard deviation,
# median absolute deviation, the first timed iteration): the noise check (judge/noise.py) reads
# them; compare and the degraded-node search leave them out.
SPREAD_STATS = frozenset({"stddev", "mad", "first"})

# Params that say where a value was measured (which host, GPU, rank), not what was measured: two
# values that differ only in these are samples of the same row (compare, baselines, outliers).
# ``memory`` (stream: whether a size's arrays fit the host's cache) follows from the host's cache
# and the row's size: the same row on a host with another cache, or stored before the label
# existed, is the same row.
IDENTITY_PARAMS = frozenset({"host", "rank", "device", "pid", "hostname", "node", "local_rank", "memory"})

def is_integer_dtype(dtype: object) -> bool:
    """int8, uint8, int32, ... (every family spells its integer dtypes so); not fp8 or bf16."""
    return isinstance(dtype, str) and dtype.strip().lower().startswith(("int", "uint"))


# How a change of a metric is said (judge/compare.py): "speed" (faster, slower), "count" (more,
# fewer) or "level" (higher, lower). A metric that leaves it empty gets the word its unit implies.
SPEED, COUNT, LEVEL = "speed", "count", "level"
WORDINGS = (SPEED, COUNT, LEVEL)


@dataclass(frozen=True)
class Metric:
    """One metric of a family. Calling it makes a measurement: ``BUSBW(op, 41.2, params)``."""

    name: str
    unit: str
    higher_is_better: bool = True
    headline: bool = False      # the figure a family is judged by (baselines, sweeps, trends)
    judged: bool = True         # a performance figure; False for counts and checks (#wrong)
    peak: str = ""              # the datasheet peak it can be held against: memory_bandwidth, dense_tflops
    link_bound: bool = False    # bounded by the network link: its optimum is in judge.theory
    about: str = ""
    # How its rows describe the spread of one row's iterations (judge/noise.py): "stat": rows with a
    # ``stat`` param (min/best, max, avg, median, stddev, mad, first, p99) summarise the iteration
    # times of the row; "cv_pct": the value is their coefficient of variation in percent.
    spread: str = ""
    # Its records are there for the noise check only (per-iteration statistics beside the row's
    # own time, nccl-tests' i_* columns): compare and the degraded-node search leave them all out.
    noise_only: bool = False
    # Another metric of the family that says the same thing about the same row (busbw = algbw x
    # the op's factor = size x factor / time): summaries that show that one fold this one away.
    redundant_with: str = ""
    # How a change of it is said, one of WORDINGS; empty: as its unit implies. A time that is not
    # how long some work took (jitter: the spread of arrival times) is no speed: "level".
    wording: str = ""
    # A count of faults (wrong elements): compared as a count, never t-tested (judge/compare.py)
    fault_count: bool = False
    # The unit of its records of an integer dtype, where ``unit`` counts floating-point
    # operations: an int8 GEMM does TOP/s, not TFLOP/s (``unit_for``)
    integer_unit: str = ""

    def __post_init__(self) -> None:
        # A misspelt word would silently fall back to the unit's: the registry is checked at import.
        if self.wording and self.wording not in WORDINGS:
            raise ValueError(f"metric {self.name}: wording {self.wording!r} is not one of {', '.join(WORDINGS)}")

    def __call__(self, benchmark: str, value: float, params: Params) -> Measurement:
        return Measurement(benchmark, self.name, value, self.unit_for(params), params)

    def unit_for(self, params: Params) -> str:
        """The unit of its record with these params: ``integer_unit`` for an integer dtype."""
        return self.integer_unit if self.integer_unit and is_integer_dtype(params.get("dtype")) else self.unit

    def describes_spread(self, params: Params) -> bool:
        """A row saying how the iterations spread (``stat`` stddev, mad or first, or any record of a
        ``noise_only`` metric), not how fast."""
        return self.noise_only or (self.spread == "stat" and params.get("stat") in SPREAD_STATS)


class Renderer(Protocol):
    """Lines of a terminal table from records, the same live and for a stored run. A renderer
    whose class sets ``notes_after_table = True`` gets its benchmark's notes after its footer
    instead of after its header (report/terminal.py)."""

    def header(self, run: Run) -> list[str]: ...

    def rows(self, measurements: list[Measurement]) -> list[str]: ...

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]: ...


@dataclass(frozen=True)
class Figure:
    """How a report plots a family.

    ``size_curve``: each metric against the size param ``x`` on a log axis, a line per group (and
    per value of ``split``); ``matrix``: a src x dst heatmap of the metric per value of ``split``
    (the rows that have every ``select`` param value and none of ``skip``); ``bars``: the metric
    per row (named by the family's ``label``), or lines against ``x`` when it takes several values.
    """

    kind: str
    metrics: tuple[str, ...]
    x: str = ""
    x_label: str = ""
    split: tuple[str, ...] = ()
    select: dict[str, str] = field(default_factory=dict)
    skip: dict[str, tuple[str, ...]] = field(default_factory=dict)
    title: str = ""


@dataclass(frozen=True)
class Family:
    name: str
    title: str                                   # section title in reports
    benchmarks: tuple[str, ...]                  # the measurement.benchmark values it owns
    metrics: tuple[Metric, ...]
    row_params: tuple[str, ...] = ()             # params that identify a row, in table order
    renderer: Callable[[str], Renderer] | None = None   # benchmark -> its table (None: generic)
    commands: tuple[str, ...] = ()               # CLI commands that measure it
    prefixes: tuple[str, ...] = ()               # benchmarks named by a tool's program (osu_*)
    aliases: dict[str, str] = field(default_factory=dict)  # other spellings -> benchmark
    figure: Figure | None = None
    # The collective whose optimal algbw bounds its link-bound metrics (None: the benchmark itself)
    link_op: str | None = None
    # A row's short name in summaries (``Triad``, ``fp16 8192x8192x8192``); default: its row params
    describe: Callable[[Params], str] | None = None

    def row_label(self, params: Params) -> str:
        if self.describe is not None:
            return self.describe(params)
        return " ".join(str(params[k]) for k in self.row_params if k in params and k not in IDENTITY_PARAMS)

    def label(self, benchmark: str, params: Params) -> str:
        return f"{benchmark} {self.row_label(params)}".rstrip()

    def owns(self, benchmark: str) -> bool:
        return benchmark in self.benchmarks or benchmark.startswith(self.prefixes or ("\0",))

    def metric(self, name: str) -> Metric | None:
        for m in self.metrics:
            if m.name == name:
                return m
        return None

    @property
    def headline(self) -> Metric | None:
        return next((m for m in self.metrics if m.headline), None)


def iteration_stats(times: Sequence[float]) -> dict[str, float]:
    """What a benchmark records about one row's per-iteration ``times`` for the noise check (as
    ``stat`` rows of a metric with ``spread="stat"``): min, max, avg, median, mad (median absolute
    deviation), first and, from two iterations, stddev (sample standard deviation)."""
    xs = list(times)
    if not xs:
        return {}
    median = statistics.median(xs)
    out = {"min": min(xs), "max": max(xs), "avg": statistics.fmean(xs), "median": median,
           "mad": statistics.median(abs(x - median) for x in xs), "first": xs[0]}
    if len(xs) > 1:
        out["stddev"] = statistics.stdev(xs)
    return out


def param_text(value: object, missing: str = "?") -> str:
    """A param as a table cell: ``missing`` where a row lacks it. Tables print stored and imported
    rows too, whose params may be missing or of another type than a native run writes."""
    return missing if value is None else str(value)


def whole(value: object, default: int = 1) -> int:
    """A param that should be a whole number (a device count), or ``default`` when it is not."""
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return default


def number(value: object, default: float = 0.0) -> float:
    """A param that should be a number, or ``default`` when it is not."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return default


def significant(value: float, width: int, decimals: int) -> str:
    """``fixed(value, width, decimals)``, or where those decimals would print a nonzero value as
    0 (0.000393 GB/s in a %10.3f column), %g with 3 significant digits: a nonzero value never
    reads as 0 in a table."""
    text = fixed(value, width, decimals)
    return fit(f"{value:{width}.3g}", value, width) if _shows_zero(value, text) else text


def text_value(value: float, decimals: int = 2) -> str:
    """A value in running text (``compact``), with 3 significant digits where its decimals would
    print a nonzero value as 0."""
    text = compact(value, decimals)
    return f"{value:.3g}" if _shows_zero(value, text) else text


def _shows_zero(value: float, text: str) -> bool:
    """Whether ``text`` shows the nonzero, finite ``value`` as 0."""
    try:
        return value != 0 and math.isfinite(value) and float(text) == 0
    except ValueError:   # text that is no float literal shows no 0 either
        return False


def varying(params: Sequence[Params], shown: Iterable[str]) -> list[str]:
    """The params, other than ``shown`` (the table's columns) and the identity params a column
    already names, whose values differ between ``params``: what a table must add to a row for
    two rows not to read the same (``side=sender``, ``timing=cpu``). In first-seen order."""
    skip = set(shown)
    keys = list(dict.fromkeys(k for p in params for k in p if k not in skip))
    return [k for k in keys if len({str(p.get(k)) for p in params}) > 1]


def param_words(params: Params, keys: Iterable[str]) -> str:
    """``key=value`` for each of ``keys`` the row has, space-separated (empty: none)."""
    return " ".join(f"{k}={params[k]}" for k in keys if k in params)


def fmt_value(v: float) -> str:
    if not math.isfinite(v):   # int(inf) raises: a value no importer should pass still prints
        return str(v)
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.4g}" if abs(v) < 1e-3 or abs(v) >= 1e6 else f"{v:.3f}"


def run_header_lines(run: Run) -> list[str]:
    ranks = "?" if run.ranks is None else run.ranks
    lines = [f"# {run.benchmark}: {ranks} rank(s) on {len(run.hosts)} host(s)"]
    for i, dev in enumerate(run.devices):
        hosts = run.meta.get("rank_hosts") or run.hosts
        host = hosts[i] if i < len(hosts) else "?"
        lines.append(f"#  Rank {i:2d} on {host:>12s} device {dev}")
    return lines


class GenericRenderer:
    """benchmark, metric, value, unit and the params, one measurement per line."""

    def header(self, run: Run) -> list[str]:
        return run_header_lines(run)

    def rows(self, measurements: list[Measurement]) -> list[str]:
        out = []
        for m in measurements:
            params = " ".join(f"{k}={v}" for k, v in m.params.items())
            out.append(f"{m.benchmark:>16s} {m.metric:>14s} {fmt_value(m.value):>14s} {m.unit:<8s} {params}")
        return out

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]:
        return []


def generic(_benchmark: str) -> Renderer:
    return GenericRenderer()
