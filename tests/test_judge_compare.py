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
