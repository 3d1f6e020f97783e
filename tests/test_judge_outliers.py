import math
import random

from clusterbench.judge.outliers import flag_outliers, modified_z_scores


def test_one_host_30_percent_slow_is_flagged():
    rng = random.Random(1)
    values = {f"node{i:02d}": 360.0 * (1 + rng.uniform(-0.01, 0.01)) for i in range(16)}
    values["node07"] = 360.0 * 0.70
    found = flag_outliers(values)
    assert [o.key for o in found] == ["node07"]
    o = found[0]
    assert abs(o.rel_dev + 0.30) < 0.02
    assert o.z < -3.5
    assert "node07" in o.describe("GB/s")


def test_identical_nodes_with_noise_are_not_flagged():
    rng = random.Random(2)
    for trial in range(50):
        values = {f"n{i}": 100.0 * (1 + rng.gauss(0, 0.005)) for i in range(8)}
        assert flag_outliers(values) == [], trial


def test_only_the_bad_side_is_flagged():
    values = {"a": 100.0, "b": 101.0, "c": 99.0, "d": 100.5, "fast": 140.0}
    assert flag_outliers(values) == []
    assert [o.key for o in flag_outliers(values, higher_is_better=False)] == ["fast"]


def test_latency_lower_is_better():
    values = {"a": 10.0, "b": 10.1, "c": 9.9, "d": 10.0, "slow": 14.0}
    assert [o.key for o in flag_outliers(values, higher_is_better=False)] == ["slow"]


def test_mad_zero_uses_mean_absolute_deviation():
    # More than half identical: MAD == 0, the MeanAD fallback still scores the odd one.
    values = {"a": 50.0, "b": 50.0, "c": 50.0, "d": 50.0, "e": 30.0}
    med, scores = modified_z_scores(values)
    assert med == 50.0
    # MeanAD = 20/5 = 4, sigma estimate = 4/0.7979 = 5.013, z = -20/5.013
    assert abs(scores["e"] - (-20 / (4 / 0.7978846))) < 1e-9
    assert [o.key for o in flag_outliers(values)] == ["e"]


def test_all_equal_or_too_few_values():
    assert flag_outliers({"a": 1.0, "b": 1.0, "c": 1.0}) == []
    assert flag_outliers({"a": 1.0, "b": 0.5}) == []
    assert flag_outliers({}) == []


def test_known_modified_z_score():
    # median 3, |dev| = 2,1,0,1,7 -> MAD 1; z(10) = 0.6745 * 7 / 1
    _, scores = modified_z_scores({"a": 1, "b": 2, "c": 3, "d": 4, "e": 10})
    assert abs(scores["e"] - 0.6745 * 7) < 1e-12


def test_min_rel_dev_guard():
    # Tight cluster: a 3% dip is a huge z but below the 5% relevance floor.
    values = {f"n{i}": 100.0 + 0.01 * i for i in range(8)}
    values["dip"] = 97.0
    assert flag_outliers(values) == []
    assert [o.key for o in flag_outliers(values, min_rel_dev=0.01)] == ["dip"]


def test_all_equal_two_values_and_zero_mad():
    assert modified_z_scores({"a": 5.0, "b": 5.0, "c": 5.0}) == (5.0, {"a": 0.0, "b": 0.0, "c": 0.0})
    assert flag_outliers({"a": 5.0, "b": 5.0, "c": 5.0}) == []
    assert flag_outliers({"a": 1.0, "b": 100.0}) == []  # two values: no majority
    # MAD 0 (most values equal): the mean absolute deviation scales the score instead
    med, z = modified_z_scores({"a": 100.0, "b": 100.0, "c": 100.0, "d": 100.0, "e": 50.0})
    assert med == 100.0 and z["a"] == 0.0 and math.isclose(z["e"], -50 / (10 / 0.7978846))


def test_an_infinite_value_is_scored_and_flagged_on_its_bad_side():
    inf = math.inf
    times = {"a": 10.0, "b": 10.1, "c": 9.9, "d": 10.0, "hung": inf}
    med, z = modified_z_scores(times)
    # the infinite deviation made every score nan: nothing was flagged
    assert med == 10.0 and z["hung"] == inf and abs(z["b"]) < 1.5
    assert [o.key for o in flag_outliers(times, higher_is_better=False)] == ["hung"]
    assert flag_outliers(times, higher_is_better=True) == []
    assert modified_z_scores({"a": inf, "b": inf, "c": 1.0})[1] == {"a": 0.0, "b": 0.0, "c": 0.0}


def test_relative_deviation_keeps_its_sign_for_a_negative_median():
    values = {"a": -100.0, "b": -100.0, "c": -101.0, "d": -99.0, "e": -200.0}
    (o,) = flag_outliers(values)
    assert o.key == "e" and o.rel_dev == -1.0 and "-100.0% vs median" in o.describe()  # was +100.0%
