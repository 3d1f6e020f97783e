"""Tests of clusterbench.judge.stats."""

import math
import random

import pytest

from clusterbench.judge.stats import (
    adjust,
    benjamini_hochberg,
    betainc,
    holm,
    separated_rank_p,
    summarize,
    t_ppf,
    t_sf_two_sided,
    welch,
)

# The worked example of Benjamini and Hochberg (1995), section 4.2: the 15 p-values of a trial of
# a treatment after myocardial infarction (Neuhaus et al. 1992), sorted.
BH_EXAMPLE = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240,
              0.4262, 0.5719, 0.6528, 0.7590, 1.0000]


def test_benjamini_hochberg_on_the_papers_example():
    # By hand: p(i) * 15 / i, then the smallest value at or above each rank.
    # i=5: 0.0603; i=6: 0.0695 > i=7's 0.063857, which it takes; i=9: 0.0765; i=10: 0.486 ...
    want = [0.0015, 0.003, 0.0095, 0.035625, 0.0603, 0.0298 * 15 / 7, 0.0298 * 15 / 7, 0.0645, 0.0765,
            0.486, 0.4262 * 15 / 11, 0.5719 * 15 / 12, 0.6528 * 15 / 13, 0.7590 * 15 / 14, 1.0]
    got = benjamini_hochberg(BH_EXAMPLE)
    assert got == pytest.approx(want, rel=1e-12)
    # The paper: at q = 0.05 the procedure rejects the four smallest (p(4) = 0.0095 <= 4/15 x
    # 0.05), where Bonferroni-type procedures reject three.
    assert [q < 0.05 for q in got] == [True] * 4 + [False] * 11


def test_holm_on_the_same_example():
    # By hand: p(i) * (15 - i + 1), then the largest value so far; 0.05/12 < p(4) stops at three.
    want = [0.0015, 0.0056, 0.0247, 0.114, 0.2211, 0.278, 0.278, 0.278, 0.3213] + [1.0] * 6
    got = holm(BH_EXAMPLE)
    assert got == pytest.approx(want, rel=1e-12)
    assert sum(q < 0.05 for q in got) == 3


def test_adjusted_p_values_keep_the_given_order():
    # Holm's procedure by hand on 0.01, 0.04, 0.03, 0.005: sorted 0.005 x 4 = 0.02, 0.01 x 3 =
    # 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 raised to 0.06.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: 0.005 x 4 = 0.02, 0.01 x 2 = 0.02, 0.03 x 4/3 = 0.04, 0.04 x 1 = 0.04
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])


@pytest.mark.parametrize("method", ["holm", "fdr"])
def test_edge_cases(method):
    assert adjust([], method) == []
    assert adjust([0.03], method) == [0.03]         # one row: nothing to adjust against
    assert adjust([1.0, 1.0], method) == [1.0, 1.0]
    assert adjust([1.0, 0.0], method) == [1.0, 0.0]
    # ties get one value, whatever order they come in
    tied = adjust([0.02, 0.01, 0.02, 0.02], method)
    assert tied[0] == tied[2] == tied[3] and tied[1] <= tied[0]
    assert holm([0.02] * 4) == [0.08] * 4 and benjamini_hochberg([0.02] * 4) == [0.02] * 4
    # no adjusted value above 1, none below its own p
    ps = [0.3, 0.6, 0.9, 0.45, 0.01]
    assert all(p <= q <= 1.0 for p, q in zip(ps, adjust(ps, method), strict=True))
    with pytest.raises(ValueError):
        adjust([0.5, math.nan], method)
    with pytest.raises(ValueError):
        adjust([1.5], method)


def test_none_changes_nothing_and_unknown_is_refused():
    assert adjust([0.3, 0.01], "none") == [0.3, 0.01]
    with pytest.raises(ValueError):
        adjust([0.3], "bonferroni")


def test_adjusted_p_values_are_monotone_in_the_raw_ones():
    rng = random.Random(3)
    for _ in range(200):
        ps = [rng.random() ** rng.choice((1, 3, 8)) for _ in range(rng.randint(1, 40))]
        if rng.random() < 0.3:
            ps += ps[: rng.randint(1, len(ps))]    # ties
        for method in ("holm", "fdr"):
            qs = adjust(ps, method)
            pairs = sorted(zip(ps, qs, strict=True))
            assert all(q1 <= q2 for (_, q1), (_, q2) in zip(pairs, pairs[1:], strict=False)), (method, ps)
            assert all(p <= q <= 1.0 for p, q in pairs)
        # BH never stricter than Holm: it controls a weaker error
        assert all(b <= h + 1e-15 for b, h in zip(benjamini_hochberg(ps), holm(ps), strict=True))


def test_summary():
    s = summarize([2, 4, 4, 4, 5, 5, 7, 9])
    assert s.n == 8 and s.mean == 5
    assert math.isclose(s.sd, math.sqrt(32 / 7))
    assert math.isclose(s.cv, math.sqrt(32 / 7) / 5)
    assert summarize([3.0]).sd == 0.0
    with pytest.raises(ValueError):
        summarize([])


@pytest.mark.parametrize("df, q975", [(1, 12.7062047), (2, 4.3026527), (5, 2.5705818),
                                      (10, 2.2281389), (30, 2.0422725), (1000, 1.9623391)])
def test_t_quantiles_match_tables(df, q975):
    assert math.isclose(t_ppf(0.975, df), q975, rel_tol=1e-6)
    assert math.isclose(t_ppf(0.025, df), -q975, rel_tol=1e-6)


def test_t_tail_known_values():
    # t=2.228 with 10 df is the 5% two-sided point; t=1 with 1 df (Cauchy) is 0.5.
    assert math.isclose(t_sf_two_sided(2.2281389, 10), 0.05, rel_tol=1e-6)
    assert math.isclose(t_sf_two_sided(1.0, 1), 0.5, rel_tol=1e-9)
    assert t_sf_two_sided(0.0, 7) == pytest.approx(1.0)


def test_betainc_symmetric_case():
    assert math.isclose(betainc(2, 2, 0.5), 0.5)
    assert math.isclose(betainc(1, 1, 0.3), 0.3)  # uniform distribution


def test_welch_known_example():
    # The definition spelled out: Welch-Satterthwaite df and a t-quantile half width.
    a = [19.1, 20.4, 21.2, 19.8, 20.6, 20.0]
    b = [21.5, 22.9, 20.8, 23.4, 22.0, 21.7, 22.6]
    r = welch(a, b)
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    assert math.isclose(r.diff, mb - ma)
    va = summarize(a).sd ** 2 / len(a)
    vb = summarize(b).sd ** 2 / len(b)
    assert math.isclose(r.t, (mb - ma) / math.sqrt(va + vb))
    df = (va + vb) ** 2 / (va ** 2 / 5 + vb ** 2 / 6)
    assert math.isclose(r.df, df)
    assert r.p < 0.01
    half = t_ppf(0.975, df) * math.sqrt(va + vb)
    assert math.isclose(r.ci_low, r.diff - half) and math.isclose(r.ci_high, r.diff + half)
    assert r.ci_low > 0


def test_welch_classic_textbook_values():
    # Equal n and variances: Welch reduces to Student with df = 2n - 2.
    a = [1.0, 2.0, 3.0, 4.0, 5.0]
    b = [3.0, 4.0, 5.0, 6.0, 7.0]
    r = welch(a, b)
    assert math.isclose(r.t, 2.0)  # diff 2, se sqrt(2.5/5 * 2) = 1
    assert math.isclose(r.df, 8.0)
    assert math.isclose(r.p, 0.0805162, rel_tol=1e-5)  # 2*(1-pt(2, 8))


def test_welch_degenerate():
    assert welch([1.0], [2.0, 3.0]) is None
    r = welch([5.0, 5.0], [5.0, 5.0])
    assert r.p == 1.0 and r.diff == 0
    r = welch([5.0, 5.0], [6.0, 6.0])
    assert r.p == pytest.approx(1 / 3)   # no spread: the exact rank test, 2 / C(4, 2)


def test_cv_is_undefined_for_one_value_or_a_zero_mean():
    one = summarize([3.0])
    assert one.cv is None and one.known_sd is None  # was 0.0: "perfectly steady"
    zero = summarize([-1.0, 1.0, 0.0])
    assert zero.mean == 0 and zero.known_sd == 1.0 and zero.cv is None
    assert summarize([1.0, 3.0]).cv == pytest.approx(math.sqrt(2) / 2)
    assert summarize([-1.0, -3.0]).cv == pytest.approx(math.sqrt(2) / 2)  # a spread, not negative


def test_summary_keeps_its_digits_at_any_magnitude():
    # Squares of 1e-170 underflowed to an sd of 0 (and a CV of 0); of 1e200 overflowed.
    for scale in (1e-170, 1e-300, 1.0, 1e200, 1e305):
        s = summarize([1 * scale, 2 * scale, 3 * scale])
        assert math.isclose(s.mean, 2 * scale, rel_tol=1e-15) and math.isclose(s.sd, scale, rel_tol=1e-15)
    assert summarize([1e308, 1e308, 1.5e308]).mean == pytest.approx(1e308 / 6 * 7)
    s = summarize([1e15 + 1, 1e15 + 2, 1e15 + 3])  # catastrophic cancellation for a one-pass sum
    assert s.mean == 1e15 + 2 and s.sd == 1.0
    s = summarize([1e9 + 0.1, 1e9 + 0.2, 1e9 + 0.3, 1e9 + 0.4])
    assert math.isclose(s.sd, math.sqrt(5 / 3) / 10, rel_tol=1e-6)


def test_welch_is_scale_free():
    a, b = [1.0, 1.0001, 0.9999], [2.0, 2.0001, 2.0002]
    ref = welch(a, b)
    for scale in (1e-170, 1e200):
        r = welch([v * scale for v in a], [v * scale for v in b])
        # 1e-170 was "certain" (sd 0, p 0, CI of width 0); 1e200 raised OverflowError
        assert math.isclose(r.t, ref.t, rel_tol=1e-12) and math.isclose(r.df, ref.df, rel_tol=1e-12)
        assert math.isclose(r.p, ref.p, rel_tol=1e-9)
        assert math.isclose(r.ci_high - r.ci_low, (ref.ci_high - ref.ci_low) * scale, rel_tol=1e-9)


def test_welch_does_not_test_values_that_are_not_finite():
    # p was nan, which every threshold check reads as "significant"
    assert welch([1.0, 2.0], [math.inf, 1.0, 2.0]) is None
    assert welch([math.inf, math.inf], [math.inf, math.inf]) is None
    assert welch([1.0, 2.0], [1e308, -1e308, 1e308]) is not None
    assert welch([-1e308, -1e308, -1.5e308], [1e308, 1e308, 1.5e308]) is None  # B - A overflows


# Two-sided tails at 30 digits (the incomplete beta at high precision, and closed forms).
@pytest.mark.parametrize("t, df, p", [
    (2.0, 3.0, 0.139325968558843),
    (0.5, 1.01, 0.704173039943817),
    (1e-8, 1.0, 1 - 2 / math.pi * math.atan(1e-8)),   # near 1: was off by 3e-9 (relative)
    (1e200, 1.0, 2 / math.pi / 1e200),                # |t| past 1e154: was 0
    (2.0, 1e12, 0.0455002638966284),                  # huge df: was 0.045503
    (1.0, 1e15, 0.317310507862914),                   # was 0.73
    (3.0, 1e6, 0.0026998625414218),
    (5.0, math.inf, math.erfc(5 / math.sqrt(2))),
])
def test_t_tail_reference_values(t, df, p):
    assert math.isclose(t_sf_two_sided(t, df), p, rel_tol=1e-9)


def test_t_tail_refuses_nan():
    with pytest.raises(ValueError):
        t_sf_two_sided(math.nan, 3.0)
    with pytest.raises(ValueError):
        t_sf_two_sided(1.0, math.nan)


def test_t_quantile_is_relatively_precise_near_the_centre_and_in_the_far_tail():
    # For p just above 0.5 the quantile is (p - 0.5) / density at 0; it was 1e-8 for 3e-12.
    df = 10.0
    density0 = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    assert math.isclose(t_ppf(0.5 + 1e-12, df), 1e-12 / density0, rel_tol=1e-3)
    # Cauchy (df 1): the p quantile is tan(pi (p - 1/2)); was capped at -1.3e154.
    assert math.isclose(t_ppf(1e-300, 1.0), -1 / (math.pi * 1e-300), rel_tol=1e-9)
    assert math.isclose(t_ppf(1 - 1e-9, 1.0), math.tan(math.pi * (0.5 - 1e-9)), rel_tol=1e-6)


def test_betainc_continued_fraction_runs_to_convergence():
    # Near the mean of Beta(a, a) the fraction needs about sqrt(a) terms; a fixed 500 stopped
    # short without a word (0.5000001 at a = 4e6).
    assert betainc(4e6, 4e6, 0.5) == pytest.approx(0.5, abs=1e-8)
    assert betainc(1e6, 1e6, 0.5005) + betainc(1e6, 1e6, 0.4995) == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize(("n_a", "n_b", "p"), [(3, 3, 2 / 20), (5, 5, 2 / 252), (2, 5, 2 / 21), (2, 2, 2 / 6)])
def test_no_spread_on_either_side_is_the_exact_rank_p_never_0(n_a: int, n_b: int, p: float) -> None:
    """Welch's t is 0/0 there; p was 0. Every value of A below every value of B is the most
    extreme arrangement a rank test knows: 2 / C(n_a + n_b, n_a), both directions."""
    r = welch([100.0] * n_a, [101.0] * n_b)
    assert r is not None and r.p == pytest.approx(p, rel=1e-12)
    assert r.p == pytest.approx(separated_rank_p(n_a, n_b), rel=1e-12)
    assert r.diff == 1.0 and r.ci_low is None and r.ci_high is None   # no spread: no interval
    down = welch([101.0] * n_a, [100.0] * n_b)
    assert down is not None and down.p == r.p and down.diff == -1.0
    same = welch([100.0] * n_a, [100.0] * n_b)
    assert same is not None and same.p == 1.0 and same.ci_low is None


def test_rank_p_is_capped_at_1_and_never_negative() -> None:
    assert separated_rank_p(1, 1) == 1.0      # 2 / C(2, 1) = 1
    assert 0.0 < separated_rank_p(400, 400) < 1e-200 and separated_rank_p(541, 541) == 0.0


def test_one_side_without_spread_is_still_welch() -> None:
    r = welch([100.0, 100.0, 100.0], [101.0, 102.0, 103.0])
    assert r is not None and 0 < r.p < 1 and r.ci_low is not None and r.ci_low < r.diff < r.ci_high
    assert r.df == pytest.approx(2.0)   # only B's spread: n_b - 1
