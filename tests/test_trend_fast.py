"""The change-point search's fast paths against the plain computation they replace.

``l1_interval`` computes every candidate's L1 cost through a wavelet matrix and checks only the
candidates that can win exactly; the permutation scan bounds whole bands of intervals before it
computes their z; ``stop_at`` ends the permutations once the answer cannot be significant. Each
must give exactly what the direct computation gives: the same interval, the same count, the same
p-value, the same changes.
"""

from __future__ import annotations

import numpy as np
import pytest

from clusterbench.judge import changepoint as cp


def _l1_direct(x: np.ndarray, min_size: int, inner: bool) -> tuple[int, int]:
    best, where = float("inf"), (0, len(x))
    for i, j in zip(*cp._candidates(len(x), min_size, inner)):
        cost = cp._l1(x[i:j]) + cp._l1(np.concatenate([x[:i], x[j:]]))
        if cost < best - 1e-12:
            best, where = cost, (int(i), int(j))
    return where


def _p_direct(x: np.ndarray, s: cp.Settings, inner: bool) -> tuple[float, float]:
    n = len(x)
    i, j = cp._candidates(n, s.min_size, inner)
    ranks = cp._ranks(x)
    _, counts = np.unique(x, return_counts=True)
    tie = float(np.sum(counts ** 3 - counts)) / (n * (n - 1))
    var = (j - i) * (n - (j - i)) / 12.0 * ((n + 1) - tie)
    if np.any(var <= 0):
        return 0.0, 1.0
    observed = float(cp._max_z(ranks, i, j, var))
    perms = np.random.default_rng(s.seed).permuted(np.tile(ranks, (s.permutations, 1)), axis=1)
    exceed = int(np.sum(cp._max_z(perms, i, j, var) >= observed - 1e-9))
    return observed, (1 + exceed) / (s.permutations + 1)


def _series(rng: np.random.Generator, n: int) -> np.ndarray:
    """Noise at several scales and offsets, with a shifted stretch or not, rounded or not (ties)."""
    x = rng.normal(0, 1, n) * rng.choice([1.0, 1e-3, 1e6]) + rng.choice([0.0, 100.0, 1e6, -50.0])
    kind = int(rng.integers(0, 4))
    if kind >= 1:
        a = int(rng.integers(0, n))
        b = int(rng.integers(a, n + 1))
        x[a:b] += rng.normal(0, 3) * float(np.std(x)) + rng.normal(0, 1)
    if kind == 3:
        x = np.round(x, int(rng.integers(0, 2)))
    return x


def test_smallest_sums_match_sorting():
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 7, 16, 33):
        values = np.round(rng.normal(0, 5, n), 1)   # ties too
        sums = cp._SmallestSums(values)
        lo, hi, k = [], [], []
        for a in range(n):
            for b in range(a, n + 1):
                for c in range(b - a + 1):
                    lo.append(a)
                    hi.append(b)
                    k.append(c)
        got = sums.smallest(np.array(lo), np.array(hi), np.array(k))
        want = [float(np.sum(np.sort(values[a:b])[:c])) for a, b, c in zip(lo, hi, k)]
        assert np.allclose(got, want, rtol=0, atol=1e-9), n


@pytest.mark.parametrize("seed", range(4))
def test_l1_interval_is_the_direct_search(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        x = _series(rng, int(rng.integers(4, 70)))
        m = int(rng.integers(1, 5))
        for inner in (False, True):
            assert cp.l1_interval(x, m, inner) == _l1_direct(x, m, inner)


def test_l1_interval_with_exact_ties_takes_the_first():
    # Many intervals cost exactly the same; the direct rule keeps the first in candidate order.
    x = np.array([1.0, 1.0, 1.0, 5.0, 5.0, 5.0, 1.0, 1.0, 1.0, 5.0, 5.0, 5.0])
    for inner in (False, True):
        assert cp.l1_interval(x, 3, inner) == _l1_direct(x, 3, inner)
    flat = np.full(20, 7.25)
    assert cp.l1_interval(flat, 3) == _l1_direct(flat, 3, True)


@pytest.mark.parametrize("seed", range(3))
def test_scan_p_value_is_the_direct_count(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(12):
        x = _series(rng, int(rng.integers(6, 90)))
        s = cp.Settings(min_size=int(rng.integers(2, 5)), permutations=199, seed=seed)
        for inner in (False, True):
            assert cp.scan_p_value(x, s, inner) == _p_direct(x, s, inner)


def test_scan_on_a_long_series_uses_the_bands_and_counts_the_same():
    # Long enough that the inner scan goes through the band bounds.
    rng = np.random.default_rng(7)
    x = 100 + rng.normal(0, 1, 160)
    x[50:62] -= 1.2
    s = cp.Settings(permutations=99)
    i, j = cp._candidates(len(x), s.min_size, True)
    assert len(i) > 8 * len(x)
    assert cp.scan_p_value(x, s, inner=True) == _p_direct(x, s, inner=True)


def test_bands_cover_every_candidate_once():
    for n in (6, 7, 40, 161):
        i, j = cp._candidates(n, 3, True)
        where = np.concatenate([w for _, _, w in cp._bands(n, i, j)])
        assert sorted(where.tolist()) == list(range(len(i)))
        for a, b, w in cp._bands(n, i, j):
            k = j[w] - i[w]
            assert np.all((np.minimum(k, n - k) >= a) & (np.minimum(k, n - k) <= b))


def test_stop_at_only_ends_what_cannot_be_significant():
    rng = np.random.default_rng(3)
    s = cp.Settings(permutations=999)
    noise = 10 + rng.normal(0, 1, 60)
    _, full = cp.scan_p_value(noise, s, inner=True)
    _, early = cp.scan_p_value(noise, s, inner=True, stop_at=s.alpha / 2)
    assert full >= s.alpha / 2 and s.alpha / 2 <= early <= full
    step = np.concatenate([10 + rng.normal(0, 0.1, 30), 5 + rng.normal(0, 0.1, 30)])
    assert cp.scan_p_value(step, s, stop_at=s.alpha / 2) == cp.scan_p_value(step, s)


def test_find_changes_unchanged_on_shifted_stretches():
    # The whole search, fast paths together, against the direct pieces it is made of.
    rng = np.random.default_rng(11)
    for _ in range(20):
        x = _series(rng, int(rng.integers(12, 60)))
        s = cp.Settings(permutations=199)
        direct = _changes_direct(x, s)
        assert [(c.index, c.before, c.after, c.p_value, c.z) for c in cp.find_changes(x, s)] == direct


def _changes_direct(x: np.ndarray, s: cp.Settings) -> list[tuple]:
    found: list[tuple] = []
    pending = [(0, len(x))]
    while pending:
        lo, hi = pending.pop()
        part = x[lo:hi]
        if len(part) < 2 * s.min_size:
            continue
        inner = False
        _, p = _p_direct(part, s, False)
        if p >= s.alpha / 2:
            inner = True
            _, p = _p_direct(part, s, True)
            if p >= s.alpha / 2:
                continue
        i, j = _l1_direct(part, s.min_size, inner)
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
