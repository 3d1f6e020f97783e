"""Summary statistics and Welch's two-sample t-test, with no dependency beyond the standard library.

Welch's test (B. L. Welch, "The generalization of Student's problem when several different
population variances are involved", Biometrika 34, 1947) compares two means without assuming
equal variances; the degrees of freedom come from the Welch-Satterthwaite equation. The Student
t distribution is evaluated through the regularized incomplete beta function,
``P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2)`` (Abramowitz & Stegun 26.7.1), computed with a
continued fraction (A&S 26.5.8) evaluated by the modified Lentz method.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    sd: float  # sample standard deviation (n - 1); 0 for a single value

    @property
    def cv(self) -> float:
        """Coefficient of variation sd/mean (0 when the mean is 0)."""
        return self.sd / abs(self.mean) if self.mean else 0.0

    @property
    def sem(self) -> float:
        return self.sd / math.sqrt(self.n) if self.n else 0.0


def summarize(values: Sequence[float]) -> Summary:
    xs = [float(v) for v in values]
    if not xs:
        raise ValueError("no values to summarize")
    n = len(xs)
    mean = math.fsum(xs) / n
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    return Summary(n, mean, math.sqrt(var))


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(log_front)
    # The fraction converges fast for x < (a+1)/(a+b+2); use the symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 0.0
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def t_ppf(p: float, df: float) -> float:
    """Quantile of Student's t: the t with P(T <= t) = p (bisection on the two-sided tail)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if p == 0.5:
        return 0.0
    tail = 2.0 * min(p, 1.0 - p)  # two-sided tail probability of |t|
    lo, hi = 0.0, 1.0
    while t_sf_two_sided(hi, df) > tail:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_sf_two_sided(mid, df) > tail:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    t = (lo + hi) / 2.0
    return t if p > 0.5 else -t


@dataclass(frozen=True)
class WelchResult:
    diff: float  # mean(b) - mean(a)
    t: float
    df: float
    p: float  # two-sided p-value
    ci_low: float  # confidence interval of mean(b) - mean(a)
    ci_high: float
    confidence: float


def welch(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> WelchResult | None:
    """Welch's t-test of mean(b) - mean(a); None when either side has fewer than 2 values."""
    sa, sb = summarize(a), summarize(b)
    if sa.n < 2 or sb.n < 2:
        return None
    va, vb = sa.sd ** 2 / sa.n, sb.sd ** 2 / sb.n
    diff = sb.mean - sa.mean
    se2 = va + vb
    if se2 == 0.0:
        # No spread at all: the difference is exact (p 1 if equal, 0 otherwise).
        p = 1.0 if diff == 0 else 0.0
        return WelchResult(diff, 0.0 if diff == 0 else math.copysign(math.inf, diff),
                           float(sa.n + sb.n - 2), p, diff, diff, confidence)
    se = math.sqrt(se2)
    df = se2 ** 2 / (va ** 2 / (sa.n - 1) + vb ** 2 / (sb.n - 1))
    t = diff / se
    p = t_sf_two_sided(t, df)
    half = t_ppf(0.5 + confidence / 2.0, df) * se
    return WelchResult(diff, t, df, p, diff - half, diff + half, confidence)
