"""A/B comparison of two groups of runs, row by row, with Welch's t-test and a noise guard.

Rows are grouped by (benchmark, metric, params) with identity params (host, rank, device, ...)
dropped, so ten repeated runs per side, or eight GPUs per run, become one sample per row.

A row is called different only when all of these hold, which keeps noisy small-message rows and
tiny-but-"significant" shifts from being reported as regressions:
  * both sides have at least 2 values, all finite (Welch needs a variance);
  * neither side's coefficient of variation exceeds ``max_cv`` (10% by default): such rows are
    reported as "noisy" whatever the p-value. A side whose CV is undefined (its mean is 0) has no
    scale to call noisy against: the test alone decides it;
  * the two-sided p-value is below ``alpha`` (0.05), and
  * the relative change of the means, (B - A) / |A|, is at least ``min_effect`` (2%).

Each row is tested on its own at ``alpha``: there is no correction for comparing many rows at
once. Among rows that did not change, up to ``alpha`` of them (5%) can come out better or worse by
chance; ``min_effect`` removes most of those, since a 2% shift is far outside the noise of a stable
row. Rows are not independent (busbw and algbw are one number scaled, neighbouring sizes share
the same runs), which makes a Bonferroni-style correction needlessly strict.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from clusterbench.errors import UsageError
from clusterbench.families import IDENTITY_PARAMS, describes_spread, higher_is_better, metric_of
from clusterbench.judge.select import Row
from clusterbench.judge.stats import Summary, WelchResult, summarize, welch
from clusterbench.units import compact, is_time_unit, unit_scale

SAME, BETTER, WORSE, NOISY, INSUFFICIENT = "same", "better", "worse", "noisy", "insufficient"

GroupKey = tuple[str, str, str]  # benchmark, metric, canonical JSON of params


def group_key(row: Row) -> GroupKey:
    params = {k: v for k, v in row.m.params.items() if k not in IDENTITY_PARAMS}
    return row.m.benchmark, row.m.metric, json.dumps(params, sort_keys=True, default=str)


def group_rows(rows: Iterable[Row]) -> dict[GroupKey, list[Row]]:
    """Rows by key; records of how a row's iterations spread (stddev, mad, first) are left out:
    they describe the noise of a run (judge/noise.py), not its performance."""
    groups: dict[GroupKey, list[Row]] = {}
    for r in rows:
        if not describes_spread(r.m):
            groups.setdefault(group_key(r), []).append(r)
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
            "p_value": t.p if t else None, "status": self.status, "verdict": self.verdict,
        }


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def relative_change(a: float, b: float) -> float | None:
    """(b - a) / |a|: positive when b is larger, whatever the sign of a (b / a - 1 says -50% for
    -10 -> -5); None when a is 0."""
    return (b - a) / abs(a) if a else None


def _p_text(p: float) -> str:
    for cut in (0.001, 0.01, 0.05):
        if p < cut:
            return f"p<{cut:g}"
    return f"p={p:.2f}"


SPEED, COUNT, LEVEL = "speed", "count", "level"


def wording(benchmark: str, metric: str, unit: str) -> str:
    """How a change of this metric is said: ``speed`` (times and rates: faster, slower),
    ``count`` (counts and errors the family does not judge as performance, #wrong: more, fewer)
    or ``level`` (ratios, percentages, sizes: higher, lower). Only a time or a rate is "faster":
    5 wrong elements against 0 are not "slower"."""
    scale = unit_scale(unit) if unit else None
    if is_time_unit(unit) or (scale is not None and scale[0] in ("rate", "flops")) \
            or unit.endswith("/s") or unit.lower().endswith("pps"):   # GB/s, tok/s, Mpps
        return SPEED
    known = metric_of(benchmark, metric)
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
          min_effect: float, max_cv: float, words: str = SPEED, metric: str = "") -> tuple[str, str]:
    if not (a.finite and b.finite):
        # An infinite value (a bandwidth from a zero time) has no mean or spread to test.
        sides = " and ".join(s for s, x in (("A", a), ("B", b)) if not x.finite)
        return INSUFFICIENT, f"a value of {sides} is not finite: cannot test"
    rel = relative_change(a.mean, b.mean)
    if rel is not None:
        delta = rel
        change = f"{compact(abs(delta) * 100, 1)}% "
    else:   # any change from 0 is infinitely large relatively: the test alone decides
        delta = 0.0 if b.mean == 0 else math.copysign(math.inf, b.mean)
        change = ""
    if test is None:
        shown = f"{compact(delta * 100, 1, sign=True)}%" if rel is not None else f"{b.mean:+g} from 0"
        return INSUFFICIENT, f"n={a.n} vs {b.n}: need 2+ values per side to test (delta {shown})"
    # Only a defined CV can call a row noisy: a mean of 0 gives no scale to judge the spread by.
    cvs = [cv for cv in (a.cv, b.cv) if cv is not None]
    noisy = max(cvs, default=None)
    if noisy is not None and noisy > max_cv:
        return NOISY, f"too noisy to call (CV {noisy * 100:.0f}%)"
    if test.p >= alpha or abs(delta) < min_effect:
        return SAME, "no significant difference"
    good = (delta > 0) == hib  # for times and latencies a rise is the bad direction
    against = "" if a.mean else f"{b.mean:g} against A's 0"
    said = change_text(words, metric, delta > 0, good, change, against)
    return (BETTER if good else WORSE), f"{said}, {_p_text(test.p)}"


def compare(rows_a: list[Row], rows_b: list[Row], *, alpha: float = 0.05, min_effect: float = 0.02,
            max_cv: float = 0.10) -> list[Comparison]:
    ga, gb = group_rows(rows_a), group_rows(rows_b)
    shared = [k for k in ga if k in gb]
    if not shared:
        raise UsageError("the two selections share no (benchmark, metric, params) to compare")
    out = []
    for key in shared:
        bench, metric, params = key
        va = [r.m.value for r in ga[key]]
        vb = [r.m.value for r in gb[key]]
        sa, sb = summarize(va), summarize(vb)
        test = welch(va, vb)
        unit = ga[key][0].m.unit
        status, verdict = judge(sa, sb, test, higher_is_better(bench, metric, unit), alpha=alpha,
                                min_effect=min_effect, max_cv=max_cv, words=wording(bench, metric, unit),
                                metric=metric)
        out.append(Comparison(bench, metric, json.loads(params), unit, sa, sb, test, status, verdict))
    return out
