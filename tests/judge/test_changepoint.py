"""Tests of clusterbench.judge.changepoint: where a series of runs changed level."""

from __future__ import annotations

import itertools
import math
import random
import re

import numpy as np
import pytest
from changepoint_direct import changes_direct as _changes_direct
from changepoint_direct import l1_direct as _l1_direct
from changepoint_direct import p_direct as _p_direct
from fleet_helpers import real_measurements
from histories import A3MEGA, BABEL, _step
from paths import ROOT

from clusterbench.judge import changepoint as cp
from clusterbench.judge.changepoint import (
    Settings,
    _candidates,
    _max_z,
    find_changes,
    l1_interval,
    runs_needed,
    scan_p_value,
    smallest_p_value,
)


def _noise_history(rng: np.random.Generator, level: float) -> np.ndarray:
    n = int(rng.integers(8, 41))
    cv = float(rng.choice([0.01, 0.03, 0.08]))
    x = level * (1 + rng.normal(0, cv, n))
    wild = rng.random(n) < 0.05           # now and then one run far off (a busy node)
    x[wild] *= rng.uniform(0.5, 0.9, int(wild.sum()))
    return x


NOISE = [0.01, -0.01, 0.02, -0.02, 0.0, 0.01]


def _candidates_by_loop(n: int, min_size: int, inner: bool) -> tuple[list[int], list[int]]:
    """Every interval [i, j) a change can bound, pair by pair, in the order the scan uses."""
    ii, jj = [], []
    for i in ([0, *range(min_size, n - min_size + 1)] if inner else [0]):
        for j in range(i + min_size, n + 1):
            prefix_all = i == 0 and j == n
            short_tail = j < n and n - j < min_size
            if not prefix_all and not short_tail and n - (j - i) >= min_size:
                ii.append(i)
                jj.append(j)
    return ii, jj


def _series(rng: np.random.Generator, n: int) -> np.ndarray:
    """Noise at several scales and offsets, with a shifted stretch or not, rounded or not (ties)."""
    scale = rng.choice([1.0, 1e-3, 1e6, 1e-15, 1e-300])
    x = rng.normal(0, 1, n) * scale + rng.choice([0.0, 100.0, 1e6, -50.0]) * min(1.0, scale * 1e3)
    kind = int(rng.integers(0, 4))
    if kind >= 1:
        a = int(rng.integers(0, n))
        b = int(rng.integers(a, n + 1))
        x[a:b] += rng.normal(0, 3) * float(np.std(x)) + rng.normal(0, 1)
    if kind == 3:
        x = np.round(x, int(rng.integers(0, 2)))
    return x


def test_smallest_p_value_of_a_long_history_does_not_overflow():
    from clusterbench.judge.changepoint import Settings, smallest_p_value

    # before: OverflowError from 2 x 516 runs on (C(1032, 516) is past the largest float)
    assert 0 < smallest_p_value(1032, Settings(min_size=2)) < 1e-307
    assert smallest_p_value(2000, Settings(min_size=2)) == 0.0
    assert smallest_p_value(20, Settings(min_size=2)) == 2 / math.comb(20, 10)


def test_no_false_alarm_in_200_noise_histories_from_real_values():
    levels = [m.value for m in real_measurements(A3MEGA) if m.metric == "busbw" and m.value > 1]
    levels += [m.value for m in real_measurements(BABEL)]
    rng = np.random.default_rng(20250301)
    alarms = []
    for trial in range(200):
        x = _noise_history(rng, levels[trial % len(levels)])
        found = find_changes(x)
        if found:
            alarms.append((trial, len(x), [(c.index, round(c.relative, 3), c.p_value) for c in found]))
    assert alarms == []


@pytest.mark.parametrize("at", [3, 6, 10, 14])
def test_a_clear_step_is_found_exactly_at_its_run(at):
    levels = [m.value for m in real_measurements(BABEL) if m.params.get("kernel") == "Triad"]
    rng = random.Random(at)
    x = [levels[at % len(levels)] * (1 + rng.gauss(0, 0.02)) * (0.85 if i >= at else 1) for i in range(20)]
    found = find_changes(x)
    assert [c.index for c in found] == [at]
    assert found[0].relative == pytest.approx(-0.15, abs=0.03)


def test_scan_statistics():
    # identical values: nothing to find (no division by zero)
    assert scan_p_value([5.0] * 10) == (0.0, 1.0)
    assert find_changes([5.0] * 10) == []
    # too short for min_size on both sides
    assert find_changes([1, 2, 3, 4, 5]) == []
    # perfectly separated halves: the smallest p the permutations can give
    obs, p = scan_p_value([10] * 8 + [5] * 8, Settings(permutations=999))
    assert p == pytest.approx(1 / 1000)
    # the L1 search finds the gap even when the first value after it is the best of its level
    assert l1_interval([10, 10.1, 9.9, 10, 10.05, 8.9, 8.5, 8.4, 8.6, 8.5], 3, inner=False) == (0, 5)
    with pytest.raises(ValueError):
        find_changes([1.0, float("nan")] * 5)
    # deterministic: the same history, the same p-value
    x = list(np.random.default_rng(1).normal(0, 1, 30))
    assert scan_p_value(x) == scan_p_value(x)


@pytest.mark.parametrize("scale", [1e-15, 1e-300])
def test_trend_tiny_values_find_the_one_step(scale):
    """A fixed 1e-12 tie margin in the L1 location swallowed every cost of tiny values: the first
    candidate won and steps were reported every 3 runs inside flat stretches."""
    x = [(100.0 + (i % 3)) * scale for i in range(15)] + [(80.0 + (i % 3)) * scale for i in range(15)]
    assert [c.index for c in find_changes(x)] == [15]
    assert l1_interval(x, 3, inner=False) == (0, 15)


@pytest.mark.parametrize(("before", "after"), [(100.0, 98.02), (98.02, 100.0), (100.0, 97.9), (97.9, 100.0)])
def test_min_effect_is_relative_to_the_level_before(before: float, after: float) -> None:
    """A change is reported exactly when |after - before| / |before| (what it says as its
    change_pct) reaches --min-effect, up or down alike."""
    x = [before + e for e in NOISE] + [after + e for e in NOISE]
    found = find_changes(x, Settings(min_effect=0.02))
    b, a = float(np.median(x[:6])), float(np.median(x[6:]))
    expected = abs(a - b) / abs(b) >= 0.02
    assert bool(found) == expected, (found, abs(a - b) / abs(b))
    for c in found:
        assert abs(c.relative) >= 0.02
        assert c.index == 6 and c.before == pytest.approx(b) and c.after == pytest.approx(a)


@pytest.mark.parametrize("min_size", [1, 2, 3, 5])
@pytest.mark.parametrize("inner", [True, False])
def test_change_point_candidates_are_every_interval_in_order(min_size, inner):
    for n in range(0, 30):
        i, j = _candidates(n, min_size, inner)
        want_i, want_j = _candidates_by_loop(n, min_size, inner)
        assert i.dtype == j.dtype == np.asarray([0], dtype=int).dtype
        assert i.tolist() == want_i and j.tolist() == want_j


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


def test_huge_levels_are_found_without_overflow():
    # np.median of two 1.7e308 is inf: the levels came back infinite (null in --json)
    (c,) = find_changes([1.7e308] * 6 + [0.8e308] * 6)
    assert (c.index, c.before, c.after) == (6, 1.7e308, 0.8e308)
    assert c.relative == pytest.approx(-0.9 / 1.7)
    # the same series scaled down finds the same change at the same p-value
    (small,) = find_changes([1.7] * 6 + [0.8] * 6)
    assert (small.index, small.p_value) == (c.index, c.p_value)


@pytest.mark.parametrize("n", [6, 7, 8, 9])
def test_smallest_p_value_is_the_exact_chance_of_the_cleanest_step(n):
    """Over every order of n ranks, the share whose largest standardized U reaches that of a
    clean step is q = 2 / C(2m, m), as smallest_p_value assumes."""
    i, j = _candidates(n, 3, inner=False)
    k = j - i
    var = k * (n - k) / 12.0 * (n + 1)
    perms = np.array(list(itertools.permutations(range(1, n + 1))), dtype=float)
    observed = float(_max_z(np.arange(1, n + 1, dtype=float)[None, :], i, j, var)[0])
    q = float(np.mean(_max_z(perms, i, j, var) >= observed - 1e-9))
    m = n // 2
    assert q == pytest.approx(2 / math.comb(2 * m, m)) and smallest_p_value(n) == pytest.approx(q)


@pytest.mark.parametrize("alpha", [0.1, 0.05, 0.01, 0.005, 0.002])
def test_runs_needed_is_tight(alpha):
    s = Settings(alpha=alpha)
    needed = runs_needed(s)
    assert needed is not None and needed >= 2 * s.min_size
    # the cleanest step one run shorter shows nothing; at the length needed it is found
    assert find_changes(_step(needed - 1, (needed - 1) // 2), s) == []
    assert [c.index for c in find_changes(_step(needed, needed // 2), s)] == [needed // 2]


def test_runs_needed_at_the_default_and_the_floor():
    assert runs_needed() == 12   # a 10-run series: 2/252 > 0.005
    assert runs_needed(Settings(min_size=10)) == 20
    assert runs_needed(Settings(alpha=0.001)) is None   # p never below 1/2000 = alpha / 2


def test_the_docs_table_is_what_the_code_computes():
    doc = (ROOT / "docs" / "judge.md").read_text()
    head = re.search(r"^\| `--alpha` \|(.*)\|$", doc, re.M)
    runs = re.search(r"^\| runs \|(.*)\|$", doc, re.M)
    assert head and runs
    alphas = [float(a.split()[0]) for a in head.group(1).split("|")]
    needed = [int(r) for r in runs.group(1).split("|")]
    assert needed == [runs_needed(Settings(alpha=a)) for a in alphas]


def test_many_series_at_once_are_cleared_exactly_as_one_by_one():
    """``may_change`` says False only where ``find_changes`` finds nothing: histories of every
    kind and length, ties and constant ones included."""
    from clusterbench.judge.changepoint import may_change

    rng = np.random.default_rng(11)
    series = []
    for k in range(240):
        n = int(rng.choice([3, 6, 7, 12, 20, 33, 60]))
        x = 100 + rng.normal(0, 1, n)
        kind = k % 6
        if kind == 1:
            x[n // 2:] -= 10
        elif kind == 2:
            x = np.round(x)
        elif kind == 3:
            x = np.full(n, 5.0)
        elif kind == 4:
            x[n // 3:n // 3 + max(3, n // 5)] -= 8
        elif kind == 5:
            x[n // 2:] -= 0.6
        series.append(list(x))
    flags = may_change(series)
    found = [find_changes(x) for x in series]
    assert all(f or not c for f, c in zip(flags, found))
    assert flags.count(False) > 100 and all(flags[k] for k, c in enumerate(found) if c)


def test_the_scan_statistic_by_length_is_the_one_over_all_intervals():
    from clusterbench.judge.changepoint import _candidates, _max_z, _max_z_by_length, _ranks, _tie

    rng = np.random.default_rng(5)
    for n in (6, 7, 12, 31):
        for inner in (False, True):
            i, j = _candidates(n, 3, inner)
            x = rng.normal(size=(4, n))
            x[:, 1] = x[:, 2]   # a tie
            ranks = np.array([_ranks(r) for r in x])
            tie = np.array([_tie(r) for r in x])
            k = j - i
            var = k * (n - k) / 12.0 * ((n + 1) - tie[:, None])
            assert np.array_equal(_max_z(ranks, i, j, var), _max_z_by_length(ranks, n, 3, inner, tie))


def test_blocks_of_permutations_stop_where_the_whole_count_would_say_the_same():
    from clusterbench.judge.changepoint import _not_significant, _ranks, _tie

    rng = np.random.default_rng(9)
    s = Settings()
    for n in (12, 25):
        xs = [100 + rng.normal(0, 1, n) for _ in range(30)] + [np.r_[np.zeros(n // 2), np.ones(n - n // 2) * 3]
                                                               + rng.normal(0, 0.1, n)]
        ranks = np.array([_ranks(x) for x in xs])
        tie = np.array([_tie(x) for x in xs])
        for inner in (False, True):
            quiet = _not_significant(ranks, tie, n, s, inner)
            one_by_one = [scan_p_value(x, s, inner=inner, stop_at=s.alpha / 2)[1] >= s.alpha / 2 for x in xs]
            assert list(quiet) == one_by_one


def _fleet_series(count: int = 300, n: int = 40) -> list[list[float]]:
    rng = np.random.default_rng(3)
    series = []
    for k in range(count):
        x = 100 + rng.normal(0, 1, n)
        if k % 7 == 0:
            x[n // 2:] -= 4   # a step
        series.append(list(x))
    return series


def test_the_work_split_in_two_gives_the_answers_of_one_process(monkeypatch):
    """Above SPLIT_WORK half the series go to a forked child: where the fork fails (as here, a
    unit test starts no process) they are computed in this one, with the same answers."""
    import os

    from clusterbench.judge import changepoint as cp

    series = _fleet_series()
    one = cp.may_change(series)

    def no_fork():
        raise OSError("fork refused")

    monkeypatch.setattr(cp, "SPLIT_WORK", 1)
    monkeypatch.setattr(cp, "usable_cores", lambda: 2)
    monkeypatch.setattr(os, "fork", no_fork)
    assert cp.may_change(series) == one and one.count(True) >= 300 // 7
