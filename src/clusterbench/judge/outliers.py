"""Degraded-node detection: robust outliers among values that should be equal (one per host/device).

Method: the modified z-score of Iglewicz and Hoaglin,
``M_i = 0.6745 * (x_i - median) / MAD`` with ``MAD = median(|x_i - median|)``; points with
``|M_i| > 3.5`` are potential outliers (B. Iglewicz and D. C. Hoaglin, "How to Detect and Handle
Outliers", ASQC Quality Press, 1993, section 3.3). 0.6745 is the 0.75 quantile of the standard
normal, so MAD/0.6745 estimates the standard deviation of normal data.

When more than half the values are identical the MAD is 0 and the score is undefined; we then
use the mean absolute deviation around the median, ``M_i = (x_i - median) / (1.253314 * MeanAD)``,
where 1.253314 = sqrt(pi/2) = 1/0.7979 makes MeanAD a normal-consistent estimate of sigma
(the variant IBM SPSS documents for its modified z-score; Iglewicz & Hoaglin discuss MeanAD as
the alternative scale). If every value is equal nothing is an outlier.

Two guards keep identical hardware with benchmark noise from being flagged: only the bad side is
flagged (slow, not fast, when higher is better), and only when the value also differs from the
median by more than ``min_rel_dev`` (5% by default): a MAD of 0.1% makes a 0.5% wobble a
"5 sigma" event that no operator cares about.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from clusterbench.judge.stats import median
from clusterbench.units import compact

MAD_CONSISTENCY = 0.6745  # Iglewicz & Hoaglin: 0.6745 * (x - median) / MAD
MEANAD_CONSISTENCY = 0.7978846  # sqrt(2/pi): E|X - mu| = 0.7979 sigma for normal data
DEFAULT_THRESHOLD = 3.5


@dataclass(frozen=True)
class Outlier:
    key: str
    value: float
    median: float
    z: float  # modified z-score, signed (negative: below the median)
    rel_dev: float  # value / median - 1

    def describe(self, unit: str = "") -> str:
        u = f" {unit}" if unit else ""
        # compact: off a median near zero (1e-300) the deviation and z reach 1e300 and more,
        # which %+.1f writes out as 300 digits
        # a change off a median of 0 has no percent: it says the difference instead of inf%
        dev = (f"{compact(self.rel_dev * 100, 1, sign=True)}%" if math.isfinite(self.rel_dev)
               else f"{self.value - self.median:+.4g}{u}")
        return (f"{self.key}: {self.value:.4g}{u} is {dev} vs median "
                f"{self.median:.4g}{u} (modified z {compact(self.z, 1, sign=True)})")


def modified_z_scores(values: Mapping[str, float]) -> tuple[float, dict[str, float]]:
    """Median and the modified z-score of every value (0 for all when the values are all equal).

    An infinite value (a time or bandwidth from a broken measurement) scores +-inf; the MAD, a
    median, takes it in its stride, but the mean absolute deviation leaves it out: an infinite
    deviation there made every score nan, so nothing was ever flagged."""
    xs = [float(v) for v in values.values()]
    if not xs:
        return 0.0, {}
    med = median(xs)   # statistics.median of two values near 1.7e308 is inf: no centre at all
    if not math.isfinite(med):  # half the values or more are infinite: no centre to judge by
        return med, {k: 0.0 for k in values}
    deviations = [abs(x - med) for x in xs]
    mad = median(deviations)  # finite: fewer than half the values are infinite
    if mad > 0:
        scale = mad / MAD_CONSISTENCY
    else:
        finite = [d for d in deviations if math.isfinite(d)]
        scale = sum(finite) / len(finite) / MEANAD_CONSISTENCY

    if not scale:
        return med, {k: math.copysign(math.inf, x - med) if math.isinf(x) else 0.0 for k, x in zip(values, xs)}
    if all(map(math.isfinite, xs)):   # one expression a value: a fleet's row ranks a thousand hosts
        return med, {k: (x - med) / scale for k, x in zip(values, xs)}
    return med, {k: math.copysign(math.inf, x - med) if math.isinf(x) else (x - med) / scale
                 for k, x in zip(values, xs)}


def flag_outliers(
    values: Mapping[str, float],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    higher_is_better: bool = True,
    min_rel_dev: float = 0.05,
) -> list[Outlier]:
    """Keys whose value is robustly worse than the others, worst first.

    Needs at least 3 values: with two there is no majority to say which one is off. Values off a
    majority that agrees exactly are flagged by ``min_rel_dev`` alone, whatever the count.
    """
    if len(values) < 3:
        return []
    med, scores = modified_z_scores(values)
    # Values off a majority that agrees exactly (MAD 0): the mean-absolute-deviation fallback
    # score is inflated by those values themselves (one off 3 values scores 2.39 whatever its
    # size, and two equally bad nodes of 5 never reach 3.5), though the same nodes were flagged
    # beside nodes 0.1% apart. Their deviation from an exact majority is unbounded in the MAD's own
    # terms ((x - median) / 0): the relative deviation alone decides them.
    off = {k for k, v in values.items() if float(v) != med}
    exact_majority = 2 * (len(values) - len(off)) > len(values)
    # the keys on the bad side past the threshold (or off an exact majority): a fleet's row
    # ranks a thousand hosts, and few of them are any
    if higher_is_better:
        bad = [k for k, z in scores.items() if z < 0 and (abs(z) > threshold or (exact_majority and k in off))]
    else:
        bad = [k for k, z in scores.items() if z > 0 and (abs(z) > threshold or (exact_majority and k in off))]
    found = []
    for key in bad:
        value, z = float(values[key]), scores[key]
        # Relative to |median|: value / median - 1 turned the sign around for a negative median.
        rel = (value - med) / abs(med) if med != 0 else math.copysign(math.inf, value) if value != 0 else 0.0
        if abs(rel) > min_rel_dev:
            found.append(Outlier(key, value, med, z, rel))
    found.sort(key=lambda o: -abs(o.z))
    return found
