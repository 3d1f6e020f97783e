"""A/B comparison of two groups of runs, row by row, with Welch's t-test and a noise guard.

Rows are grouped by (benchmark, metric, params) with identity params (host, rank, device, ...)
dropped, so ten repeated runs per side, or eight GPUs per run, become one sample per row.

A row is called different only when all of these hold, which keeps noisy small-message rows and
tiny-but-"significant" shifts from being reported as regressions:
  * both sides have at least 2 values, all finite (Welch needs a variance), in units that convert
    into each other (MB/s and GB/s are compared in A's unit; GB/s and us are not compared). Where
    neither side has any spread (values rounded on import), Welch's t is 0/0 and the exact rank
    test decides: p = 2 / C(n_a + n_b, n_a) for sides that differ (stats.separated_rank_p), so 3
    runs a side can never be called changed at 5% and 5 can;
  * neither side's coefficient of variation exceeds ``max_cv`` (10% by default): such rows are
    reported as "noisy" whatever the p-value. A side whose CV is undefined (its mean is 0) has no
    scale to call noisy against: the test alone decides it;
  * the two-sided p-value, adjusted for the rows compared at once (below), is under ``alpha``
    (0.05), and
  * the relative change of the means, (B - A) / |A|, is at least ``min_effect`` (2%).

Many rows are tested at once (a 34-size sweep in and out of place is 68 busbw rows), so some
unchanged rows would reach p < ``alpha`` by chance. ``adjust`` corrects for that: the decision
uses an adjusted p-value, Benjamini-Hochberg's (``fdr``, the default: the expected share of
false rows among those called changed stays below ``alpha``) or Holm's (``holm``: the chance of
any false row stays below ``alpha``), or the row's own (``none``). docs/judge.md has the
measurements behind the default.

The family adjusted over is the distinct measurements, not the metric columns: busbw and algbw
of a row are one number scaled and time its inverse, so counting them three times would make
the correction three times stricter for nothing. The rows of a metric the family declares
redundant with another (``redundant_with``) and that one's row for the same params are one
measurement: it counts once, by the largest p-value of its rows (so that no row's adjusted p is
below its own), and all its rows are decided by the same adjusted p-value. Every other tested row
counts once too, noisy ones included: leaving them out after looking at their spread would favour
the rest. A row with one and the same value on both sides every time is no test and is not counted.

Counts of faults (nccl-tests' #wrong, its out-of-bounds count: ``Metric.fault_count``) are no
performance and are never t-tested: B with a nonzero count in any run is worse, B with none where
A had some is better, both without is the same (``judge_counts``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any

from clusterbench.errors import UsageError
from clusterbench.families import IDENTITY_PARAMS, describes_spread, higher_is_better, metric_of
from clusterbench.families.base import COUNT, LEVEL, SPEED
from clusterbench.judge.select import Row
from clusterbench.judge.stats import (
    ADJUST_FDR,
    ADJUST_NONE,
    ADJUSTMENTS,
    RANK,
    Summary,
    WelchResult,
    adjust,
    summarize,
    welch,
)
from clusterbench.units import convert, is_time_unit, unit_scale

SAME, BETTER, WORSE, NOISY, INSUFFICIENT = "same", "better", "worse", "noisy", "insufficient"

# Benjamini-Hochberg by default: with ~5 runs a side, Holm over a 68-row sweep hides most real 5%
# changes, while BH finds them and still removes the chance rows (docs/judge.md has the counts).
DEFAULT_ADJUST = ADJUST_FDR

GroupKey = tuple[str, str, str]  # benchmark, metric, canonical JSON of params


def group_key(row: Row) -> GroupKey:
    return row.m.benchmark, row.m.metric, _params_key(row.m.params)


def _params_key(params: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in params.items() if k not in IDENTITY_PARAMS}, sort_keys=True, default=str)


class GroupKeys:
    """``group_key``, its params part made once per params dict: the records of a run read with
    shared params (``Store.measurements_by_run``) share one dict per parameter set, so a thousand
    runs' 400,000 rows are a hundred thousand JSON texts, not 400,000. Each dict is held while
    its text is, so that its ``id`` names no other."""

    def __init__(self) -> None:
        self._texts: dict[int, tuple[dict[str, Any], str]] = {}
        # the texts by the params' text and integer values besides the identity ones: the same
        # row of each host's run (a host param apart) is one JSON text made once
        self._by_values: dict[tuple[Any, ...], str] = {}

    def __call__(self, row: Row) -> GroupKey:
        params = row.m.params
        known = self._texts.get(id(params))
        if known is None or known[0] is not params:
            values = _plain_values(params)
            text = None if values is None else self._by_values.get(values)
            if text is None:
                text = _params_key(params)
                if values is not None:
                    self._by_values[values] = text
            known = self._texts[id(params)] = (params, text)
        return row.m.benchmark, row.m.metric, known[1]


def _plain_values(params: dict[str, Any]) -> tuple[Any, ...] | None:
    """(name, type, value) of each param but the identity ones, where every value is text or an
    integer (whose JSON is the same exactly when they are equal: not so 0.0 and -0.0, 1 and True);
    None otherwise."""
    out = []
    for k, v in params.items():
        if k in IDENTITY_PARAMS:
            continue
        t = type(v)
        if t is not str and t is not int:
            return None
        out.append((k, t, v))
    return tuple(out)


def common_unit(rows: Sequence[Row], prefer: str = "") -> tuple[str, list[float]] | None:
    """The rows' values in one unit: ``prefer`` (the metric's own) where they all convert to it,
    else the first row's. A run imported in MB/s beside runs in GB/s is 1000 times larger only in
    its digits. None where the units do not convert into each other (GB/s and us, an unknown unit
    or none beside another): such values cannot be judged together."""
    for unit in dict.fromkeys([prefer, rows[0].m.unit] if prefer else [rows[0].m.unit]):
        try:
            return unit, [r.m.value if r.m.unit == unit else _converted(r.m.value, r.m.unit, unit) for r in rows]
        except ValueError:
            continue
    return None


def _converted(value: float, from_unit: str, to_unit: str) -> float:
    # units.convert passes a value without a unit through unchanged: here that is no conversion
    if not from_unit or not to_unit:
        raise ValueError(f"cannot convert {from_unit!r} to {to_unit!r}")
    return convert(value, from_unit, to_unit)


def units_text(rows: Iterable[Row]) -> str:
    """The distinct units of rows as a message names them (``GB/s and us``; ``""`` as none)."""
    return " and ".join(u or "none" for u in dict.fromkeys(r.m.unit for r in rows))


def group_rows(rows: Iterable[Row], key_of: GroupKeys | None = None) -> dict[GroupKey, list[Row]]:
    """Rows by key; records of how a row's iterations spread (stddev, mad, first) are left out:
    they describe the noise of a run (judge/noise.py), not its performance."""
    key_of = key_of or GroupKeys()
    groups: dict[GroupKey, list[Row]] = {}
    for r in rows:
        if not describes_spread(r.m):
            groups.setdefault(key_of(r), []).append(r)
    return groups


@dataclass
class Comparison:
    benchmark: str
    metric: str
    params: dict[str, Any]
    unit: str
    a: Summary
    b: Summary
    test: WelchResult | None
    status: str
    verdict: str
    # The p-value the verdict was decided by: this row's own with adjust "none", else the
    # adjusted p-value of the measurement it belongs to; None without a test.
    p_adjusted: float | None = None
    adjust: str = ADJUST_NONE

    @property
    def delta_pct(self) -> float | None:
        """(B - A) / |A| in percent; None when A's mean is 0 or a mean is not finite."""
        d = relative_change(self.a.mean, self.b.mean)
        return d * 100 if d is not None and math.isfinite(d) else None

    def to_dict(self) -> dict[str, Any]:
        t = self.test
        diff = self.b.mean - self.a.mean
        return {
            "benchmark": self.benchmark, "metric": self.metric, "params": self.params, "unit": self.unit,
            "n_a": self.a.n, "mean_a": _finite(self.a.mean), "sd_a": self.a.known_sd, "cv_a": self.a.cv,
            "n_b": self.b.n, "mean_b": _finite(self.b.mean), "sd_b": self.b.known_sd, "cv_b": self.b.cv,
            "delta_pct": self.delta_pct,
            "diff": t.diff if t else _finite(diff),
            "ci95_low": t.ci_low if t else None, "ci95_high": t.ci_high if t else None,
            "p_value": t.p if t else None, "p_adjusted": self.p_adjusted, "adjust": self.adjust,
            "status": self.status, "verdict": self.verdict,
        }


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def relative_change(a: float, b: float) -> float | None:
    """(b - a) / |a|: positive when b is larger, whatever the sign of a (b / a - 1 says -50% for
    -10 -> -5); None when a is 0. Exact to rounding: b - a of -1.7e308 and 1.7e308 is no inf."""
    if not a:
        return None
    exact = _exact_change(a, b)
    return (b - a) / abs(a) if exact is None else float(exact)


def _exact_change(a: float, b: float) -> Decimal | None:
    if not (a and math.isfinite(a) and math.isfinite(b)):
        return None
    return (Decimal(b) - Decimal(a)) / abs(Decimal(a))


# A number in running text is this long at most before it switches to %g (as units.compact).
_TEXT_WIDTH = 20
_G_DIGITS = Context(prec=6)


def exact_ratio(num: float, den: float) -> Decimal | None:
    """``num / den`` in decimal arithmetic (28 significant digits): a float quotient of 1e308 by
    12.5e-9 is inf and of 5e-324 by 12.5 is 0, where the true ratio is an ordinary number to
    print. None where ``den`` is 0 or either side is not finite."""
    if not den or not (math.isfinite(num) and math.isfinite(den)):
        return None
    return Decimal(num) / Decimal(den)


def decimal_text(value: Decimal, decimals: int = 1, sign: bool = False) -> str:
    """``value`` with ``decimals`` decimals, or in %g form with 6 significant digits where that
    would be longer than 20 characters (1e309) or would read 0 for a value that is not 0
    (3.95e-323): never ``inf``, never a zero that was not measured."""
    plus = "+" if sign else ""
    text = f"{value:{plus}.{decimals}f}"
    if len(text) <= _TEXT_WIDTH and (value.is_zero() or text.strip("+-0.")):
        return text
    return f"{value.normalize(_G_DIGITS):{plus}g}"


def percent_text(num: float, den: float, decimals: int = 1, sign: bool = False) -> str:
    """``num`` in percent of ``den`` (``94.1%``, ``1.36e+309%``, ``3.95e-323%``); ``-`` where
    it is undefined (``den`` 0, a value not finite)."""
    ratio = exact_ratio(num, den)
    return "-" if ratio is None else decimal_text(ratio * 100, decimals, sign) + "%"


def change_text_pct(a: float, b: float, decimals: int = 1, sign: bool = True) -> str:
    """The relative change (b - a) / |a| in percent, computed without overflow (-1.7e308 to
    1.7e308 is +200%, 1e-300 to 1.7e308 is +1.7e+610%); ``-`` where ``a`` is 0 or not finite."""
    exact = _exact_change(a, b)
    return "-" if exact is None else decimal_text(exact * 100, decimals, sign) + "%"


def cv_percent_text(s: Summary) -> str:
    """A side's coefficient of variation in percent; ``-`` where it is undefined. The sd of values
    around a mean of 5e-324 over that mean is past the largest float, not ``inf%``."""
    return "-" if s.cv is None else percent_text(s.sd, abs(s.mean), 1)


def _p_text(p: float) -> str:
    for cut in (0.001, 0.01, 0.05):
        if p < cut:
            return f"p<{cut:g}"
    return f"p={p:.2f}"


def wording(benchmark: str, metric: str, unit: str) -> str:
    """How a change of this metric is said: ``speed`` (times and rates: faster, slower),
    ``count`` (counts and errors the family does not judge as performance, #wrong: more, fewer)
    or ``level`` (ratios, percentages, sizes: higher, lower). The family's word where it declares
    one (``Metric.wording``): a time is not always a speed, 20 us more jitter is not "slower".
    Else only a time or a rate is "faster": 5 wrong elements against 0 are not "slower"."""
    known = metric_of(benchmark, metric)
    if known is not None and known.wording:
        return known.wording
    scale = unit_scale(unit) if unit else None
    if is_time_unit(unit) or (scale is not None and scale[0] in ("rate", "flops")) \
            or unit.endswith("/s") or unit.lower().endswith("pps"):   # GB/s, tok/s, Mpps
        return SPEED
    if known is not None and not known.judged and not unit:
        return COUNT
    return LEVEL


def change_text(words: str, metric: str, up: bool, good: bool, change: str = "", against: str = "") -> str:
    """``B is 12.0% slower``, ``B has more wrong (5 against A's 0, worse)``, ``B is 3.0% higher
    (better)``: ``change`` is the size ("12.0% ") or empty, ``against`` says B's value when A's is 0."""
    if words == SPEED:
        return f"B is {change}{'faster' if good else 'slower'}" + (f" ({against})" if against else "")
    verdict = "better" if good else "worse"
    why = f" ({against}, {verdict})" if against else f" ({verdict})"
    if words == COUNT:
        return f"B has {change}{'more' if up else 'fewer'} {metric}{why}"
    return f"B is {change}{'higher' if up else 'lower'}{why}"


def judge(a: Summary, b: Summary, test: WelchResult | None, hib: bool, *, alpha: float,
          min_effect: float, max_cv: float, words: str = SPEED, metric: str = "",
          p: float | None = None, raw_p: float | None = None, method: str = ADJUST_NONE) -> tuple[str, str]:
    """Status and verdict sentence of one row. ``p`` is the p-value that decides (the adjusted
    one under ``method``; the test's own by default) and ``raw_p`` the unadjusted one it came
    from, so that a row the adjustment kept from being called changed says so."""
    if not (a.finite and b.finite):
        # An infinite value (a bandwidth from a zero time) has no mean or spread to test; nor have
        # finite values whose spread is past the largest float (1.7e308 and -1.7e308).
        infinite = " and ".join(s for s, x in (("A", a), ("B", b)) if not math.isfinite(x.mean))
        if infinite:
            return INSUFFICIENT, f"a value of {infinite} is not finite: cannot test"
        wide = " and ".join(s for s, x in (("A", a), ("B", b)) if not x.finite)
        return INSUFFICIENT, f"the spread of {wide}'s values is past the largest float: cannot test"
    rel = relative_change(a.mean, b.mean)
    if rel is not None:
        delta = rel
        change = change_text_pct(a.mean, b.mean, sign=False).lstrip("-") + " "
    else:   # any change from 0 is infinitely large relatively: the test alone decides
        delta = 0.0 if b.mean == 0 else math.copysign(math.inf, b.mean)
        change = ""
    if test is None:
        shown = change_text_pct(a.mean, b.mean) if rel is not None else f"{b.mean:+g} from 0"
        if a.n >= 2 and b.n >= 2:   # welch's difference of the means is past the largest float
            return INSUFFICIENT, f"the difference of the means is past the largest float: cannot test (delta {shown})"
        return INSUFFICIENT, f"n={a.n} vs {b.n}: need 2+ values per side to test (delta {shown})"
    # Only a defined CV can call a row noisy: a mean of 0 gives no scale to judge the spread by.
    sides = [s for s in (a, b) if s.cv is not None]
    noisy = max(sides, key=lambda s: s.cv or 0.0, default=None)
    if noisy is not None and (noisy.cv or 0.0) > max_cv:
        return NOISY, f"too noisy to call (CV {percent_text(noisy.sd, abs(noisy.mean), 0)})"
    decide = test.p if p is None else p
    raw = test.p if raw_p is None else raw_p
    adjusted = method != ADJUST_NONE
    rank = test.method == RANK and delta != 0
    if decide >= alpha or abs(delta) < min_effect:
        if rank and raw >= alpha and abs(delta) >= min_effect:
            # The sides do not overlap, yet so few runs cannot show it: say that more runs would.
            return SAME, (f"no significant difference: no spread on either side, and the rank test of "
                          f"n={a.n} vs {b.n} gives p={raw:.2g} at best (more runs needed)")
        if adjusted and raw < alpha <= decide and abs(delta) >= min_effect:
            # Without the adjustment this row would be called changed: an operator should see why not.
            return SAME, (f"no significant difference after {method} adjustment "
                          f"(p={raw:.2g}, adjusted {decide:.2g})")
        return SAME, "no significant difference"
    good = (delta > 0) == hib  # for times and latencies a rise is the bad direction
    against = "" if a.mean else f"{b.mean:g} against A's 0"
    said = change_text(words, metric, delta > 0, good, change, against)
    how = " (rank test: no spread on either side)" if rank else ""
    return (BETTER if good else WORSE), f"{said}, {'adj. ' if adjusted else ''}{_p_text(decide)}{how}"


def is_fault_count(benchmark: str, metric: str) -> bool:
    known = metric_of(benchmark, metric)
    return known is not None and known.fault_count


def _runs_with_some(values: Sequence[float]) -> str:
    some = [v for v in values if v]
    if not some:
        return "none"
    return f"{max(some):g} at most, in {len(some)} of {len(values)} run(s)"


def judge_counts(metric: str, va: Sequence[float], vb: Sequence[float]) -> tuple[str, str]:
    """Status and verdict of a count of faults (wrong elements): any nonzero count on B is a
    fault B has, whatever A had; no test, no p-value (a t-test of 0, 0, 5 against 0, 0, 0 would
    call five wrong elements "no significant difference")."""
    if any(vb):
        return WORSE, f"B has {metric} ({_runs_with_some(vb)}; A: {_runs_with_some(va)}): counted, not tested"
    if any(va):
        return BETTER, f"B has no {metric} (A: {_runs_with_some(va)}): counted, not tested"
    return SAME, f"no {metric} on either side: counted, not tested"


def constant(a: Summary, b: Summary) -> bool:
    """Both sides one and the same value every time (nccl-tests' #wrong, 0 in every run): its p
    of 1 is certain whatever else changed, so it is no hypothesis and counting it would only make
    the adjustment stricter for the rows that can change."""
    return a.sd == 0 and b.sd == 0 and a.mean == b.mean and a.finite


def measurement_of(key: GroupKey) -> GroupKey:
    """The measurement a row reports: for a metric the family declares redundant with another
    (algbw and time_us with busbw), that one's key, so the three rows of one nccl-tests line
    share a key; else the row's own."""
    bench, metric, params = key
    m = metric_of(bench, metric)
    return (bench, m.redundant_with, params) if m is not None and m.redundant_with else key


def representatives(tested: set[GroupKey]) -> dict[GroupKey, GroupKey]:
    """Measurement -> the tested row whose p-value stands for it: the headline (busbw) where it
    was tested, else another of its rows (time, where busbw printed 0.01 GB/s in every run)."""
    reps: dict[GroupKey, GroupKey] = {}
    for k in sorted(tested, key=lambda k: (measurement_of(k) != k, k)):   # headline rows first
        reps.setdefault(measurement_of(k), k)
    return reps


def compare(rows_a: list[Row], rows_b: list[Row], *, alpha: float = 0.05, min_effect: float = 0.02,
            max_cv: float = 0.10, adjust_by: str = DEFAULT_ADJUST, key_of: GroupKeys | None = None
            ) -> list[Comparison]:
    """``key_of``: the group keys' cache, where the caller groups the same rows again."""
    if adjust_by not in ADJUSTMENTS:
        raise UsageError(f"unknown adjustment {adjust_by!r}: one of {', '.join(ADJUSTMENTS)}")
    key_of = key_of or GroupKeys()
    ga, gb = group_rows(rows_a, key_of), group_rows(rows_b, key_of)
    shared = [k for k in ga if k in gb]
    if not shared:
        raise UsageError("the two selections share no (benchmark, metric, params) to compare")
    measured: dict[GroupKey, tuple[Summary, Summary, WelchResult | None]] = {}
    units: dict[GroupKey, str] = {}
    mixed: dict[GroupKey, str] = {}   # rows whose units do not convert: never tested
    counts: dict[GroupKey, tuple[list[float], list[float]]] = {}   # counts of faults: never tested
    for key in shared:
        both = common_unit(ga[key] + gb[key])
        if both is None:
            mixed[key] = units_text(ga[key] + gb[key])
            va, vb = [r.m.value for r in ga[key]], [r.m.value for r in gb[key]]
            units[key] = ga[key][0].m.unit
            measured[key] = (summarize(va), summarize(vb), None)
            continue
        units[key], values = both
        va, vb = values[:len(ga[key])], values[len(ga[key]):]
        if is_fault_count(key[0], key[1]):
            counts[key] = (va, vb)
            measured[key] = (summarize(va), summarize(vb), None)
            continue
        measured[key] = (summarize(va), summarize(vb), welch(va, vb))
    tested = {k for k, (sa, sb, t) in measured.items() if t is not None and not constant(sa, sb)}
    family = sorted(representatives(tested))   # each measurement once, whatever its metric columns
    # A measurement's p-value is the largest of its rows' own: busbw's and algbw's are one test
    # (a scale), time's (of the inverse) can be a little larger, and an adjusted p below the p a
    # row prints beside it would read as the adjustment making that row more significant.
    raw: dict[GroupKey, float] = {}
    for k in tested:
        m, p = measurement_of(k), measured[k][2].p
        raw[m] = max(raw.get(m, p), p)
    adjusted = dict(zip(family, adjust([raw[k] for k in family], adjust_by), strict=True))
    # One measurement has nothing to be adjusted against: its verdict reads as before.
    said = adjust_by if len(family) > 1 else ADJUST_NONE
    out = []
    for key in shared:
        bench, metric, params = key
        sa, sb, test = measured[key]
        if test is None:
            decide = raw_p = None
        elif adjust_by == ADJUST_NONE or key not in tested:
            # none: each row by its own test, the old rule exactly; a constant row: p 1 either way
            decide = raw_p = test.p
        else:
            decide, raw_p = adjusted[measurement_of(key)], test.p
        unit = units[key]
        if key in mixed:
            out.append(Comparison(bench, metric, json.loads(params), unit, sa, sb, None, INSUFFICIENT,
                                  f"units {mixed[key]} do not convert into each other: cannot compare"))
            continue
        if key in counts:
            status, verdict = judge_counts(metric, *counts[key])
            out.append(Comparison(bench, metric, json.loads(params), unit, sa, sb, None, status, verdict,
                                  None, adjust_by))
            continue
        status, verdict = judge(sa, sb, test, higher_is_better(bench, metric, unit), alpha=alpha,
                                min_effect=min_effect, max_cv=max_cv, words=wording(bench, metric, unit),
                                metric=metric, p=decide, raw_p=raw_p, method=said)
        out.append(Comparison(bench, metric, json.loads(params), unit, sa, sb, test, status, verdict,
                              decide, adjust_by))
    return out


def family_size(rows: list[Comparison]) -> int:
    """How many distinct measurements an adjustment counted (what ``compare`` adjusted over)."""
    return len({measurement_of((c.benchmark, c.metric, json.dumps(c.params, sort_keys=True, default=str)))
                for c in rows if c.test is not None and not constant(c.a, c.b)})
