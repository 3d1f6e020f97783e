import math

import pytest

from clusterbench.judge.stats import betainc, summarize, t_ppf, t_sf_two_sided, welch


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
    assert r.p == 0.0
