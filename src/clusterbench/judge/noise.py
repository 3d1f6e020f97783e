"""Noise inside one run, said at once, like hyperfine's warnings: a row whose iterations spread
far, or whose first iterations are much slower than the rest, gets a ``# warning:`` line that
says what to do.

The check reads records only: the per-row statistics a family declares with ``Metric.spread``
(``stat`` min/best, max, avg, median, stddev, mad, first of the iteration times, or a CV in
percent). Native stream and gemm runs record them, so do imported BabelStream logs (min, max,
avg) and nccl-tests logs with per-iteration columns (``iter_time_us`` min/max/p99,
``iter_cv_pct``), and native collective runs on gloo (``iter_time_us``, the slowest rank's
per-op times; NCCL/RCCL rows time the ``-n`` ops as one and carry none).

Per row, with the statistics it has (thresholds in docs/metrics.md):

* slow first iteration: the first timed iteration's modified z-score ``(first - median) / MAD``
  is above hyperfine's outlier threshold, 1.4826 x 10 (its ``SlowInitialRun`` warning, after
  Iglewicz and Hoaglin), and it is at least 10% above the median;
* spread: the slowest iteration is at least twice the fastest, or the CV (stddev / mean) is
  above 10% (compare's ``--max-cv``), or the slowest iteration is an outlier by the same
  modified z-score (hyperfine's ``OutliersDetected``) and at least 10% above the median.

Each benchmark gets at most one warning per kind, naming how many rows and the worst one, stored
with the run; a command prints them all as one block (``summary_lines``) with one piece of
advice that fits: inside ``--repeat`` it does not advise repeating the run.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterbench.families import family_of, metric_of
from clusterbench.judge.params_text import ParamsText
from clusterbench.records import NOISE, Measurement, Run
from clusterbench.units import compact, format_size

SPREAD_RATIO = 2.0            # slowest / fastest iteration
CV_LIMIT = 0.10               # stddev / mean; compare's --max-cv default
OUTLIER_Z = 1.4826 * 10.0     # hyperfine's OUTLIER_THRESHOLD (modified z-score via the MAD)
MIN_EXCESS = 0.10             # an outlier must also be this far above the median

FIRST, SPREAD = "first", "spread"
_ALIASES = {"best": "min", "mean": "avg", "stdev": "stddev", "std": "stddev", "p50": "median"}


@dataclass(slots=True)
class RowStats:
    """The iteration statistics of one row (a night's report makes 100,000: a plain slotted
    class, its label written only where a warning names the row)."""

    benchmark: str
    stats: dict[str, float]
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return _label(self.benchmark, self.params)

    def get(self, name: str) -> float | None:
        return self.stats.get(name)


@dataclass(frozen=True)
class NoiseWarning:
    benchmark: str
    kind: str                   # FIRST | SPREAD
    rows: int                   # rows flagged
    checked: int                # rows with iteration statistics
    worst: str                  # the worst row and what is wrong with it
    text: str = field(default="")
    severity: float = 0.0       # how bad the worst row is (slowest / fastest, first / median): ranks warnings

    @property
    def advice(self) -> str:
        """What the stored text advises (after its last "): "), "" where it says nothing."""
        head, sep, tail = self.text.rpartition("): ")
        return tail if sep else ""

    def line(self) -> str:
        return f"# warning: {self.text}"

    def to_stored(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "kind": self.kind, "rows": self.rows,
                "checked": self.checked, "worst": self.worst, "text": self.text, "severity": self.severity}

    @classmethod
    def from_stored(cls, d: dict[str, Any]) -> NoiseWarning:
        severity = d.get("severity", 0.0)   # runs stored before it have none
        return cls(str(d.get("benchmark", "")), str(d.get("kind", "")), int(d.get("rows", 0)),
                   int(d.get("checked", 0)), str(d.get("worst", "")), str(d.get("text", "")),
                   float(severity) if isinstance(severity, (int, float)) else 0.0)


def _label(benchmark: str, params: dict[str, Any]) -> str:
    family = family_of(benchmark)
    keys = family.row_params if family else tuple(params)
    shown = [str(params[k]) for k in keys if k in params and k != "stat"]
    return " ".join(shown) or benchmark


def _value_text(v: Any) -> object:
    """What tells a param's values apart as their JSON would, without writing it for the common
    ones: a text or a whole number (not a bool) has one JSON spelling per value."""
    if type(v) is str or type(v) is int:
        return type(v), v
    return json.dumps(v, default=str)


def _labels(rows: list[RowStats]) -> dict[int, str]:
    """Each row named by the params that tell it from the benchmark's other rows (``bytes=2K
    placement=in``; ``count`` restates bytes), so the worst row is found in its table; a single
    row by its family's row params."""
    keys = [k for k in dict.fromkeys(k for r in rows for k in r.params)
            if len({_value_text(r.params.get(k)) for r in rows}) > 1]
    if "bytes" in keys and "count" in keys:
        keys.remove("count")
    if not keys:
        return {id(r): r.label for r in rows}
    out = {}
    for r in rows:
        shown = []
        for k in keys:
            v = r.params.get(k)
            if v is not None:
                shown.append(f"{k}={format_size(v) if k == 'bytes' and isinstance(v, int) else v}")
        out[id(r)] = " ".join(shown) or r.label
    return out


def row_stats(measurements: Iterable[Measurement]) -> list[RowStats]:
    """The iteration statistics of every row that has some, in first-seen order."""
    rows: dict[tuple[str, str], tuple[dict[str, Any], dict[str, float]]] = {}
    text = ParamsText({"stat"})   # a row's min, max and avg records share their params' text
    metrics: dict[tuple[str, str], Any] = {}   # a run's few dozen (benchmark, metric), looked up once
    for m in measurements:
        bm = (m.benchmark, m.metric)
        metric = metrics.get(bm, bm)
        if metric is bm:
            metric = metrics[bm] = metric_of(*bm)
        if metric is None or not metric.spread:
            continue
        key = (m.benchmark, text.key(m.params))
        found = rows.get(key)
        if found is None:
            found = rows[key] = (text.kept(m.params), {})
        stats = found[1]
        if metric.spread == "cv_pct":
            stats["cv"] = m.value / 100.0
        else:
            stat = str(m.params.get("stat", ""))
            stats[_ALIASES.get(stat, stat)] = m.value
    return [RowStats(bench, stats, params) for (bench, _), (params, stats) in rows.items()]


def _z(x: float, median: float, mad: float) -> float:
    """Modified z-score as hyperfine computes it: (x - median) / MAD, MAD 0 taken as tiny."""
    return (x - median) / (mad if mad > 0 else 1e-300)


def first_slow(s: RowStats) -> float | None:
    """first / median when the first iteration is an outlier above the median, else None."""
    first, median, mad = s.get("first"), s.get("median"), s.get("mad")
    if first is None or median is None or mad is None or median <= 0:
        return None
    if first >= median * (1 + MIN_EXCESS) and _z(first, median, mad) > OUTLIER_Z:
        return first / median
    return None


def spread_reasons(s: RowStats) -> list[str]:
    """What says this row's iterations spread too far, worst first; [] when nothing does."""
    lo, hi, med, mad = s.get("min"), s.get("max"), s.get("median"), s.get("mad")
    out = []
    if lo and hi is not None and lo > 0 and hi / lo >= SPREAD_RATIO:
        out.append(f"slowest iteration {compact(hi / lo, 1)}x the fastest")
    cv = s.get("cv")
    if cv is None and s.get("stddev") is not None and s.get("avg"):
        cv = s.stats["stddev"] / s.stats["avg"]
    if cv is not None and cv > CV_LIMIT:
        out.append(f"CV {compact(cv * 100, 0)}%")
    if not out and hi is not None and med and mad is not None and hi >= med * (1 + MIN_EXCESS) \
            and _z(hi, med, mad) > OUTLIER_Z:
        out.append(f"slowest iteration an outlier, {compact(hi / med)}x the median")
    return out


def _severity(s: RowStats) -> float:
    lo, hi = s.get("min"), s.get("max")
    ratio = hi / lo if lo and hi is not None and lo > 0 else 1.0
    cv = s.get("cv") or ((s.get("stddev") or 0) / s.stats["avg"] if s.get("avg") else 0.0)
    return max(ratio, 1 + cv)


# The advice per kind; inside --repeat the run is being repeated already.
WARM_UP = "warm up longer (more warm-up iterations) before timing"
LOAD = "check for other load on the hosts and devices, run more iterations, or --repeat the run and compare"
LOAD_REPEATING = ("check for other load on the hosts and devices, or run more iterations; the summary "
                  "of the repetitions says how far the runs spread")


def advice(kinds: Iterable[str], repeating: bool = False) -> str:
    """One piece of advice for warnings of these kinds: spread between iterations (other load,
    the usual cause, slows the first iteration too) before a slow first iteration alone."""
    kinds = set(kinds)
    if SPREAD in kinds:
        return LOAD_REPEATING if repeating else LOAD
    return WARM_UP if FIRST in kinds else ""


def check(measurements: Sequence[Measurement], repeating: bool = False,
          stats: list[RowStats] | None = None) -> list[NoiseWarning]:
    """The warnings of a run (or of one table's rows): per benchmark, one per kind; ``repeating``:
    the run is one of a ``--repeat`` (its advice does not say to repeat it); ``stats``: the
    measurements' ``row_stats``, where the caller has them already."""
    by_bench: dict[str, list[RowStats]] = {}
    for s in row_stats(measurements) if stats is None else stats:
        by_bench.setdefault(s.benchmark, []).append(s)
    out = []
    for bench, rows in by_bench.items():
        firsts = [(r, ratio) for r in rows if (ratio := first_slow(r)) is not None]
        spread = [(r, reasons) for r in rows if (reasons := spread_reasons(r))]
        names = _labels(rows) if firsts or spread else {}   # only where a row is named
        if firsts:
            worst, ratio = max(firsts, key=lambda x: x[1])
            what = f"{names[id(worst)]}: {compact(ratio, 1)}x the median"
            out.append(NoiseWarning(bench, FIRST, len(firsts), len(rows), what, (
                f"{bench}: the first iteration of {_rows(len(firsts), len(rows))} is much slower than "
                f"the rest ({what}): {WARM_UP}"), ratio))
        if spread:
            worst, reasons = max(spread, key=lambda x: _severity(x[0]))
            what = f"{names[id(worst)]}: {', '.join(reasons)}"
            out.append(NoiseWarning(bench, SPREAD, len(spread), len(rows), what, (
                f"{bench}: {_rows(len(spread), len(rows))} {'varies' if len(spread) == 1 else 'vary'} a lot "
                f"between iterations ({what}): {advice([SPREAD], repeating)}"), _severity(worst)))
    return out


def checked_rows(measurements: Iterable[Measurement]) -> int:
    """How many rows have iteration statistics: those the check could read."""
    return len(row_stats(measurements))


def _rows(n: int, of: int) -> str:
    return f"{n} of {of} rows" if of > 1 else "the row" if n == 1 else f"{n} rows"


def annotate(run: Run, measurements: Sequence[Measurement], repeating: bool = False) -> None:
    """Store the run's warnings with it (``run.meta["noise"]``), before it is saved."""
    found = check(measurements, repeating)
    if found:
        run.meta[NOISE] = [w.to_stored() for w in found]


def stored(run: Run) -> list[NoiseWarning]:
    return [NoiseWarning.from_stored(d) for d in run.meta.get(NOISE) or [] if isinstance(d, dict)]


WIDTH = 100   # the block's lines wrap here (a row's name stays whole)
_KIND_TEXT = {SPREAD: "vary a lot between iterations", FIRST: "have a first iteration much slower than the rest"}


def summary_lines(warnings: Sequence[NoiseWarning], checked: int, runs: int = 1,
                  repeating: bool = False) -> list[str]:
    """The one block a command prints for all its warnings (every benchmark, every repetition):
    per kind how many rows and in which benchmarks, the worst row, then one piece of advice that
    fits. ``checked``: the rows with iteration statistics; ``runs``: how many runs the warnings
    come from. [] without a warning."""
    if not warnings:
        return []
    where = "this run" if runs == 1 else f"the {runs} runs"
    lines = [f"# warning: noise inside {where} ({checked} row(s) with per-iteration times checked):"]
    for kind in (SPREAD, FIRST):
        mine = [w for w in warnings if w.kind == kind]
        if not mine:
            continue
        per: dict[str, list[int]] = {}
        for w in mine:
            n = per.setdefault(w.benchmark, [0, 0])
            n[0] += w.rows
            n[1] += w.checked
        worst = max(mine, key=lambda w: w.severity)
        benches = ", ".join(f"{b} {r}/{c}" if kind == SPREAD else f"{b} {r}" for b, (r, c) in per.items())
        # a suite's benchmarks make a long list: wrapped, under the line it belongs to
        lines += textwrap.wrap(f"{sum(w.rows for w in mine)} row(s) {_KIND_TEXT[kind]}: {benches}",
                               WIDTH, initial_indent="#   ", subsequent_indent="#       ",
                               break_long_words=False, break_on_hyphens=False)
        lines.append(f"#     worst: {worst.benchmark} {worst.worst}")
    lines += textwrap.wrap(f"what to do: {advice({w.kind for w in warnings}, repeating)}", WIDTH,
                           initial_indent="#   ", subsequent_indent="#       ", break_long_words=False,
                           break_on_hyphens=False)
    return lines
