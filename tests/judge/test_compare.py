"""Tests of clusterbench.judge.compare."""

import math
import random

import pytest
from adjust_trials import LARGE, base_sweep, simulate, sweep_runs
from judged_rows import _criterion, _rows, _stream_rows, _unit_row, rows_judge_compare

from clusterbench.families.base import iteration_stats
from clusterbench.judge import compare as compare_display
from clusterbench.judge.compare import (
    DEFAULT_ADJUST,
    INSUFFICIENT,
    SAME,
    common_unit,
    compare,
    family_size,
)
from clusterbench.judge.profiles import Profile
from clusterbench.judge.select import Row
from clusterbench.judge.stats import summarize
from clusterbench.judge.validate import ERROR, evaluate
from clusterbench.records import Measurement, Run


def exact_sample(n: int, mean: float, sd: float, seed: int) -> list[float]:
    """n values with exactly this sample mean and standard deviation."""
    rng = random.Random(seed)
    xs = [rng.gauss(0, 1) for _ in range(n)]
    m = sum(xs) / n
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return [mean + sd * (x - m) / s for x in xs]


def test_a_spread_past_the_largest_float_is_not_called_an_infinite_value():
    from clusterbench.judge.compare import INSUFFICIENT, judge
    from clusterbench.judge.stats import summarize

    ordinary, wide, infinite = summarize([1.0, 2.0, 3.0]), summarize([1.7e308, -1.7e308]), summarize([1.0, math.inf])
    args = dict(alpha=0.05, min_effect=0.02, max_cv=0.1)
    assert judge(ordinary, wide, None, True, **args) == (
        INSUFFICIENT, "the spread of B's values is past the largest float: cannot test")
    assert judge(infinite, wide, None, True, **args) == (INSUFFICIENT, "a value of A is not finite: cannot test")


def test_default_is_fdr():
    assert DEFAULT_ADJUST == "fdr"


def test_chance_rows_go_while_a_real_step_stays():
    """Five runs a side of the real sweep at 2% run-to-run noise. Unadjusted, unchanged rows come
    out changed by chance, with or without a real change elsewhere; under the default they are
    gone, and a real 10% drop of busbw at the 16 large rows is found in every one of them (Holm,
    stricter, loses some). One fixed seed: the same rows every time."""
    base = base_sweep()
    rng = random.Random(3)
    a = sweep_runs(base, 5, 0.02, rng, 1)
    same = sweep_runs(base, 5, 0.02, rng, 1000)
    step = sweep_runs(base, 5, 0.02, rng, 2000, step=0.10)

    def changed(rows: list, large: bool) -> list:
        return [c for c in rows if c.metric == "busbw" and (c.params["bytes"] >= LARGE) == large
                and c.status in ("worse", "better")]

    for b in (same, step):
        plain, default = compare(a, b, adjust_by="none"), compare(a, b)
        assert len(changed(plain, large=False)) == 2            # chance rows, unadjusted
        assert changed(default, large=False) == []              # gone under the default
        # what the adjustment took away says so, with both p-values
        kept = [c for c in default if c.metric == "busbw" and "after fdr adjustment" in c.verdict]
        assert len(kept) == 2 and all(c.status == "same" and c.test.p < 0.05 <= c.p_adjusted for c in kept)
        # each nccl-tests line counted once, by busbw or, where busbw printed one value in every
        # run (0.01 GB/s), by its time: 34 sizes x 2 placements less the lines that never varied
        lines = {(c.params["bytes"], c.params["placement"]) for c in default if not c.a.sd == c.b.sd == 0}
        assert family_size(default) == len(lines) < 68
    found = changed(compare(a, step), large=True)
    assert len(found) == 16 and all(c.status == "worse" and "adj. p<" in c.verdict for c in found)
    assert len(changed(compare(a, step, adjust_by="holm"), large=True)) == 14


def test_derived_metrics_follow_their_measurement():
    base = base_sweep()
    rng = random.Random(5)
    a, b = sweep_runs(base, 5, 0.02, rng, 1), sweep_runs(base, 5, 0.02, rng, 1000, step=0.05)
    for method in ("holm", "fdr"):
        rows = compare(a, b, adjust_by=method)
        by_key = {(c.metric, c.params["bytes"], c.params["placement"]): c for c in rows}
        for (metric, size, placement), c in by_key.items():
            head = by_key[("busbw", size, placement)]
            if metric != "busbw" and c.test is not None and head.test is not None and head.a.sd + head.b.sd > 0:
                assert c.p_adjusted == head.p_adjusted and c.adjust == method
                # one decision: algbw and time are called changed exactly when busbw is
                assert (c.status in ("worse", "better")) == (head.status in ("worse", "better")), (metric, size)


def test_an_adjusted_p_is_never_below_the_rows_own_p():
    """time rows took their busbw row's adjusted p (0.972) beside a p of their own of 0.989."""
    base = base_sweep()
    rng = random.Random(11)
    a, b = sweep_runs(base, 5, 0.02, rng, 1), sweep_runs(base, 5, 0.02, rng, 1000, step=0.03)
    for method in ("holm", "fdr"):
        rows = [c for c in compare(a, b, adjust_by=method) if c.test is not None]
        assert rows and all(c.p_adjusted >= c.test.p for c in rows)
        # and time rows whose own p is larger than busbw's were there to catch
        by_key = {(c.metric, c.params["bytes"], c.params["placement"]): c for c in rows}
        assert any(c.test.p > by_key[("busbw", s, pl)].test.p for (m, s, pl), c in by_key.items()
                   if m == "time_us" and ("busbw", s, pl) in by_key)


def test_holm_is_stricter_than_fdr_on_a_small_change():
    # 5% at the large sizes, 2% noise, 5 runs a side: BH finds more of it than Holm
    res = simulate(trials=3, runs=5, cv=0.02, step=0.05, seed=2)
    assert res["fdr"][2] >= 2 * res["holm"][2] and res["fdr"][2] >= 0.6 * res["fdr"][3]


def test_real_difference_is_reported_with_ci_and_p():
    a = rows_judge_compare(exact_sample(10, 100.0, 2.0, 1))
    b = rows_judge_compare(exact_sample(10, 88.0, 2.0, 2), start=100)
    (c,) = compare(a, b)
    assert c.a.n == 10 and math.isclose(c.a.mean, 100) and math.isclose(c.a.sd, 2)
    assert math.isclose(c.delta_pct, -12.0)
    assert math.isclose(c.test.t, -12 / math.sqrt(0.4 + 0.4))
    assert math.isclose(c.test.df, 18.0)
    assert c.test.ci_low < -12 < c.test.ci_high < 0
    assert c.status == "worse" and c.verdict == "B is 12.0% slower, p<0.001"


def test_no_real_difference_is_not_flagged():
    a = rows_judge_compare(exact_sample(10, 100.0, 2.0, 3))
    b = rows_judge_compare(exact_sample(10, 100.5, 2.0, 4), start=100)
    (c,) = compare(a, b)
    assert c.status == "same" and c.verdict == "no significant difference"
    assert c.test.ci_low < 0 < c.test.ci_high
    # many repetitions of the null case: none is ever called worse or better beyond chance + effect floor
    rng = random.Random(5)
    flagged = 0
    for _ in range(200):
        va = [rng.gauss(100, 1.5) for _ in range(10)]
        vb = [rng.gauss(100, 1.5) for _ in range(10)]
        (c,) = compare(rows_judge_compare(va), rows_judge_compare(vb, start=100))
        flagged += c.status in ("worse", "better")
    assert flagged == 0


def test_small_message_noise_is_not_a_regression():
    # 25% lower mean but CV 30%: the verdict is "noisy", never "worse"
    a = rows_judge_compare(exact_sample(10, 0.02, 0.006, 6), bytes_=64)
    b = rows_judge_compare(exact_sample(10, 0.015, 0.0045, 7), bytes_=64, start=100)
    (c,) = compare(a, b)
    assert c.status == "noisy" and "noisy" in c.verdict


def test_significant_but_tiny_change_is_same():
    a = rows_judge_compare(exact_sample(20, 100.0, 0.1, 8))
    b = rows_judge_compare(exact_sample(20, 99.0, 0.1, 9), start=100)
    (c,) = compare(a, b)
    assert c.test.p < 0.001 and c.status == "same"  # 1% is below the 2% effect floor


def test_latency_rise_is_slower():
    a = rows_judge_compare(exact_sample(8, 10.0, 0.2, 10), metric="time_us", unit="us")
    b = rows_judge_compare(exact_sample(8, 12.0, 0.2, 11), metric="time_us", unit="us", start=100)
    (c,) = compare(a, b)
    assert c.status == "worse" and "20.0% slower" in c.verdict


def test_a_change_from_zero_is_judged_by_the_test_not_hidden():
    a = rows_judge_compare([0.0, 0.0, 0.0])
    b = rows_judge_compare([50.0, 51.0, 50.5], start=100)
    (c,) = compare(a, b)
    assert c.delta_pct is None and c.test.p < 0.001
    assert c.status == "better" and c.verdict == "B is faster (50.5 against A's 0), p<0.001"
    (c,) = compare(rows_judge_compare([0.0, 0.0]), rows_judge_compare([0.0, 0.0], start=100))
    assert c.status == "same"
    (c,) = compare(rows_judge_compare([0.0]), rows_judge_compare([2.0], start=100))
    assert c.status == "insufficient" and "(delta +2 from 0)" in c.verdict


def test_undefined_cv_never_makes_a_row_noisy():
    # A's mean is 0: its CV has no scale; B is steady, so the test decides.
    (c,) = compare(rows_judge_compare([-1.0, 1.0, 0.0]), rows_judge_compare([50.0, 50.5, 49.5], start=100))
    assert c.status == "better" and c.a.cv is None
    # A's own spread says nothing about B's noise, which still counts.
    (c,) = compare(rows_judge_compare([-1.0, 1.0, 0.0]), rows_judge_compare([50.0, 70.0, 30.0], start=100))
    assert c.status == "noisy" and "CV 40%" in c.verdict


def test_direction_with_negative_means():
    # -10 -> -5 is a rise of a higher-is-better metric; b/a - 1 called it "50% slower".
    (c,) = compare(rows_judge_compare([-10.0, -10.1, -9.9]), rows_judge_compare([-5.0, -5.1, -4.9], start=100))
    assert math.isclose(c.delta_pct, 50.0)
    assert c.status == "better" and c.verdict.startswith("B is 50.0% faster")
    (c,) = compare(rows_judge_compare([-10.0, -10.1, -9.9], metric="time_us", unit="us"),
                   rows_judge_compare([-5.0, -5.1, -4.9], metric="time_us", unit="us", start=100))
    assert c.status == "worse" and c.verdict.startswith("B is 50.0% slower")


def test_tiny_and_huge_values_are_compared_like_any_others():
    for scale in (1e-170, 1e200):
        a = rows_judge_compare([1.0 * scale, 1.0001 * scale, 0.9999 * scale])
        b = rows_judge_compare([2.0 * scale, 2.0001 * scale, 2.0002 * scale], start=100)
        (c,) = compare(a, b)  # 1e200 raised OverflowError
        # 1e-170: the squares underflowed, sd 0, and an "exact" CI of width 0
        assert c.status == "better" and c.test.ci_low < c.test.diff < c.test.ci_high
        assert math.isclose(c.a.cv, 1e-4, rel_tol=1e-9)


def test_groups_of_different_sizes():
    a = rows_judge_compare(exact_sample(3, 100.0, 1.0, 20))
    b = rows_judge_compare(exact_sample(30, 90.0, 5.0, 21), start=100)
    (c,) = compare(a, b)
    va, vb = 1.0 / 3, 25.0 / 30
    assert math.isclose(c.test.df, (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 29))
    assert c.a.n == 3 and c.b.n == 30 and c.status == "worse" and "10.0% slower" in c.verdict


def test_every_registry_metric_has_fitting_words():
    from clusterbench.families import FAMILIES
    from clusterbench.judge.compare import COUNT, LEVEL, SPEED, change_text, wording
    from clusterbench.units import is_time_unit

    kinds: dict[str, set[str]] = {}
    timeless: set[str] = set()   # time-unit metrics that say no speed
    for family in FAMILIES:
        for m in family.metrics:
            bench = family.benchmarks[0] if family.benchmarks else family.name
            words = wording(bench, m.name, m.unit)
            kinds.setdefault(words, set()).add(m.unit)
            said = {change_text(words, m.name, up, up == m.higher_is_better, "10.0% ", against)
                    for up in (True, False) for against in ("", "5 against A's 0")}
            speed = is_time_unit(m.unit) or m.unit.endswith(("/s", "pps"))
            if m.wording:   # the family's word overrides what the unit implies
                assert words == m.wording, (family.name, m.name, m.wording)
            else:
                assert (words == SPEED) == speed, (family.name, m.name, m.unit)
            if is_time_unit(m.unit) and words != SPEED:
                timeless.add(m.name)
            if words == SPEED:
                assert all(("faster" in s) != ("slower" in s) for s in said), said
            else:   # better or worse said outright, never a speed
                assert all("faster" not in s and "slower" not in s for s in said), said
                assert all(s.endswith(("better)", "worse)")) for s in said), said
            if words == COUNT:
                assert not m.judged and m.unit == "" and all(" more " in s or " fewer " in s for s in said)
            # the good direction is called better, whichever way the metric runs
            good = change_text(words, m.name, m.higher_is_better, True, "10.0% ")
            assert ("faster" in good) if words == SPEED else good.endswith("(better)")
    assert kinds[SPEED] >= {"us", "ms", "s", "GB/s", "TFLOP/s", "Mpps", "tok/s", "req/s", "samples/s"}
    assert kinds[COUNT] == {""} and kinds[LEVEL] >= {"", "%", "bytes", "us"}
    # jitter is a time but no duration of work: every other time in the registry is one
    assert timeless == {"jitter_us"}


def test_jitter_is_higher_or_lower_never_slower():
    """A rise of iperf3's UDP jitter was said "B is 50.0% slower", as if the link took longer."""
    def jitter(values, start):
        return [Row(Run("net", id=start + i), Measurement("net", "jitter_us", v, "us", {"protocol": "udp"}))
                for i, v in enumerate(values)]

    worse = compare(jitter(exact_sample(5, 20.0, 0.4, 1), 1), jitter(exact_sample(5, 30.0, 0.6, 2), 10))
    assert [(c.status, c.verdict) for c in worse] == [("worse", "B is 50.0% higher (worse), p<0.001")]
    better = compare(jitter(exact_sample(5, 30.0, 0.6, 2), 1), jitter(exact_sample(5, 20.0, 0.4, 1), 10))
    assert better[0].status == "better" and better[0].verdict.startswith("B is 33.3% lower (better)")
    # latency, a time of work on the same family, stays a speed
    lat = [Row(Run("net", id=i), Measurement("net", "latency_us", v, "us", {"protocol": "tcp"}))
           for i, v in enumerate(exact_sample(5, 20.0, 0.4, 1))]
    lat_b = [Row(Run("net", id=10 + i), Measurement("net", "latency_us", v, "us", {"protocol": "tcp"}))
             for i, v in enumerate(exact_sample(5, 30.0, 0.6, 2))]
    assert compare(lat, lat_b)[0].verdict.startswith("B is 50.0% slower")


def test_counts_of_faults_are_counted_not_t_tested():
    """#wrong 0, 0, 5 against 0, 0, 0 was t-tested: "no significant difference" for five wrong
    elements. Any fault on B is worse; none where A had some is better; no p-value either way."""
    def wrong(values, start=1, metric="wrong"):
        return rows_judge_compare(values, metric=metric, unit="", start=start)

    (c,) = compare(wrong([0.0, 0.0, 0.0]), wrong([0.0, 0.0, 5.0], 100))
    assert (c.status, c.test, c.p_adjusted) == ("worse", None, None)
    assert c.verdict == "B has wrong (5 at most, in 1 of 3 run(s); A: none): counted, not tested"
    (c,) = compare(wrong([3.0]), wrong([0.0, 0.0], 100))     # one run a side is enough to count
    assert c.status == "better" and c.verdict == "B has no wrong (A: 3 at most, in 1 of 1 run(s)): counted, not tested"
    (c,) = compare(wrong([2.0, 2.0]), wrong([2.0, 2.0], 100))  # the same faults again are still faults
    assert c.status == "worse"
    (c,) = compare(wrong([0.0, 0.0], metric="out_of_bounds"), wrong([0.0, 0.0], 100, metric="out_of_bounds"))
    assert c.status == "same" and c.verdict == "no out_of_bounds on either side: counted, not tested"
    # counts are no measurement the adjustment counts: a busbw row beside them is adjusted alone
    rows_a = wrong([0.0, 0.0, 0.0]) + rows_judge_compare([10.0, 10.1, 9.9])
    rows_b = wrong([0.0, 0.0, 7.0], 100) + rows_judge_compare([10.0, 10.2, 9.8], start=100)
    assert family_size(compare(rows_a, rows_b)) == 1


def test_spread_records_stay_out_of_comparisons():
    def rows(scale: float) -> list[Row]:
        out = []
        for i in range(3):
            run = Run("stream", id=i)
            out += [Row(run, m) for m in _stream_rows("Copy", [scale * (100 + j) for j in range(10)])]
        return out

    stats = {str(c.params.get("stat")) for c in compare(rows(1.0), rows(1.2)) if c.metric == "time_us"}
    assert stats == {"min", "max", "avg", "median"}

    # a collective's per-iteration statistics (native gloo rows, nccl-tests' i_* columns) are for
    # the noise check only: none of them is compared, the row's own time is
    def coll(scale: float) -> list[Row]:
        params = {"bytes": 8, "count": 2, "dtype": "float", "redop": "sum", "root": -1, "placement": "out",
                  "ranks": 2}
        out = []
        for i in range(3):
            run = Run("coll", id=i)
            out.append(Row(run, Measurement("all_reduce", "time_us", scale * 100 + i, "us", params)))
            out += [Row(run, Measurement("all_reduce", "iter_time_us", scale * v + i, "us", {**params, "stat": s}))
                    for s, v in iteration_stats([100.0 + j for j in range(10)]).items()]
        return out

    assert {(c.metric, c.params.get("stat")) for c in compare(coll(1.0), coll(1.2))} == {("time_us", None)}


def test_percent_text_past_and_below_the_float_range():
    assert compare_display.percent_text(1.7e308, 12.5) == "1.36e+309%"      # 100 x ratio is inf as a float
    assert compare_display.percent_text(5e-324, 12.5) == "3.95253e-323%"    # the float ratio is 0
    assert compare_display.percent_text(1e300, 12.5, 0) == "8e+300%"
    assert compare_display.percent_text(12.5, 12.5) == "100.0%" and compare_display.percent_text(0.0, 5.0) == "0.0%"
    assert compare_display.percent_text(0.4, 100, 0) == "0.4%"              # not "0%" for a value that is not 0
    assert compare_display.percent_text(1.0, 0.0) == "-"
    assert compare_display.change_text_pct(-1.7e308, 1.7e308) == "+200.0%"  # b - a overflows as a float
    assert compare_display.change_text_pct(1e-300, 1.7e308) == "+1.7e+610%"


def test_opposite_means_near_the_limit_are_not_called_too_few():
    a, b = summarize([-1.7e308, -1.6e308, -1.65e308]), summarize([1.7e308, 1.6e308, 1.65e308])
    status, verdict = compare_display.judge(a, b, None, True, alpha=0.05, min_effect=0.02, max_cv=0.1)
    assert verdict == ("the difference of the means is past the largest float: cannot test "
                       "(delta +200.0%)"), verdict


def test_no_spread_3_vs_3_is_not_called_changed() -> None:
    """Three equal runs a side cannot be told apart at 5% by any rank test (p 0.1 at best)."""
    (c,) = compare(_rows([100.0] * 3, 1), _rows([110.0] * 3, 10))
    assert c.status == SAME and c.test is not None and c.test.p == pytest.approx(0.1)
    assert "p=0.1" in c.verdict and "spread" in c.verdict
    d = c.to_dict()
    assert d["p_value"] == pytest.approx(0.1) and d["ci95_low"] is None and d["ci95_high"] is None


def test_compare_converts_units_before_testing() -> None:
    """1e5 MB/s is 100 GB/s: was 'B is 99900.0% faster'."""
    (c,) = compare(_rows([100.0, 101.0, 99.0], 1), _rows([100_000.0, 101_000.0, 99_000.0], 10, "MB/s"))
    assert c.unit == "GB/s" and c.status == SAME
    assert c.b.mean == pytest.approx(100.0) and c.delta_pct == pytest.approx(0.0, abs=1e-9)


def test_compare_refuses_to_test_units_that_do_not_convert() -> None:
    (c,) = compare(_rows([100.0, 101.0, 99.0], 1), _rows([100.0, 101.0, 99.0], 10, "us"))
    assert c.status == INSUFFICIENT and c.test is None
    assert "GB/s" in c.verdict and "us" in c.verdict


def test_a_value_without_a_unit_beside_gb_s_is_an_error_not_a_pass() -> None:
    (o,) = evaluate(Profile("p", [_criterion()]), [_unit_row(1, 40.0, "GB/s"), _unit_row(2, 5.0, "")])
    assert o.status == ERROR and "do not convert" in o.detail
    # compare says the same of the same rows
    (c,) = compare([_unit_row(1, 40.0, "GB/s"), _unit_row(2, 41.0, "GB/s")], [_unit_row(3, 5.0, ""), _unit_row(4, 6.0, "")])
    assert c.status == INSUFFICIENT and "do not convert" in c.verdict


def test_common_unit_prefers_the_metric_unit_and_falls_back_to_the_first_row() -> None:
    rows = [_unit_row(1, 500.0, "MB/s"), _unit_row(2, 2.0, "GB/s")]
    assert common_unit(rows, "GB/s") == ("GB/s", [0.5, 2.0])
    assert common_unit(rows) == ("MB/s", [500.0, 2000.0])
    assert common_unit(rows, "us") == ("MB/s", [500.0, 2000.0])   # not to a time: the first row's
    assert common_unit([_unit_row(1, 1.0, "GB/s"), _unit_row(2, 1.0, "")], "GB/s") is None
