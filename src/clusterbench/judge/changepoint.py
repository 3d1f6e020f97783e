"""Where a series of runs changed level: a robust, rank-based change-point test (pure, numpy).

For a series ``x_1..x_n`` in time order (one host's busbw night after night):

1. **Is there a change?** Every split ``t`` (at least ``min_size`` points on each side) is a
   two-sample Mann-Whitney comparison of ``x_1..x_t`` with ``x_t+1..x_n``. The statistic is the
   largest standardized Mann-Whitney U over all splits (Pettitt 1979; Hawkins & Deng 2010, who
   use exactly this maximum for a nonparametric change-point chart). Ranks make it robust: one
   wild run moves one rank, not the mean. Its p-value comes from permuting the ranks (the
   distribution of the maximum under "no change", where every order is equally likely), so it
   is exact up to Monte-Carlo error and accounts for having looked at every split. When no
   single split is significant, the same scan runs over every inner stretch against the rest
   (the circular form of binary segmentation, Olshen et al. 2004): a node that was degraded for
   a week and then repaired. Each scan gets half of ``alpha``.
2. **Where?** The split (or stretch) that minimizes the sum of absolute deviations from each
   part's median (the least-absolute-deviation estimate of a shift, Bai 1995). Ranks alone
   cannot place a step to the exact run when the first run after it happens to be the best of
   the new level; the L1 cost sees the gap between the levels.
3. **Does it matter?** The medians before and after must differ by at least ``min_effect``
   (relative) and by at least ``min_z`` robust standard deviations of the residuals around the
   parts' medians (1.4826 * MAD): a significant but tiny shift of a very stable metric is not
   worth a page, and a shift inside the run-to-run noise is not a step.

Accepted changes split the series and each part is searched again (binary segmentation), so a
step down followed by a repair is two changes. The permutations use a fixed seed: the same
history always gives the same answer.

A series of n runs has about n^2 / 2 intervals. Three shortcuts keep a history of thousands of
runs within seconds, each giving exactly what the direct computation gives
(tests/judge/test_changepoint.py): the permutations stop once the p-value cannot end below the level
asked; a permutation's intervals are bounded band by band and computed only where the bound
reaches the observed statistic; and the L1 costs come from a wavelet matrix, O(log n) each, with
only the candidates that can win computed directly.

References: A. N. Pettitt, "A non-parametric approach to the change-point problem", Applied
Statistics 28(2), 126-135 (1979); D. M. Hawkins and Q. Deng, "A nonparametric change-point
control chart", Journal of Quality Technology 42(2), 165-173 (2010); A. B. Olshen, E. S.
Venkatraman, R. Lucito and M. Wigler, "Circular binary segmentation for the analysis of
array-based DNA copy number data", Biostatistics 5(4), 557-572 (2004); J. Bai, "Least absolute
deviation estimation of a shift", Econometric Theory 11(3), 403-436 (1995).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from clusterbench.envinfo.software import usable_cores
from clusterbench.judge.forked import in_child

MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution times this is its standard deviation
_FIRST_BLOCK = 32     # permutations drawn before the first look at the level (``scan_p_value``)


@dataclass(frozen=True)
class Settings:
    alpha: float = 0.01          # largest permutation p-value taken as a change
    min_size: int = 3            # runs on each side of a change: one noisy run is never a step
    min_effect: float = 0.02     # smallest relative shift of the median worth reporting
    min_z: float = 3.0           # smallest shift in robust standard deviations of the noise
    permutations: int = 1999
    seed: int = 0


@dataclass(frozen=True)
class Change:
    index: int          # position of the first value at the new level
    before: float       # median of the segment before
    after: float        # median of the segment after
    p_value: float      # permutation p-value of the maximum standardized Mann-Whitney statistic
    z: float            # |after - before| in robust standard deviations of the residuals

    @property
    def relative(self) -> float:
        """(after - before) / |before|: -0.15 is 15% lower."""
        return (self.after - self.before) / abs(self.before) if self.before else float("inf")

    @property
    def confidence(self) -> float:
        return 1.0 - self.p_value


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties sharing their average rank."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=float)
    sorted_x = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


@lru_cache(maxsize=256)   # a fleet's series mostly have a few lengths
def _candidates(n: int, min_size: int, inner: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Every interval [i, j) a change can bound: a prefix (one change at j), or with ``inner``
    also an inner interval (a change and a return), each piece at least ``min_size`` long. The
    arrays are shared: read only."""
    # a numpy row of ends per start: a Python loop over every pair took seconds on a long history
    ii, jj = [np.zeros(0, dtype=int)], [np.zeros(0, dtype=int)]
    starts = [0, *range(min_size, n - min_size + 1)] if inner else [0]
    for i in starts:
        j = np.arange(i + min_size, n + 1, dtype=int)
        keep = ~((i == 0) & (j == n)) & ~((j < n) & (n - j < min_size)) & (n - (j - i) >= min_size)
        j = j[keep]
        ii.append(np.full(len(j), i, dtype=int))
        jj.append(j)
    i_all, j_all = np.concatenate(ii), np.concatenate(jj)
    i_all.flags.writeable = False
    j_all.flags.writeable = False
    return i_all, j_all


def _max_z(ranks: np.ndarray, i: np.ndarray, j: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Largest |standardized Mann-Whitney U| of inside [i, j) against the rest, for each row of
    ``ranks`` (shape (B, n)) over all candidate intervals."""
    csum = np.concatenate([np.zeros(ranks.shape[:-1] + (1,)), np.cumsum(ranks, axis=-1)], axis=-1)
    k = j - i
    n = ranks.shape[-1]
    u = csum[..., j] - csum[..., i] - k * (k + 1) / 2.0
    z = (u - k * (n - k) / 2.0) / np.sqrt(var)
    return np.max(np.abs(z), axis=-1)


def _bands(n: int, i: np.ndarray, j: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """Candidates grouped by the shorter of inside and outside, m = min(k, n - k): bands of
    lengths [a, b] growing by about a fifth, each with the positions of its candidates."""
    k = j - i
    m = np.minimum(k, n - k)
    order = np.argsort(m, kind="stable")
    m_sorted = m[order]
    out, a = [], int(m_sorted[0]) if len(m) else 0
    while len(m) and a <= m_sorted[-1]:
        b = max(a, int(a * 1.2))
        lo, hi = np.searchsorted(m_sorted, [a, b + 1])
        if hi > lo:
            out.append((a, b, np.sort(order[lo:hi])))
        a = b + 1
    return out


def _window_ranges(c: np.ndarray, widths: list[int]) -> list[np.ndarray]:
    """For each width w: the largest max - min of ``c`` over any w consecutive points, for each
    row of ``c`` (a sparse table of running maxima and minima, O(n log n) per row)."""
    hi, lo = [c], [c]
    span = 1
    while 2 * span <= c.shape[-1]:
        hi.append(np.maximum(hi[-1][..., :-span], hi[-1][..., span:]))
        lo.append(np.minimum(lo[-1][..., :-span], lo[-1][..., span:]))
        span *= 2
    out = []
    for w in widths:
        w = min(w, c.shape[-1])
        level = w.bit_length() - 1
        shift = w - (1 << level)
        count = c.shape[-1] - w + 1
        top = np.maximum(hi[level][..., :count], hi[level][..., shift:shift + count])
        bottom = np.minimum(lo[level][..., :count], lo[level][..., shift:shift + count])
        out.append(np.max(top - bottom, axis=-1))
    return out


def _count_reaching(perms: np.ndarray, i: np.ndarray, j: np.ndarray, var: np.ndarray,
                    bands: list[tuple[int, int, np.ndarray]], observed: float) -> int:
    """How many rows of ``perms`` have ``_max_z >= observed - 1e-9``, computing ``_max_z`` only
    where a cheap bound cannot rule it out.

    The numerator of each z is the sum of centered ranks (r - (n+1)/2) over the interval, and,
    these summing to 0, minus their sum over the outside: the sum over a circular window of
    m = min(k, n - k) ranks. Every sum over a window of at most b ranks lies within the largest
    max - min of the centered cumulative sum over b + 1 consecutive points, and the variance only
    grows with m up to n / 2. So for a band of m in [a, b], range(b + 1) / sqrt(var(a)) bounds
    every z of the band. The numerators are sums of halves, exact in floating point, and the
    rounding of sqrt and / is monotone, so the bound never falls below a z computed exactly; a
    row is counted exactly as ``_max_z`` would count it."""
    n = perms.shape[-1]
    centered = np.concatenate([perms, perms], axis=-1) - (n + 1) / 2.0
    csum = np.concatenate([np.zeros((len(perms), 1)), np.cumsum(centered, axis=-1)], axis=-1)
    ranges = _window_ranges(csum, [b + 1 for _, b, _ in bands])
    reached = np.zeros(len(perms), dtype=bool)
    threshold = observed - 1e-9
    for (_, _, where), spread in zip(bands, ranges):
        smallest = float(np.min(var[where]))
        bound = spread / math.sqrt(smallest) * (1 + 1e-12)
        rows = np.flatnonzero(~reached & (bound >= threshold))
        if len(rows) == 0:
            continue
        step = max(1, 2_000_000 // (len(where) + n))   # the memory of one block, as in the scan
        for start in range(0, len(rows), step):
            part = rows[start:start + step]
            reached[part] = _max_z(perms[part], i[where], j[where], var[where]) >= threshold
    return int(np.sum(reached))


def scan_p_value(x: Sequence[float], s: Settings = Settings(), inner: bool = False,
                 stop_at: float | None = None) -> tuple[float, float]:
    """(observed maximum |z|, permutation p-value) of the Mann-Whitney scan over all single
    splits, or with ``inner`` over all intervals.

    With ``stop_at`` the permutations stop as soon as the p-value cannot end below it, and the
    p-value returned is then a lower bound that is at least ``stop_at``: enough to say "not
    significant" without drawing the rest."""
    arr = np.asarray(x, dtype=float)
    n = len(arr)
    i, j = _candidates(n, s.min_size, inner)
    if len(i) == 0:
        return 0.0, 1.0
    ranks = _ranks(arr)
    # Tie-corrected variance of U for each interval (every interval sees the same ties).
    _, counts = np.unique(arr, return_counts=True)
    tie = float(np.sum(counts ** 3 - counts)) / (n * (n - 1))
    k = j - i
    var = k * (n - k) / 12.0 * ((n + 1) - tie)
    if np.any(var <= 0):
        return 0.0, 1.0  # every value equal: nothing can have changed
    observed = float(_max_z(ranks, i, j, var))
    rng = np.random.default_rng(s.seed)
    # About n^2 / 2 intervals: bound them by bands first. A single split has n candidates, fewer
    # than the bound itself looks at.
    bands = _bands(n, i, j) if len(i) > 8 * n else None
    exceed = 0
    # The generator shuffles row after row, so the permutations drawn do not depend on the block
    # size; a block is bounded by the memory of the candidates' z, or of the sparse tables (2n
    # points, log2(2n) levels).
    block = _blocks(n, len(i))
    # With a level to stop at, the first blocks are small (``_schedule``): a series with no change
    # (most of a fleet's) reaches the level within a few dozen permutations.
    for _, b in (_schedule(block, s.permutations) if stop_at is not None else
                 ((start, min(block, s.permutations - start)) for start in range(0, s.permutations, block))):
        perms = rng.permuted(np.tile(ranks, (b, 1)), axis=1)
        if bands is None:
            exceed += int(np.sum(_max_z(perms, i, j, var) >= observed - 1e-9))
        else:
            exceed += _count_reaching(perms, i, j, var, bands, observed)
        if stop_at is not None and (1 + exceed) / (s.permutations + 1) >= stop_at:
            return observed, (1 + exceed) / (s.permutations + 1)
    # The observed order counts as one of the permutations: p is never 0.
    return observed, (1 + exceed) / (s.permutations + 1)


def _blocks(n: int, candidates: int) -> int:
    """The permutations ``scan_p_value`` draws in a block for a series of ``n`` runs."""
    if candidates > 8 * n:
        return max(1, 4_000_000 // ((2 * n + 1) * (2 * n + 1).bit_length()))
    return max(1, 2_000_000 // (candidates + n))


def may_change(series: Sequence[Sequence[float]], s: Settings = Settings()) -> list[bool]:
    """For each series (finite values, time order): False where ``find_changes`` finds no change
    for certain, True where it may. Found for many series at once, and exactly as ``find_changes``
    finds it: a series has no change when both of its first scans (the single split, then the
    inner stretch) stop after their first block of permutations at a p-value of at least alpha /
    2. The permutations depend on the seed and the length only (the generator shuffles every row
    the same whatever it holds), so the first block is drawn once per length, applied to every
    series of that length, and the statistics of all of them computed in a few numpy passes; a
    fleet's series with no change (nearly all of them) cost a fraction of a millisecond each."""
    out = [True] * len(series)
    by_length: dict[int, list[int]] = {}
    for k, x in enumerate(series):
        by_length.setdefault(len(x), []).append(k)
    for n, ks in by_length.items():
        if n < 2 * s.min_size:
            for k in ks:
                out[k] = False
            continue
        ranks = np.array([_ranks(np.asarray(series[k], dtype=float)) for k in ks])
        tie = np.array([_tie(np.asarray(series[k], dtype=float)) for k in ks])
        if len(ks) * n * n >= SPLIT_WORK and usable_cores() >= 2:
            # each series' answer is its own (the same permutations for all): half of them in a
            # second process, a fleet's 6,000 series in half the time
            half = len(ks) // 2
            other = in_child(_quiet, ranks[half:], tie[half:], n, s)
            quiet = np.concatenate([_quiet(ranks[:half], tie[:half], n, s), other()])
        else:
            quiet = _quiet(ranks, tie, n, s)
        for k, q in zip(ks, quiet):
            out[k] = not q
    return out


# Series x runs^2 of a length above which may_change splits its work between two processes
# (about 0.2 s of numpy here; a fork costs a few milliseconds).
SPLIT_WORK = 2_000_000


def _quiet(ranks: np.ndarray, tie: np.ndarray, n: int, s: Settings) -> np.ndarray:
    """Per row: whether the series cannot have a change (``may_change``)."""
    # the single split first; the inner scan only for the series it did not settle, as _segments
    quiet = _not_significant(ranks, tie, n, s, inner=False)
    rest = np.flatnonzero(quiet)
    if len(rest):
        quiet[rest] = _not_significant(ranks[rest], tie[rest], n, s, inner=True)
    return quiet


def _tie(x: np.ndarray) -> float:
    _, counts = np.unique(x, return_counts=True)
    n = len(x)
    return float(np.sum(counts ** 3 - counts)) / (n * (n - 1))


def _max_z_by_length(ranks: np.ndarray, n: int, min_size: int, inner: bool, tie: np.ndarray) -> np.ndarray:
    """``_max_z`` over ``_candidates(n, min_size, inner)``, the same floats, a length at a time.

    The intervals of one length k are contiguous slices of the cumulative sum, and all of them
    share one centre and one standard deviation, so only the largest and smallest sum of each
    length are needed: |sum - centre| / sd is largest at one of them (dividing by sd > 0 keeps
    order, and the sums of ranks, which are halves, and the centres are exact in floating point,
    so each z is the one ``_max_z`` computes). Work and memory per series: n numbers a length, not
    n^2 / 2. ``tie``: per leading row of ``ranks``."""
    csum = np.concatenate([np.zeros(ranks.shape[:-1] + (1,)), np.cumsum(ranks, axis=-1)], axis=-1)
    best = np.zeros(ranks.shape[:-1])
    factor = ((n + 1) - tie).reshape(tie.shape + (1,) * (ranks.ndim - 1 - tie.ndim))
    for k in range(min_size, n - min_size + 1):
        sd = np.sqrt(k * (n - k) / 12.0 * factor)
        centre = k * (k + 1) / 2.0 + k * (n - k) / 2.0
        # i = 0 (a prefix), then (inner) i in [min_size, n - min_size - k], and i = n - k
        parts = [csum[..., k] - csum[..., 0]]
        hi = lo = parts[0]
        if inner:
            last = csum[..., n] - csum[..., n - k]
            hi, lo = np.maximum(hi, last), np.minimum(lo, last)
            if n - min_size - k >= min_size:
                d = csum[..., min_size + k:n - min_size + 1] - csum[..., min_size:n - min_size - k + 1]
                hi, lo = np.maximum(hi, d.max(axis=-1)), np.minimum(lo, d.min(axis=-1))
        best = np.maximum(best, np.maximum(hi - centre, centre - lo) / sd)
    return best


def _not_significant(ranks: np.ndarray, tie: np.ndarray, n: int, s: Settings, inner: bool) -> np.ndarray:
    """Per row of ``ranks`` (series of ``n`` runs, ``tie`` their tie terms): whether
    ``scan_p_value(x, s, inner, stop_at=alpha / 2)`` gives a p-value of at least alpha / 2, found
    as it finds it: the same permutations in the same blocks, a row done once its count of
    permutations at least as extreme as it cannot end below the level."""
    i, _ = _candidates(n, s.min_size, inner)
    done = np.zeros(len(ranks), dtype=bool)
    if len(i) == 0:
        return ~done   # p = 1
    done = (n + 1) - tie <= 0                                     # every value equal: p = 1
    tie = np.where(done, 0.0, tie)
    observed = _max_z_by_length(ranks, n, s.min_size, inner, tie)
    exceed = np.zeros(len(ranks), dtype=np.int64)
    order = np.random.default_rng(s.seed).permuted(np.tile(np.arange(n), (s.permutations, 1)), axis=1)
    for start, b in _schedule(_blocks(n, len(i)), s.permutations):
        rows = np.flatnonzero(~done)
        if len(rows) == 0:
            break
        block = order[start:start + b]
        step = max(1, 200_000 // (b * n))
        for at in range(0, len(rows), step):
            part = rows[at:at + step]
            z = _max_z_by_length(ranks[part][:, block], n, s.min_size, inner, tie[part])
            exceed[part] += np.sum(z >= observed[part][:, None] - 1e-9, axis=1)
        done[rows] = (1 + exceed[rows]) / (s.permutations + 1) >= s.alpha / 2
    return done


def _schedule(block: int, permutations: int) -> Iterator[tuple[int, int]]:
    """(start, size) of the blocks of permutations a scan with a level to stop at draws: small
    first, doubling up to ``block``. The permutations are the same however they are cut; small
    blocks only let a scan stop sooner (a series with no change stops within a few dozen)."""
    start, size = 0, min(block, _FIRST_BLOCK)
    while start < permutations:
        b = min(size, permutations - start)
        yield start, b
        start += b
        size = min(block, size * 2)


def _l1(v: np.ndarray) -> float:
    return float(np.sum(np.abs(v - np.median(v)))) if len(v) else 0.0


class _SmallestSums:
    """The sum of the k smallest values in any stretch of a fixed array, for many stretches at
    once: a wavelet matrix over the values' ranks (Claude, Navarro and Ordonez, "The wavelet
    matrix", 2015), each level a numpy pass over all queries."""

    def __init__(self, values: np.ndarray) -> None:
        order = np.argsort(values, kind="stable")
        rank = np.empty(len(values), dtype=np.int64)
        rank[order] = np.arange(len(values))
        self.by_rank = values[order]
        self.bits = max(1, (len(values) - 1).bit_length())
        self.zeros: list[np.ndarray] = []       # per level: 0 bits before each position
        self.zero_sums: list[np.ndarray] = []   # per level: sum of the values with a 0 bit before it
        self.n_zeros: list[int] = []
        for level in range(self.bits):
            low = ((rank >> (self.bits - 1 - level)) & 1) == 0
            self.zeros.append(np.concatenate([[0], np.cumsum(low)]))
            self.zero_sums.append(np.concatenate([[0.0], np.cumsum(np.where(low, values, 0.0))]))
            self.n_zeros.append(int(np.sum(low)))
            keep = np.concatenate([np.flatnonzero(low), np.flatnonzero(~low)])
            rank, values = rank[keep], values[keep]

    def smallest(self, lo: np.ndarray, hi: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Sum of the k smallest of values[lo:hi], element by element (0 <= k <= hi - lo)."""
        total = np.zeros(len(lo))
        rank = np.zeros(len(lo), dtype=np.int64)
        for level in range(self.bits):
            zl, zr = self.zeros[level][lo], self.zeros[level][hi]
            left = k <= zr - zl
            total += np.where(left, 0.0, self.zero_sums[level][hi] - self.zero_sums[level][lo])
            k = np.where(left, k, k - (zr - zl))
            lo = np.where(left, zl, self.n_zeros[level] + lo - zl)
            hi = np.where(left, zr, self.n_zeros[level] + hi - zr)
            rank |= (~left).astype(np.int64) << (self.bits - 1 - level)
        return total + k * self.by_rank[rank]   # what is left is k copies of one value


def _l1_costs(arr: np.ndarray, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, float]:
    """The L1 cost of every interval, inside plus outside, in O(log n) per interval, and a bound
    on how far each may be from what ``_l1`` computes for it.

    A set's absolute deviations from its median sum to the sum of its larger half minus the sum of
    its smaller half (the middle value of an odd count adds nothing), and the outside of [i, j)
    is the circular stretch [j, i + n) of the series written twice."""
    n = len(arr)
    center = float(np.median(arr))
    twice = np.concatenate([arr, arr]) - center   # costs do not move with a shift; sums get smaller
    sums = _SmallestSums(twice)
    prefix = np.concatenate([[0.0], np.cumsum(twice)])
    costs = np.empty(len(i))
    chunk = 1 << 18
    for start in range(0, len(i), chunk):
        a, b = i[start:start + chunk], j[start:start + chunk]
        cost = np.zeros(len(a))
        for lo, hi in ((a, b), (b, a + n)):
            size = hi - lo
            half = size // 2
            cost += (prefix[hi] - prefix[lo]) - sums.smallest(lo, hi, size - half) - sums.smallest(lo, hi, half)
        costs[start:start + chunk] = cost
    # Sequential sums of at most 4n + 4 terms each way, each term off by at most eps of itself,
    # plus ``_l1``'s own rounding of x - median against the values' size: a generous bound.
    eps = float(np.finfo(float).eps)
    slack = 64.0 * (2 * n + 2) * eps * (float(np.sum(np.abs(twice))) + n * float(np.max(np.abs(arr))))
    return costs, slack


def l1_interval(x: Sequence[float], min_size: int, inner: bool = True) -> tuple[int, int]:
    """The interval [i, j) whose level differs from the rest with the least summed absolute
    deviation of inside and outside from their medians (a prefix: a single step at j)."""
    arr = np.asarray(x, dtype=float)
    best, where = float("inf"), (0, len(arr))
    ii, jj = _candidates(len(arr), min_size, inner)
    if len(ii) == 0:
        return where
    # The fast costs are within ``slack`` of ``_l1``'s. A candidate whose fast cost is at least
    # 2 * slack above the smallest fast cost before it can never be taken by the rule below, so
    # only the others are computed exactly, in the same order: the same interval as computing all.
    fast, slack = _l1_costs(arr, ii, jj)
    before = np.concatenate([[np.inf], np.minimum.accumulate(fast)[:-1]])
    contenders = fast < before + 2 * slack
    # Costs within rounding of the best keep the earlier candidate. A fixed 1e-12 swallowed every
    # cost of a series of tiny values (5e-324, 1e-15): the first candidate won, and steps were
    # reported inside a flat stretch. Below a total deviation of 1 the margin shrinks with it.
    tie = 1e-12 * min(1.0, _l1(arr))
    for i, j in zip(ii[contenders], jj[contenders]):
        cost = _l1(arr[i:j]) + _l1(np.concatenate([arr[:i], arr[j:]]))
        if cost < best - tie:
            best, where = cost, (int(i), int(j))
    return where


def _segments(x: np.ndarray, offset: int, s: Settings) -> list[tuple[Change, tuple[int, int]]] | None:
    """The change(s) bounding the most significant interval of ``x``, or None."""
    if len(x) < 2 * s.min_size:
        return None
    # First one step that stays (the regression that matters most, and the most powerful test
    # for it); failing that, a stretch that differs from both sides (degraded, then repaired).
    # Each test gets half of alpha, so together they keep the false-alarm rate.
    inner = False
    _, p = scan_p_value(x, s, inner=False, stop_at=s.alpha / 2)
    if p >= s.alpha / 2:
        inner = True
        _, p = scan_p_value(x, s, inner=True, stop_at=s.alpha / 2)
        if p >= s.alpha / 2:
            return None
    i, j = l1_interval(x, s.min_size, inner)
    inside, outside = x[i:j], np.concatenate([x[:i], x[j:]])
    a, b = float(np.median(outside)), float(np.median(inside))
    shift = abs(b - a)
    resid = np.concatenate([inside - b, outside - a])
    sigma = MAD_TO_SIGMA * float(np.median(np.abs(resid)))
    z = shift / sigma if sigma > 0 else (float("inf") if shift > 0 else 0.0)
    # Relative to the level before each change reported (``Change.relative``), not to one fixed
    # side: measured against the later level, a 1.98% drop passed a 2% floor and a 2.02% rise
    # failed it. The larger level is the strictest, so every change reported clears the floor.
    befores = ([a] if i > 0 else []) + ([b] if j < len(x) else [])
    ref = max(abs(v) for v in befores)
    rel = shift / ref if ref else float("inf")
    if rel < s.min_effect or z < s.min_z:
        return None
    out = []
    if i > 0:
        out.append((Change(offset + i, a, b, p, z), (i, j)))
    if j < len(x):
        out.append((Change(offset + j, b, a, p, z), (i, j)))
    return out


def smallest_p_value(n: int, s: Settings = Settings()) -> float:
    """The smallest p-value the permutation test can give any series of ``n`` runs: that of the
    cleanest step, every run of one half above every run of the other. Its middle split has the
    largest standardized U any order of n distinct values has, and a random order matches it with
    probability q = 2 / C(2m, m), m = n // 2 (either half first; for odd n the middle run may
    join either half, which sums to the same q). 1.0 when n is too short for ``min_size`` runs
    on each side. The permutations estimate p, never below 1 / (permutations + 1)."""
    if n < 2 * s.min_size:
        return 1.0
    m = n // 2
    # int / int: exact to rounding, 0.0 below the smallest float (2.0 / C overflowed past m = 515)
    return 2 / math.comb(2 * m, m)


@lru_cache(maxsize=64)
def runs_needed(s: Settings = Settings()) -> int | None:
    """The fewest runs in which a change can be found at ``s.alpha`` (each scan gets half of
    it): 12 at the default 0.01. None when no length can: the estimated p-value is never below
    1 / (permutations + 1)."""
    if s.alpha / 2 <= 1.0 / (s.permutations + 1):
        return None
    n = 2 * s.min_size
    while smallest_p_value(n, s) >= s.alpha / 2:
        n += 1   # q shrinks about fourfold every two runs: a few steps for any alpha
    return n


def _power_of_two_scale(x: np.ndarray) -> int:
    """An exponent e such that x * 2**-e sums without overflow, or 0 when x already does.
    Scaling by a power of two is exact and changes no rank, split, ratio or z, so huge values
    (1e308) are searched like any others; ordinary series keep their own values."""
    with np.errstate(over="ignore"):   # the overflow is the question asked
        fits = bool(np.isfinite(np.sum(np.abs(x)) * 2))
    if len(x) == 0 or fits:
        return 0
    return int(np.frexp(np.max(np.abs(x)))[1])


def find_changes(values: Sequence[float], settings: Settings = Settings()) -> list[Change]:
    """Every change of level in ``values`` (time order), earliest first. Values must be finite
    (``judge.history`` leaves other points out before it gets here)."""
    x = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(x)):
        raise ValueError("a series with NaN or infinite values")
    e = _power_of_two_scale(x)
    if e:
        # Medians of two huge values and sums of deviations would overflow to inf.
        return [Change(c.index, float(np.ldexp(c.before, e)), float(np.ldexp(c.after, e)), c.p_value, c.z)
                for c in find_changes(np.ldexp(x, -e), settings)]
    found: list[Change] = []
    pending = [(0, len(x))]
    while pending:
        lo, hi = pending.pop()
        result = _segments(x[lo:hi], lo, settings)
        if result is None:
            continue
        found += [c for c, _ in result]
        i, j = result[0][1]
        pending += [(lo + a, lo + b) for a, b in ((0, i), (i, j), (j, hi - lo)) if b > a]
    return sorted(found, key=lambda c: c.index)
