"""Summary statistics and Welch's two-sample t-test, with no dependency beyond the standard library.

Welch's test (B. L. Welch, "The generalization of Student's problem when several different
population variances are involved", Biometrika 34, 1947) compares two means without assuming
equal variances; the degrees of freedom come from the Welch-Satterthwaite equation. The Student
t distribution is evaluated through the regularized incomplete beta function,
``P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2)`` (Abramowitz & Stegun 26.7.1), computed with a
continued fraction (A&S 26.5.8) evaluated by the modified Lentz method.

Accuracy: two-sided p-values to about 1e-14 relative for df up to 1e3, 1e-11 at 1e6, 3e-8 at
1e9 (Welch's df is at most n_a + n_b - 2); quantiles to 1e-9 for confidence 0.5..0.999. Both
``df/(df+t^2)`` and its complement are formed directly, never one as 1 minus the other, and the
normalizing constant's log uses a Stirling difference for large ``df``: either subtraction alone
would lose most digits of a p-value near 1 or at a large ``df``. From df 1e9 up, where the
continued fraction's own terms cancel, Fisher's expansion in 1/df takes over.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    sd: float  # sample standard deviation (n - 1); 0 for a single value, where it is undefined

    @property
    def finite(self) -> bool:
        """Whether the values were all finite (an infinite value makes mean and sd meaningless)."""
        return math.isfinite(self.mean) and math.isfinite(self.sd)

    @property
    def known_sd(self) -> float | None:
        """The sample standard deviation where it exists: None for a single value or a sample
        with a value that is not finite (what outputs show, never a made-up 0)."""
        return self.sd if self.n > 1 and self.finite else None

    @property
    def cv(self) -> float | None:
        """Coefficient of variation sd/|mean|; None where it is undefined: fewer than 2 values, a
        mean of 0 (no scale to relate the spread to), or a value that is not finite."""
        sd = self.known_sd
        if sd is None or self.mean == 0:
            return None
        return sd / abs(self.mean)

    @property
    def sem(self) -> float:
        return self.sd / math.sqrt(self.n) if self.n else 0.0


def summarize(values: Sequence[float]) -> Summary:
    """n, mean and sample standard deviation, exact to rounding at any magnitude: the values are
    scaled by a power of two (exact) so that squares neither overflow (1e200) nor underflow
    (1e-170), and the variance is the corrected two-pass sum (Chan, Golub & LeVeque 1983), so
    1e15 + [1, 2, 3] has sd 1."""
    xs = [float(v) for v in values]
    if not xs:
        raise ValueError("no values to summarize")
    n = len(xs)
    if not all(math.isfinite(x) for x in xs):
        # inf and nan propagate (an infinite mean, a nan sd): callers see ``finite`` False.
        return Summary(n, math.fsum(xs) / n if not any(map(math.isnan, xs)) else math.nan,
                       math.nan if n > 1 else 0.0)
    if n == 1:
        return Summary(1, xs[0], 0.0)
    big = max(abs(x) for x in xs)
    if big == 0.0:
        return Summary(n, 0.0, 0.0)
    shift = math.frexp(big)[1]
    ys = [math.ldexp(x, -shift) for x in xs]  # |y| < 1
    mean_y = math.fsum(ys) / n
    dev = [y - mean_y for y in ys]
    # The second term corrects the rounding of mean_y; exactly 0 in exact arithmetic.
    ss = math.fsum(d * d for d in dev) - math.fsum(dev) ** 2 / n
    scaled_sd = math.sqrt(max(ss, 0.0) / (n - 1))
    try:
        sd = math.ldexp(scaled_sd, shift)
    except OverflowError:   # values spanning -1.7e308..1.7e308: a spread past the largest float
        sd = math.inf
    return Summary(n, math.ldexp(mean_y, shift), sd)


def median(values: Sequence[float]) -> float:
    """The median, finite whenever the middle values are: the mean of the two middle values of
    an even count is taken in halves when their sum overflows (two values of 1.7e308); ordinary
    values round as ``statistics.median``."""
    xs = sorted(values)
    if not xs:
        raise ValueError("no values to take the median of")
    mid = len(xs) // 2
    if len(xs) % 2:
        return xs[mid]
    a, b = xs[mid - 1], xs[mid]
    m = (a + b) / 2
    return m if math.isfinite(m) or not (math.isfinite(a) and math.isfinite(b)) else a / 2 + b / 2


def _stirling_tail(z: float) -> float:
    """lgamma(z) minus its Stirling approximation (z - 1/2) log z - z + log(2 pi)/2, for z >= 100
    (next term 1/(1680 z^7): below 1e-17)."""
    z2 = z * z
    return (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / (1260.0 * z2)) / z2) / z


def _lgamma_ratio(a: float, b: float) -> float:
    """lgamma(a + b) - lgamma(a) for a >= b > 0, without the cancellation of two huge lgammas
    (at a = 5e8 that difference alone costs 6 digits of a p-value)."""
    if a < 100.0:
        return math.lgamma(a + b) - math.lgamma(a)
    return ((a + b - 0.5) * math.log1p(b / a) + b * math.log(a) - b
            + _stirling_tail(a + b) - _stirling_tail(a))


def _log_inv_beta(a: float, b: float) -> float:
    """-log B(a, b) = lgamma(a + b) - lgamma(a) - lgamma(b)."""
    return _lgamma_ratio(a, b) - math.lgamma(b) if a >= b else _lgamma_ratio(b, a) - math.lgamma(a)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    # It takes O(sqrt(max(a, b))) terms where x is near the mean a/(a+b) (526 at a = b = 1e6); a
    # fixed cap would return a truncated value without a word.
    limit = 200 + int(10.0 * math.sqrt(max(a, b)))
    for m in range(1, limit):
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
            return h
    raise ArithmeticError(f"incomplete beta continued fraction did not converge (a={a:g}, b={b:g}, x={x:g})")


def _betainc(a: float, b: float, x: float, y: float, log_x: float | None = None) -> float:
    """I_x(a, b) given both x and y = 1 - x, each accurate on its own; ``log_x`` where x itself
    underflows (the far tail of t)."""
    if log_x is None:
        if x <= 0.0:
            return 0.0
        # log1p of the smaller complement: log(x) of an x near 1 keeps only the digits of 1 - x
        # that survived rounding x.
        log_x = math.log1p(-y) if y < 0.5 else math.log(x)
    if y <= 0.0:
        return 1.0
    log_y = math.log1p(-x) if x < 0.5 else math.log(y)
    front = math.exp(_log_inv_beta(a, b) + a * log_x + b * log_y)
    # The fraction converges fast for x < (a+1)/(a+b+2); use the symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, y) / b


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    return _betainc(a, b, x, 1.0 - x)


# From here up the continued fraction loses about df x 1e-17 relative (its terms cancel near the
# distribution's centre) and Fisher's expansion is the more accurate (below 1e-7 at df 1e9).
_LARGE_DF = 1e9


def _t_sf_two_sided_large_df(t: float, df: float) -> float:
    """P(|T| >= t) for t >= 0 and large ``df``: the normal tail plus Fisher's expansion in 1/df
    to the fourth order (Abramowitz & Stegun 26.7.5); the normal alone for ``df`` inf."""
    t2 = t * t
    g1 = (t2 + 1.0) * t / 4.0
    g2 = ((5.0 * t2 + 16.0) * t2 + 3.0) * t / 96.0
    g3 = (((3.0 * t2 + 19.0) * t2 + 17.0) * t2 - 15.0) * t / 384.0
    g4 = ((((79.0 * t2 + 776.0) * t2 + 1482.0) * t2 - 1920.0) * t2 - 945.0) * t / 92160.0
    phi = math.exp(-t2 / 2.0) / math.sqrt(2.0 * math.pi)
    inv = 1.0 / df
    return math.erfc(t / math.sqrt(2.0)) + 2.0 * phi * inv * (g1 + inv * (g2 + inv * (g3 + inv * g4)))


def t_sf_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom (``df`` inf: the normal)."""
    if math.isnan(t) or math.isnan(df):
        raise ValueError("t and the degrees of freedom must be numbers, not NaN")
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    t = abs(t)
    if math.isinf(t):
        return 0.0
    if df >= _LARGE_DF:
        return _t_sf_two_sided_large_df(t, df)
    # x = df/(df+t^2) and y = t^2/(df+t^2) from r, the smaller of t^2/df and df/t^2, so that
    # neither is 1 minus the other (that loses the digits of a p-value near 1 or a large df) and
    # t^2 never overflows.
    root = math.sqrt(df)
    if t <= root:
        r = (t / root) ** 2
        return _betainc(df / 2.0, 0.5, 1.0 / (1.0 + r), r / (1.0 + r))
    r = (root / t) ** 2
    # Past |t| = 1e150 sqrt(df) r underflows, yet the tail (1e-150 at df 1) is still a number.
    log_x = 2.0 * (math.log(root) - math.log(t)) - math.log1p(r) if r < 1e-290 else None
    return _betainc(df / 2.0, 0.5, r / (1.0 + r), 1.0 / (1.0 + r), log_x)


def t_ppf(p: float, df: float) -> float:
    """Quantile of Student's t: the t with P(T <= t) = p (bisection on the two-sided tail)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if p == 0.5:
        return 0.0
    tail = 2.0 * min(p, 1.0 - p)  # two-sided tail probability of |t|
    lo, hi = 0.0, 1.0
    while t_sf_two_sided(hi, df) > tail:
        lo, hi = hi, hi * 2.0
        if math.isinf(hi):  # beyond the largest float (df well below 1, p near 0 or 1)
            return math.copysign(math.inf, p - 0.5)
    for _ in range(300):
        mid = (lo + hi) / 2.0
        if t_sf_two_sided(mid, df) > tail:
            lo = mid
        else:
            hi = mid
        # Relative, not absolute: the quantile of p = 0.5 + 1e-12 is about 3e-12.
        if hi - lo <= 1e-13 * hi:
            break
    t = (lo + hi) / 2.0
    return t if p > 0.5 else -t


WELCH, RANK = "welch", "rank"


@dataclass(frozen=True)
class WelchResult:
    diff: float  # mean(b) - mean(a)
    t: float     # nan where there is no spread on either side (0/0)
    df: float
    p: float  # two-sided p-value
    # confidence interval of mean(b) - mean(a); None where neither side has a spread to estimate
    # it from (a zero-width interval would claim the difference is known exactly)
    ci_low: float | None
    ci_high: float | None
    confidence: float
    method: str = WELCH   # RANK: no spread on either side, p from the exact rank test


def separated_rank_p(n_a: int, n_b: int) -> float:
    """Two-sided exact p-value of the Wilcoxon-Mann-Whitney rank test for two samples that do not
    overlap (every value of one below every value of the other): of the C(n_a + n_b, n_a) equally
    likely ways to split the ranks under the null hypothesis, one puts all of A lowest and one all
    of A highest, so p = 2 / C(n_a + n_b, n_a), capped at 1. It is the smallest p-value the test
    can give for these sample sizes (0.1 for 3 against 3). Below 5e-324 (541 runs a side) it
    rounds to 0 as any float does."""
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))


def welch(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> WelchResult | None:
    """Welch's t-test of mean(b) - mean(a); None when either side has fewer than 2 values or a
    value that is not finite (no variance to test with). Where neither side has any spread, the
    exact rank test instead (``separated_rank_p``; method RANK, no confidence interval)."""
    sa, sb = summarize(a), summarize(b)
    if sa.n < 2 or sb.n < 2 or not (sa.finite and sb.finite):
        return None
    diff = sb.mean - sa.mean
    if not math.isfinite(diff):  # means of opposite sign near the largest float
        return None
    # Standard errors of each mean, scaled by the larger: sd^2 of 1e200 would overflow, of
    # 1e-170 underflow to a spread of 0 and a "certain" difference.
    ea, eb = sa.sd / math.sqrt(sa.n), sb.sd / math.sqrt(sb.n)
    scale = max(ea, eb)
    if scale == 0.0:
        # No spread on either side (values rounded on import, a count): t is 0/0, and a p of 0
        # would claim certainty no finite sample gives. A rank test still applies: with every
        # value of a side equal and the sides different, the samples do not overlap (rounding
        # keeps order, so the unrounded values did not either); with the sides equal every rank
        # is tied and p is 1.
        p = 1.0 if diff == 0 else separated_rank_p(sa.n, sb.n)
        return WelchResult(diff, math.nan, math.nan, p, None, None, confidence, RANK)
    va, vb = (ea / scale) ** 2, (eb / scale) ** 2
    se = scale * math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (sa.n - 1) + vb ** 2 / (sb.n - 1))
    t = diff / se
    p = t_sf_two_sided(t, df)
    half = t_ppf(0.5 + confidence / 2.0, df) * se
    return WelchResult(diff, t, df, p, diff - half, diff + half, confidence)


# -- several tests at once ----------------------------------------------------------------------
# Adjusted p-values: a row is significant at level alpha after adjustment exactly when its
# adjusted p-value is below alpha, so one number per row says both what was decided and how
# close it came, whatever alpha the reader uses.

def holm(ps: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (S. Holm, "A simple sequentially rejective multiple test
    procedure", Scandinavian Journal of Statistics 6(2):65-70, 1979), in the order given: the
    i-th smallest p times (m - i + 1), made non-decreasing along the sorted order and capped at
    1. Controls the chance of any false rejection (family-wise error) under any dependence."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        # The running maximum is the step-down rule: once a hypothesis is kept, every larger
        # p-value is kept too, so none may come out smaller than one before it.
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


def benjamini_hochberg(ps: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg step-up adjusted p-values (Y. Benjamini and Y. Hochberg, "Controlling
    the false discovery rate: a practical and powerful approach to multiple testing", Journal of
    the Royal Statistical Society B 57(1):289-300, 1995), in the order given: the i-th smallest
    p times m / i, made non-decreasing by taking the smallest such value at or above each rank,
    capped at 1. Controls the expected share of false discoveries among the rows called changed;
    under positive dependence of the tests too (Benjamini and Yekutieli, Annals of Statistics
    29(4):1165-1188, 2001)."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out = [1.0] * m
    running = 1.0
    for rank in range(m - 1, -1, -1):
        i = order[rank]
        # The running minimum from the top is the step-up rule: rejecting rank k rejects every
        # smaller p-value with it, whatever their own ratio.
        # m / (rank + 1) first: a factor of at least 1 never rounds the product below p itself.
        running = min(running, ps[i] * (m / (rank + 1)))
        out[i] = running
    return out


ADJUST_NONE, ADJUST_HOLM, ADJUST_FDR = "none", "holm", "fdr"
ADJUSTMENTS = (ADJUST_NONE, ADJUST_HOLM, ADJUST_FDR)


def adjust(ps: Sequence[float], method: str) -> list[float]:
    """Adjusted p-values by ``method`` (none, holm, fdr); p-values must lie in [0, 1]."""
    if any(not 0.0 <= p <= 1.0 for p in ps):   # also refuses NaN, which sorts arbitrarily
        raise ValueError("p-values must lie in [0, 1]")
    if method == ADJUST_NONE:
        return [float(p) for p in ps]
    if method == ADJUST_HOLM:
        return holm(ps)
    if method == ADJUST_FDR:
        return benjamini_hochberg(ps)
    raise ValueError(f"unknown adjustment {method!r}: one of {', '.join(ADJUSTMENTS)}")
