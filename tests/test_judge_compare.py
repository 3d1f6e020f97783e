import math
import random

from judge_helpers import cli, coll_rows, json_lines, save

from clusterbench.judge.compare import compare
from clusterbench.judge.select import Row
from clusterbench.records import Measurement, Run


def exact_sample(n: int, mean: float, sd: float, seed: int) -> list[float]:
    """n values with exactly this sample mean and standard deviation."""
    rng = random.Random(seed)
    xs = [rng.gauss(0, 1) for _ in range(n)]
    m = sum(xs) / n
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return [mean + sd * (x - m) / s for x in xs]


def rows(values, bytes_=1 << 30, metric="busbw", unit="GB/s", start=1):
    out = []
    for i, v in enumerate(values):
        run = Run("coll", id=start + i)
        out.append(Row(run, Measurement("all_reduce", metric, v, unit,
                                        {"bytes": bytes_, "placement": "in", "host": f"h{i}"})))
    return out


def test_real_difference_is_reported_with_ci_and_p():
    a = rows(exact_sample(10, 100.0, 2.0, 1))
    b = rows(exact_sample(10, 88.0, 2.0, 2), start=100)
    (c,) = compare(a, b)
    assert c.a.n == 10 and math.isclose(c.a.mean, 100) and math.isclose(c.a.sd, 2)
    assert math.isclose(c.delta_pct, -12.0)
    assert math.isclose(c.test.t, -12 / math.sqrt(0.4 + 0.4))
    assert math.isclose(c.test.df, 18.0)
    assert c.test.ci_low < -12 < c.test.ci_high < 0
    assert c.status == "worse" and c.verdict == "B is 12.0% slower, p<0.001"


def test_no_real_difference_is_not_flagged():
    a = rows(exact_sample(10, 100.0, 2.0, 3))
    b = rows(exact_sample(10, 100.5, 2.0, 4), start=100)
    (c,) = compare(a, b)
    assert c.status == "same" and c.verdict == "no significant difference"
    assert c.test.ci_low < 0 < c.test.ci_high
    # many repetitions of the null case: none is ever called worse or better beyond chance + effect floor
    rng = random.Random(5)
    flagged = 0
    for _ in range(200):
        va = [rng.gauss(100, 1.5) for _ in range(10)]
        vb = [rng.gauss(100, 1.5) for _ in range(10)]
        (c,) = compare(rows(va), rows(vb, start=100))
        flagged += c.status in ("worse", "better")
    assert flagged == 0


def test_small_message_noise_is_not_a_regression():
    # 25% lower mean but CV 30%: the verdict is "noisy", never "worse"
    a = rows(exact_sample(10, 0.02, 0.006, 6), bytes_=64)
    b = rows(exact_sample(10, 0.015, 0.0045, 7), bytes_=64, start=100)
    (c,) = compare(a, b)
    assert c.status == "noisy" and "noisy" in c.verdict


def test_significant_but_tiny_change_is_same():
    a = rows(exact_sample(20, 100.0, 0.1, 8))
    b = rows(exact_sample(20, 99.0, 0.1, 9), start=100)
    (c,) = compare(a, b)
    assert c.test.p < 0.001 and c.status == "same"  # 1% is below the 2% effect floor


def test_latency_rise_is_slower():
    a = rows(exact_sample(8, 10.0, 0.2, 10), metric="time_us", unit="us")
    b = rows(exact_sample(8, 12.0, 0.2, 11), metric="time_us", unit="us", start=100)
    (c,) = compare(a, b)
    assert c.status == "worse" and "20.0% slower" in c.verdict


def test_cli_compare_groups(db, capsys):
    rng = random.Random(12)
    for _ in range(4):
        save(db, coll_rows(1.0, rng), tags={"env": "native"})
        save(db, coll_rows(0.9, rng), tags={"env": "container"})
    rc, out, _ = cli(capsys, "compare", "env=native", "env=container", "--db", db, "--metric", "busbw", "--json")
    assert rc == 0
    *res, summary = json_lines(out)
    assert {r["kind"] for r in res} == {"comparison"} and summary["kind"] == "summary"
    assert summary["counts"]["worse"] == len([r for r in res if r["status"] == "worse"]) > 0
    assert summary["exit_code"] == 0 and summary["runs_a"] == [1, 3, 5, 7]
    big = [r for r in res if r["params"]["bytes"] >= 1 << 20]
    small = [r for r in res if r["params"]["bytes"] < 1 << 10]
    assert big and all(r["status"] == "worse" and abs(r["delta_pct"] + 10) < 3 for r in big)
    assert small and all(r["status"] != "worse" for r in small)
    rc, out, _ = cli(capsys, "compare", "env=native", "env=container", "--db", db, "--only-changes")
    assert rc == 0 and "B is" in out and "slower" in out


def test_cli_compare_usage_errors(db, capsys):
    save(db, coll_rows(1.0, random.Random(1)), tags={"env": "a"})
    save(db, [Measurement("stream", "bandwidth", 10.0, "GB/s", {"kernel": "Copy"})], tags={"env": "b"})
    rc, _, err = cli(capsys, "compare", "env=a", "env=b", "--db", db)
    assert rc == 2 and "share no" in err and err.count("\n") == 1
    rc, _, err = cli(capsys, "compare", "env=a", "env=zzz", "--db", db)
    assert rc == 2 and "matches no run" in err
    rc, _, err = cli(capsys, "compare", "1", "env=a", "--db", db)
    assert rc == 2 and "share runs" in err
    rc, _, err = cli(capsys, "compare", "1", "99", "--db", db)
    assert rc == 2 and "no run 99" in err


def test_a_change_from_zero_is_judged_by_the_test_not_hidden():
    a = rows([0.0, 0.0, 0.0])
    b = rows([50.0, 51.0, 50.5], start=100)
    (c,) = compare(a, b)
    assert c.delta_pct is None and c.test.p < 0.001
    assert c.status == "better" and c.verdict == "B is faster (50.5 against A's 0), p<0.001"
    (c,) = compare(rows([0.0, 0.0]), rows([0.0, 0.0], start=100))
    assert c.status == "same"
    (c,) = compare(rows([0.0]), rows([2.0], start=100))
    assert c.status == "insufficient" and "(delta +2 from 0)" in c.verdict


def test_undefined_cv_is_shown_as_undefined_not_as_zero():
    from clusterbench.judge.text import comparison_lines
    from clusterbench.report.jsonl import comparison_line, dumps

    one = compare(rows([100.0]), rows([100.0, 101.0], start=100))
    zero = compare(rows([-1.0, 1.0, 0.0]), rows([5.0, 5.1, 4.9], start=100))
    for (c,) in (one, zero):
        d = c.to_dict()
        assert d["cv_a"] is None and isinstance(d["cv_b"], float)
        json_lines(dumps(comparison_line(c, "a", "b")))  # null is what the schema allows
    assert one[0].to_dict()["sd_a"] is None and zero[0].to_dict()["sd_a"] == 1.0
    header, row, _ = comparison_lines(one)
    cells = row.split()
    assert "0.0%" not in row and cells[cells.index("100") + 1] == "-"  # was "0.0%"


def test_undefined_cv_never_makes_a_row_noisy():
    # A's mean is 0: its CV has no scale; B is steady, so the test decides.
    (c,) = compare(rows([-1.0, 1.0, 0.0]), rows([50.0, 50.5, 49.5], start=100))
    assert c.status == "better" and c.a.cv is None
    # A's own spread says nothing about B's noise, which still counts.
    (c,) = compare(rows([-1.0, 1.0, 0.0]), rows([50.0, 70.0, 30.0], start=100))
    assert c.status == "noisy" and "CV 40%" in c.verdict


def test_direction_with_negative_means():
    # -10 -> -5 is a rise of a higher-is-better metric; b/a - 1 called it "50% slower".
    (c,) = compare(rows([-10.0, -10.1, -9.9]), rows([-5.0, -5.1, -4.9], start=100))
    assert math.isclose(c.delta_pct, 50.0)
    assert c.status == "better" and c.verdict.startswith("B is 50.0% faster")
    (c,) = compare(rows([-10.0, -10.1, -9.9], metric="time_us", unit="us"),
                   rows([-5.0, -5.1, -4.9], metric="time_us", unit="us", start=100))
    assert c.status == "worse" and c.verdict.startswith("B is 50.0% slower")


def test_infinite_values_are_not_tested():
    from clusterbench.report.jsonl import comparison_line, dumps

    inf = math.inf
    # p was nan and nan passes every "not significant" check: "B is inf% faster, p=nan"
    for a, b, who in (([100.0, 101.0, 99.0], [100.0, inf, 99.0], "B"), ([inf, inf], [inf, inf], "A and B")):
        (c,) = compare(rows(a), rows(b, start=100))
        assert c.status == "insufficient" and c.verdict == f"a value of {who} is not finite: cannot test"
        assert c.delta_pct is None
        (line,) = json_lines(dumps(comparison_line(c, "a", "b")))
        assert line["mean_b"] is None and line["cv_b"] is None and line["p_value"] is None


def test_tiny_and_huge_values_are_compared_like_any_others():
    for scale in (1e-170, 1e200):
        a = rows([1.0 * scale, 1.0001 * scale, 0.9999 * scale])
        b = rows([2.0 * scale, 2.0001 * scale, 2.0002 * scale], start=100)
        (c,) = compare(a, b)  # 1e200 raised OverflowError
        # 1e-170: the squares underflowed, sd 0, and an "exact" CI of width 0
        assert c.status == "better" and c.test.ci_low < c.test.diff < c.test.ci_high
        assert math.isclose(c.a.cv, 1e-4, rel_tol=1e-9)


def test_groups_of_different_sizes():
    a = rows(exact_sample(3, 100.0, 1.0, 20))
    b = rows(exact_sample(30, 90.0, 5.0, 21), start=100)
    (c,) = compare(a, b)
    va, vb = 1.0 / 3, 25.0 / 30
    assert math.isclose(c.test.df, (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 29))
    assert c.a.n == 3 and c.b.n == 30 and c.status == "worse" and "10.0% slower" in c.verdict


def test_counts_are_more_or_fewer_not_slower(capsys, db):
    # #wrong 0 -> 5 said "B is slower (5 against A's 0)"
    (c,) = compare(rows([0.0, 0.0, 0.0], metric="wrong", unit=""),
                   rows([5.0, 5.1, 4.9], metric="wrong", unit="", start=100))
    assert c.status == "worse" and c.verdict.startswith("B has more wrong (5 against A's 0, worse), p<")
    (c,) = compare(rows([10.0, 10.2, 9.8], metric="wrong", unit=""),
                   rows([5.0, 5.1, 4.9], metric="wrong", unit="", start=100))
    assert c.status == "better" and c.verdict.startswith("B has 50.0% fewer wrong (better), p<")
    # an efficiency (a ratio) is higher or lower, a latency slower
    (c,) = compare(rows([0.80, 0.81, 0.79], metric="efficiency", unit=""),
                   rows([0.90, 0.91, 0.89], metric="efficiency", unit="", start=100))
    assert c.verdict.startswith("B is 12.5% higher (better), p<")
    # the same words through the command
    for side, values in (("a", (0.0, 0.0, 0.0)), ("b", (4.9, 5.0, 5.1))):
        for v in values:
            save(db, [Measurement("all_reduce", "wrong", v, "", {"bytes": 1024, "placement": "in"})],
                 tags={"env": side})
    rc, out, err = cli(capsys, "compare", "env=a", "env=b", "--db", db)
    assert rc == 0 and "B has more wrong (5 against A's 0, worse)" in out and "slower" not in out


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


def test_a_metric_word_outside_the_known_ones_is_refused():
    import pytest

    from clusterbench.families.base import WORDINGS, Metric

    assert Metric("x_us", "us", wording="level").wording in WORDINGS
    with pytest.raises(ValueError, match="wording 'quick'"):
        Metric("x_us", "us", wording="quick")
