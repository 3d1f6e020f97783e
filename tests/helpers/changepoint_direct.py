"""The change-point search computed directly: every interval's z for every permutation, every
interval's L1 cost summed element by element. What ``judge.changepoint`` computed before its
shortcuts, kept as the reference they must agree with (tests/judge/test_changepoint.py) and as the peer
of benchmarks/trend_search.py."""

from __future__ import annotations

import numpy as np

from clusterbench.judge import changepoint as cp


def l1_direct(x: np.ndarray, min_size: int, inner: bool) -> tuple[int, int]:
    """``changepoint.l1_interval``: the first candidate of least cost, each cost summed directly."""
    best, where = float("inf"), (0, len(x))
    tie = 1e-12 * min(1.0, cp._l1(x))   # within this of the best, the earlier candidate stays
    for i, j in zip(*cp._candidates(len(x), min_size, inner)):
        cost = cp._l1(x[i:j]) + cp._l1(np.concatenate([x[:i], x[j:]]))
        if cost < best - tie:
            best, where = cost, (int(i), int(j))
    return where


def p_direct(x: np.ndarray, s: cp.Settings, inner: bool) -> tuple[float, float]:
    """``changepoint.scan_p_value`` without a stop: every permutation, every interval's z."""
    n = len(x)
    i, j = cp._candidates(n, s.min_size, inner)
    ranks = cp._ranks(x)
    _, counts = np.unique(x, return_counts=True)
    tie = float(np.sum(counts ** 3 - counts)) / (n * (n - 1))
    var = (j - i) * (n - (j - i)) / 12.0 * ((n + 1) - tie)
    if np.any(var <= 0):
        return 0.0, 1.0
    observed = float(cp._max_z(ranks, i, j, var))
    rng = np.random.default_rng(s.seed)
    exceed = 0
    block = max(1, 2_000_000 // (len(i) + n))   # rows of permutations at a time: bounded memory
    for start in range(0, s.permutations, block):
        perms = rng.permuted(np.tile(ranks, (min(block, s.permutations - start), 1)), axis=1)
        exceed += int(np.sum(cp._max_z(perms, i, j, var) >= observed - 1e-9))
    return observed, (1 + exceed) / (s.permutations + 1)


def changes_direct(x: np.ndarray, s: cp.Settings) -> list[tuple]:
    """``changepoint.find_changes`` as (index, before, after, p_value, z) tuples."""
    found: list[tuple] = []
    pending = [(0, len(x))]
    while pending:
        lo, hi = pending.pop()
        part = x[lo:hi]
        if len(part) < 2 * s.min_size:
            continue
        inner = False
        _, p = p_direct(part, s, False)
        if p >= s.alpha / 2:
            inner = True
            _, p = p_direct(part, s, True)
            if p >= s.alpha / 2:
                continue
        i, j = l1_direct(part, s.min_size, inner)
        inside, outside = part[i:j], np.concatenate([part[:i], part[j:]])
        a, b = float(np.median(outside)), float(np.median(inside))
        shift = abs(b - a)
        resid = np.concatenate([inside - b, outside - a])
        sigma = cp.MAD_TO_SIGMA * float(np.median(np.abs(resid)))
        z = shift / sigma if sigma > 0 else (float("inf") if shift > 0 else 0.0)
        ref = max(abs(v) for v in ([a] if i > 0 else []) + ([b] if j < len(part) else []))
        rel = shift / ref if ref else float("inf")
        if rel < s.min_effect or z < s.min_z:
            continue
        if i > 0:
            found.append((lo + i, a, b, p, z))
        if j < len(part):
            found.append((lo + j, b, a, p, z))
        pending += [(lo + c, lo + d) for c, d in ((0, i), (i, j), (j, hi - lo)) if d > c]
    return sorted(found, key=lambda c: c[0])
