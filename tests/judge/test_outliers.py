"""Tests of clusterbench.judge.outliers: degraded-node detection."""

import math
import random

import pytest
from judged_rows import PARAMS

from clusterbench.judge.degraded import find_degraded
from clusterbench.judge.outliers import flag_outliers, modified_z_scores
from clusterbench.judge.select import Row
from clusterbench.records import Measurement, Run


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


def test_outlier_off_a_median_of_zero_says_the_difference() -> None:
    from clusterbench.judge.outliers import Outlier
    text = Outlier("host3", 2.5, 0.0, 9.0, math.inf).describe("GB/s")
    assert "inf" not in text and "+2.5 GB/s vs median 0 GB/s" in text


@pytest.mark.parametrize("healthy", [[100.0, 100.0], [100.0, 100.0, 100.0]])
def test_a_slow_node_beside_nodes_that_agree_exactly_is_flagged(healthy: list[float]) -> None:
    """With the MAD 0 the mean-absolute-deviation score of one odd value is n x 0.798 whatever its
    size (2.39 for 3 nodes, 3.19 for 4): a node at half speed was never flagged when the others
    agreed exactly, yet was when they differed by 0.1%."""
    from clusterbench.judge.outliers import flag_outliers

    values = {f"n{i}": v for i, v in enumerate(healthy)} | {"slow": 50.0}
    assert [o.key for o in flag_outliers(values)] == ["slow"]
    jitter = {f"n{i}": v + 0.1 * i for i, v in enumerate(healthy)} | {"slow": 50.0}
    assert [o.key for o in flag_outliers(jitter)] == ["slow"]
    assert flag_outliers(values, higher_is_better=False) == []          # fast is not degraded
    assert flag_outliers(values | {"slow": 97.0}) == []                  # within 5%
    rows = [Row(Run("coll", id=i + 1, hosts=[h]), Measurement("all_reduce", "busbw", v, "GB/s", {**PARAMS, "host": h}))
            for i, (h, v) in enumerate(values.items())]
    assert [d.outlier.key for d in find_degraded(rows)] == ["slow"]


@pytest.mark.parametrize("values,bad", [
    ({"a": 10.0, "b": 10.0, "c": 10.0, "d": 1.0, "e": 1.0}, {"d", "e"}),     # two equally bad of 5
    ({**{f"n{i}": 5.0 for i in range(6)}, "x": 1.0, "y": 1.0, "z": 1.0}, {"x", "y", "z"}),
    ({"a": 10.0, "b": 10.0, "c": 10.0, "d": 9.9, "e": 1.0}, {"e"}),          # within 5%: not flagged
])
def test_every_value_off_an_exact_majority_is_judged_by_its_deviation(values, bad) -> None:
    """With the healthy majority exactly equal, two or more equally bad nodes were never flagged:
    the fallback score was inflated by the outliers themselves."""
    assert {o.key for o in flag_outliers(values)} == bad


def test_no_exact_majority_keeps_the_robust_score() -> None:
    # half equal is no majority: the usual score decides (nothing here is off by 3.5)
    assert flag_outliers({"a": 10.0, "b": 10.0, "c": 9.0, "d": 9.0}) == []


def test_outliers_near_the_largest_float_still_have_a_centre() -> None:
    """The median of an even count of values near 1.7e308 is finite, so a slow one is flagged."""
    from clusterbench.judge.outliers import flag_outliers

    found = flag_outliers({"a": 1.7e308, "b": 1.7e308, "c": 1.6e308, "d": 1.0e308})
    assert [o.key for o in found] == ["d"]
    assert found[0].median == pytest.approx(1.65e308)


def _reference_flags(values: dict, threshold: float, higher_is_better: bool, min_rel_dev: float) -> list:
    """flag_outliers' rule applied to every key in turn."""
    med, scores = modified_z_scores(values)
    off = {k for k, v in values.items() if float(v) != med}
    exact = 2 * (len(values) - len(off)) > len(values)
    out = []
    for k, z in scores.items():
        v = float(values[k])
        rel = (v - med) / abs(med) if med != 0 else math.copysign(math.inf, v) if v != 0 else 0.0
        if (z < 0 if higher_is_better else z > 0) and (abs(z) > threshold or (exact and k in off)) \
                and abs(rel) > min_rel_dev:
            out.append((k, v, med, z, rel))
    return sorted(out, key=lambda o: -abs(o[3]))


@pytest.mark.parametrize("seed", range(60))
def test_flags_are_the_rule_applied_to_every_key(seed: int) -> None:
    """Infinite values, exact majorities, negative medians, a threshold below zero, either side:
    the keys flagged are those the rule picks when every key is tried."""
    rng = random.Random(seed)
    n = rng.randint(3, 40)
    pool = [100.0, 100.0, 50.0, -20.0, 0.0, math.inf, -math.inf]
    values = {f"k{i}": rng.choice(pool) if rng.random() < 0.3 else rng.gauss(100.0, rng.choice([0.1, 5.0, 40.0]))
              for i in range(n)}
    if rng.random() < 0.3:
        values = {k: -v for k, v in values.items()}
    threshold = rng.choice([3.5, 1.0, 0.0, -1.0])
    hib = rng.random() < 0.5
    rel = rng.choice([0.05, 0.0])
    got = [(o.key, o.value, o.median, o.z, o.rel_dev)
           for o in flag_outliers(values, threshold=threshold, higher_is_better=hib, min_rel_dev=rel)]
    assert got == _reference_flags(values, threshold, hib, rel)
