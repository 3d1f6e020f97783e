"""A/B comparison of two groups of runs, row by row, with Welch's t-test and a noise guard.

Rows are grouped by (benchmark, metric, params) with identity params (host, rank, device, ...)
dropped, so ten repeated runs per side, or eight GPUs per run, become one sample per row.

A row is called different only when all of these hold, which keeps noisy small-message rows and
tiny-but-"significant" shifts from being reported as regressions:
  * both sides have at least 2 values (Welch needs a variance);
  * neither side's coefficient of variation exceeds ``max_cv`` (10% by default): such rows are
    reported as "noisy" whatever the p-value;
  * the two-sided p-value is below ``alpha`` (0.05), and
  * the relative change of the means is at least ``min_effect`` (2%).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from clusterbench.errors import UsageError
from clusterbench.families import IDENTITY_PARAMS, describes_spread, higher_is_better
from clusterbench.judge.select import Row
from clusterbench.judge.stats import Summary, WelchResult, summarize, welch

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
        return (self.b.mean / self.a.mean - 1) * 100 if self.a.mean else None

    def to_dict(self) -> dict[str, Any]:
        t = self.test
        return {
            "benchmark": self.benchmark, "metric": self.metric, "params": self.params, "unit": self.unit,
            "n_a": self.a.n, "mean_a": self.a.mean, "sd_a": self.a.sd, "cv_a": self.a.cv,
            "n_b": self.b.n, "mean_b": self.b.mean, "sd_b": self.b.sd, "cv_b": self.b.cv,
            "delta_pct": self.delta_pct,
            "diff": t.diff if t else self.b.mean - self.a.mean,
            "ci95_low": t.ci_low if t else None, "ci95_high": t.ci_high if t else None,
            "p_value": t.p if t else None, "status": self.status, "verdict": self.verdict,
        }


def _p_text(p: float) -> str:
    for cut in (0.001, 0.01, 0.05):
        if p < cut:
            return f"p<{cut:g}"
    return f"p={p:.2f}"


def judge(a: Summary, b: Summary, test: WelchResult | None, hib: bool, *, alpha: float,
          min_effect: float, max_cv: float) -> tuple[str, str]:
    if a.mean:
        delta = b.mean / a.mean - 1
        change = f"{abs(delta) * 100:.1f}% "
    else:   # any change from 0 is infinitely large relatively: the test alone decides
        delta = 0.0 if b.mean == 0 else math.copysign(math.inf, b.mean)
        change = ""
    if test is None:
        shown = f"{delta * 100:+.1f}%" if a.mean else f"{b.mean:+g} from 0"
        return INSUFFICIENT, f"n={a.n} vs {b.n}: need 2+ values per side to test (delta {shown})"
    noisy = max(a.cv, b.cv)
    if noisy > max_cv:
        return NOISY, f"too noisy to call (CV {noisy * 100:.0f}%)"
    if test.p >= alpha or abs(delta) < min_effect:
        return SAME, "no significant difference"
    good = (delta > 0) == hib  # for times and latencies a rise is the bad direction
    word = "faster" if good else "slower"
    against = "" if a.mean else f" ({b.mean:g} against A's 0)"
    return (BETTER if good else WORSE), f"B is {change}{word}{against}, {_p_text(test.p)}"


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
                                min_effect=min_effect, max_cv=max_cv)
        out.append(Comparison(bench, metric, json.loads(params), unit, sa, sb, test, status, verdict))
    return out
