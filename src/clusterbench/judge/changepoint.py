"""Where a series of runs changed level: a robust, rank-based change-point test (pure, numpy).

For a series ``x_1..x_n`` in time order (one host's busbw night after night):

1. **Is there a change?** Every split ``t`` (at least ``min_size`` points on each side) is a
   two-sample Mann-Whitney comparison of ``x_1..x_t`` with ``x_t+1..x_n``. The statistic is the
   largest standardized Mann-Whitney U over all splits (Pettitt 1979; Hawkins & Deng 2010, who
   use exactly this maximum for a nonparametric change-point chart). Ranks make it robust: one
   wild run moves one rank, not the mean. Its p-value comes from permuting the ranks (the
   distribution of the maximum under "no change", where every order is equally likely), so it
   is exact up to Monte-Carlo error and accounts for having looked at every split.
2. **Where?** The split that minimizes the sum of absolute deviations from each segment's
   median (the least-absolute-deviation estimate of a shift, Bai 1995). Ranks alone cannot
   place a step to the exact run when the first run after it happens to be the best of the new
   level; the L1 cost sees the gap between the levels.
3. **Does it matter?** The medians before and after must differ by at least ``min_effect``
   (relative) and by at least ``min_z`` robust standard deviations of the residuals around the
   segment medians (1.4826 * MAD): a significant but tiny shift of a very stable metric is not
   worth a page, and a shift inside the run-to-run noise is not a step.

Accepted changes split the series and each side is searched again (binary segmentation), so a
step down followed by a repair is two changes. The permutations use a fixed seed: the same
history always gives the same answer.

References: A. N. Pettitt, "A non-parametric approach to the change-point problem", Applied
Statistics 28(2), 126-135 (1979); D. M. Hawkins and Q. Deng, "A nonparametric change-point
control chart", Journal of Quality Technology 42(2), 165-173 (2010); J. Bai, "Least absolute
deviation estimation of a shift", Econometric Theory 11(3), 403-436 (1995).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution times this is its standard deviation


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


def _max_z(ranks: np.ndarray, splits: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Largest |standardized U| over ``splits`` for each row of ``ranks`` (shape (B, n))."""
    csum = np.cumsum(ranks, axis=-1)[..., splits - 1]          # rank sum of the first t values
    u = csum - splits * (splits + 1) / 2.0                      # Mann-Whitney U of the first part
    n = ranks.shape[-1]
    z = (u - splits * (n - splits) / 2.0) / np.sqrt(var)
    return np.max(np.abs(z), axis=-1)


def scan_p_value(x: Sequence[float], s: Settings = Settings()) -> tuple[float, float]:
    """(observed maximum |z|, permutation p-value) of the Mann-Whitney scan over all splits."""
    arr = np.asarray(x, dtype=float)
    n = len(arr)
    splits = np.arange(s.min_size, n - s.min_size + 1)
    ranks = _ranks(arr)
    # Tie-corrected variance of U for each split (every split sees the same ties).
    _, counts = np.unique(arr, return_counts=True)
    tie = float(np.sum(counts ** 3 - counts)) / (n * (n - 1)) if n > 1 else 0.0
    var = splits * (n - splits) / 12.0 * ((n + 1) - tie)
    if np.any(var <= 0):
        return 0.0, 1.0  # every value equal: nothing can have changed
    observed = float(_max_z(ranks, splits, var))
    rng = np.random.default_rng(s.seed)
    perms = rng.permuted(np.tile(ranks, (s.permutations, 1)), axis=1)
    null = _max_z(perms, splits, var)
    # The observed order counts as one of the permutations: p is never 0.
    p = (1 + int(np.sum(null >= observed - 1e-9))) / (s.permutations + 1)
    return observed, p


def l1_split(x: Sequence[float], min_size: int) -> int:
    """The split t (first value of the second segment) minimizing the summed absolute deviations
    of both segments from their medians."""
    arr = np.asarray(x, dtype=float)
    n = len(arr)
    best, best_t = float("inf"), min_size
    for t in range(min_size, n - min_size + 1):
        a, b = arr[:t], arr[t:]
        cost = float(np.sum(np.abs(a - np.median(a))) + np.sum(np.abs(b - np.median(b))))
        if cost < best - 1e-12:
            best, best_t = cost, t
    return best_t


def _robust_sigma(x: np.ndarray, t: int) -> float:
    resid = np.concatenate([x[:t] - np.median(x[:t]), x[t:] - np.median(x[t:])])
    return MAD_TO_SIGMA * float(np.median(np.abs(resid)))


def _one(x: np.ndarray, offset: int, s: Settings) -> Change | None:
    if len(x) < 2 * s.min_size:
        return None
    _, p = scan_p_value(x, s)
    if p >= s.alpha:
        return None
    t = l1_split(x, s.min_size)
    before, after = float(np.median(x[:t])), float(np.median(x[t:]))
    shift = abs(after - before)
    sigma = _robust_sigma(x, t)
    z = shift / sigma if sigma > 0 else (float("inf") if shift > 0 else 0.0)
    rel = shift / abs(before) if before else float("inf")
    if rel < s.min_effect or z < s.min_z:
        return None
    return Change(offset + t, before, after, p, z)


def find_changes(values: Sequence[float], settings: Settings = Settings()) -> list[Change]:
    """Every change of level in ``values`` (time order), earliest first."""
    x = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(x)):
        raise ValueError("a series with NaN or infinite values")
    found: list[Change] = []
    pending = [(0, len(x))]
    while pending:
        lo, hi = pending.pop()
        c = _one(x[lo:hi], lo, settings)
        if c is None:
            continue
        found.append(c)
        pending += [(lo, c.index), (c.index, hi)]
    return sorted(found, key=lambda c: c.index)
