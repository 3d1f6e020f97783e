"""Tests of clusterbench.cli.commands.compare: ``clusterbench compare SEL_A SEL_B``."""

import json
import random

import numpy as np
import pytest
from adjust_trials import base_sweep, sweep_runs
from judge_helpers import cli, coll_rows, json_lines, run_cli, save
from judged_rows import PARAMS, _busbw, rows_judge_compare
from paths import TESTS
from scipy import stats as sps
from stored_runs import (
    WALL,
    _cli,
    _lines,
    _ok,
)
from work_helpers import cli as cli_work_serving
from work_helpers import stored

from clusterbench.judge.compare import SAME, compare
from clusterbench.judge.select import Row
from clusterbench.records import Measurement, Run
from clusterbench.store import Store


def _store_two_sides(db) -> None:
    """Five runs a side at 3% noise; B 10% lower at the large sizes (env=a, env=b)."""
    base = base_sweep()
    rng = random.Random(11)
    for side, start, step in (("a", 1, 0.0), ("b", 1000, 0.10)):
        rows = sweep_runs(base, 5, 0.03, rng, start, step)
        for i in range(5):
            save(db, [r.m for r in rows if r.run.id == start + i], benchmark="import", tags={"env": side})


RESULT = TESTS / "data" / "vllm-serving" / "ascend-qwen2.5-vl-3b-bench-serve-save-result.json"


def test_compare_validate_and_trend_run(extreme_db):
    for argv, codes in ((["compare", "copy=0", "copy=1"], (0, 1)),
                        (["validate", "1..99", "--profile", "cpu-smoke"], (0, 1)),
                        (["validate", "1..99", "--profile", "amd-mi300x-oem"], (0, 1)),
                        (["trend"], (0, 1)), (["trend", "--by", "device"], (0, 1))):
        rc, out, err = run_cli(*argv, "--db", extreme_db)
        _ok(rc, out, err, codes)
        assert not WALL.search(out), (argv, WALL.search(out))


def test_compare_of_values_spanning_the_float_range(db):
    for group, values in (("a", [1.7e308, -1.7e308, 1.7e308]), ("b", [1.0, 2.0, 3.0])):
        for v in values:
            with Store.open(db) as s:
                s.save_run(Run("coll", hosts=["h"], ranks=1, tags={"g": group}),
                           [Measurement("all_reduce", "busbw", v, "GB/s", {"bytes": 8, "placement": "out"})])
    rc, out, err = run_cli("compare", "g=a", "g=b", "--db", db)
    _ok(rc, out, err, (0, 1))


def test_cli_option_text_and_json(db, capsys):
    _store_two_sides(db)
    results = {}
    for method in (None, "none", "holm", "fdr"):
        extra = ["--adjust", method] if method else []
        rc, out, _ = cli(capsys, "compare", "env=a", "env=b", "--db", db, "--json", *extra)
        assert rc == 0
        *rows, summary = json_lines(out)
        assert summary["adjust"] == (method or "fdr") and summary["family"] > 60
        assert all(r["adjust"] == summary["adjust"] for r in rows)
        results[method] = {(r["metric"], r["params"]["bytes"], r["params"]["placement"]): r for r in rows}
    assert results[None] == results["fdr"]                      # the default
    for r in results["none"].values():
        assert r["p_adjusted"] == r["p_value"]
    holm_rows, fdr_rows = results["holm"], results["fdr"]
    for key, r in fdr_rows.items():
        if r["p_value"] is not None and r["metric"] == "busbw":   # algbw and time take busbw's
            assert r["p_value"] <= r["p_adjusted"] <= holm_rows[key]["p_adjusted"]
    worse = {m: sum(r["status"] == "worse" for r in res.values()) for m, res in results.items()}
    assert worse["none"] > worse["fdr"] >= worse["holm"] > 0
    rc, out, _ = cli(capsys, "compare", "env=a", "env=b", "--db", db, "--metric", "busbw", "--adjust", "holm")
    lines = out.splitlines()
    assert lines[1].startswith("# p adj: p-values adjusted by holm over ")
    assert " p adj " in lines[2] and "adj. p<" in out
    rc, out, _ = cli(capsys, "compare", "env=a", "env=b", "--db", db, "--adjust", "none")
    assert " p adj " not in out and "adj. p" not in out
    rc, _, err = cli(capsys, "compare", "env=a", "env=b", "--db", db, "--adjust", "bonferroni")
    assert rc == 2 and "bonferroni" in err


def test_report_verdict_agrees_with_compare(tmp_path, db, capsys):
    _store_two_sides(db)
    for method in ("none", "fdr"):
        rc, out, _ = cli(capsys, "compare", "env=a", "env=b", "--db", db, "--json", "--adjust", method)
        *rows, _ = json_lines(out)
        # the report counts rows after folding algbw and time into busbw
        worse = sum(r["status"] == "worse" for r in rows if r["metric"] == "busbw")
        better = sum(r["status"] == "better" for r in rows if r["metric"] == "busbw")
        extra = [] if method == "fdr" else ["--adjust", method]
        rc, out, _ = cli(capsys, "report", "env=a", "env=b", "-o", str(tmp_path / f"{method}.html"), "--db", db,
                         "--json", *extra)
        (info,) = json_lines(out)
        assert info["adjust"] == method
        reason = next(r for r in info["reasons"] if r.startswith("comparison "))
        assert f": {worse} worse, {better} better, " in reason
        assert ("p adjusted by fdr over" in reason) == (method == "fdr")


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


def test_counts_are_more_or_fewer_not_slower(capsys, db):
    # a count that is no fault (TCP retransmits) is tested, and said in more or fewer, never slower
    def retransmits(values, start=1):
        return [Row(Run("net", id=start + i), Measurement("net", "retransmits", v, "", {"protocol": "tcp"}))
                for i, v in enumerate(values)]

    (c,) = compare(retransmits([0.0, 0.0, 0.0]), retransmits([5.0, 5.1, 4.9], 100))
    assert c.status == "worse" and c.verdict.startswith("B has more retransmits (5 against A's 0, worse), p<")
    (c,) = compare(retransmits([10.0, 10.2, 9.8]), retransmits([5.0, 5.1, 4.9], 100))
    assert c.status == "better" and c.verdict.startswith("B has 50.0% fewer retransmits (better), p<")
    # an efficiency (a ratio) is higher or lower, a latency slower
    (c,) = compare(rows_judge_compare([0.80, 0.81, 0.79], metric="efficiency", unit=""),
                   rows_judge_compare([0.90, 0.91, 0.89], metric="efficiency", unit="", start=100))
    assert c.verdict.startswith("B is 12.5% higher (better), p<")
    # #wrong is a count of faults: counted, through the command too
    for side, values in (("a", (0.0, 0.0, 0.0)), ("b", (0.0, 0.0, 5.0))):
        for v in values:
            save(db, [Measurement("all_reduce", "wrong", v, "", {"bytes": 1024, "placement": "in"})],
                 tags={"env": side})
    rc, out, err = cli(capsys, "compare", "env=a", "env=b", "--db", db)
    assert rc == 0 and "B has wrong (5 at most, in 1 of 3 run(s); A: none): counted, not tested" in out
    assert "slower" not in out


def test_compare_of_a_change_past_the_float_range(probe_db, tmp_path):
    rc, out, err = run_cli("compare", "cmp=a", "cmp=b", "--db", probe_db)
    assert rc in (0, 1), err
    assert "inf" not in out and "B is 1.65e+610% faster" in out and " +1.65e+610% " in out
    rc, out, err = run_cli("compare", "cmp=a", "cmp=b", "--json", "--db", probe_db)

    def refuse(token: str) -> None:
        raise AssertionError(token)

    for line in out.splitlines():
        json.loads(line, parse_constant=refuse)
    rc, _, err = run_cli("report", "cmp=a", "cmp=b", "-o", tmp_path / "c.html", "--db", probe_db)
    assert rc == 0, err
    assert "+1.65e+610%" in (tmp_path / "c.md").read_text() and "inf%" not in (tmp_path / "c.html").read_text()


def test_no_spread_cli_table_and_json_agree(capsys, db) -> None:
    for v in (100.0,) * 3:
        save(db, [Measurement("all_reduce", "busbw", v, "GB/s", dict(PARAMS))], tags={"g": "a"})
    for v in (101.0,) * 3:
        save(db, [Measurement("all_reduce", "busbw", v, "GB/s", dict(PARAMS))], tags={"g": "b"})
    code, out, err = cli(capsys, "compare", "g=a", "g=b", "--min-effect", "0.5", "--db", db)
    assert code == 0, err
    (line,) = [t for t in out.splitlines() if t.startswith("all_reduce")]
    assert " 0 " not in line and "[+1, +1]" not in line     # was p 0 and a zero-width CI
    assert " 0.1 " in line and "no significant difference" in line
    code, out, err = cli(capsys, "compare", "g=a", "g=b", "--min-effect", "0.5", "--json", "--db", db)
    assert code == 0, err
    row = next(d for d in json_lines(out) if d["kind"] == "comparison")
    assert row["p_value"] == pytest.approx(0.1) and row["p_adjusted"] == pytest.approx(0.1)
    assert row["ci95_low"] is None and row["status"] == SAME


def test_compare_welch_agrees_with_scipy_text_and_json(capsys, db) -> None:
    a = [100.0, 101.5, 99.2, 100.7, 98.9]
    b = [95.1, 96.0, 94.2, 95.5, 96.3]
    for v in a:
        save(db, _busbw(v), tags={"env": "a"})
    for v in b:
        save(db, _busbw(v), tags={"env": "b"})
    code, out, err = cli(capsys, "compare", "env=a", "env=b", "--json", "--db", db)
    assert code == 0, err
    row = next(d for d in map(json.loads, out.splitlines()) if d["kind"] == "comparison")
    ref = sps.ttest_ind(b, a, equal_var=False)
    ci = ref.confidence_interval(0.95)
    assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert row["ci95_low"] == pytest.approx(ci.low, rel=1e-9)
    assert row["ci95_high"] == pytest.approx(ci.high, rel=1e-9)
    assert row["delta_pct"] == pytest.approx((np.mean(b) - np.mean(a)) / np.mean(a) * 100)
    assert row["status"] == "worse"
    code, text, _ = cli(capsys, "compare", "env=a", "env=b", "--db", db)
    assert f"[{ci.low:+.3g}, {ci.high:+.3g}]" in text and f"{ref.pvalue:.3g}" in text


def test_compare_table_and_json_agree(agreement_store):
    for a, b in (("side=A", "side=B"), ("grp=a", "grp=b")):
        rc, text, _ = _cli("compare", a, b, "--db", agreement_store["db"])
        rcj, js, _ = _cli("compare", a, b, "--db", agreement_store["db"], "--json")
        assert rc == rcj == 0
        lines = _lines(js)
        rows = [o for o in lines if o["kind"] == "comparison"]
        summary = lines[-1]
        body = [x for x in text.splitlines() if x and not x.startswith(("#", "benchmark "))]
        assert len(body) == len(rows)
        for line, c in zip(body, rows):
            assert line.split()[:2] == [c["benchmark"], c["metric"]]
            assert f"{c['mean_a']:.4g}" in line and f"{c['mean_b']:.4g}" in line
        assert f"({len(summary['runs_a'])} run(s)), B = {b} ({len(summary['runs_b'])} run(s))" in text
        for status, n in summary["counts"].items():
            assert not n or f"{n} {status}" in text.splitlines()[-1]


def test_imported_setups_pair_up_in_compare(capsys, db):
    if not RESULT.exists():
        pytest.skip(f"{RESULT.name} is not in tests/data/vllm-serving")
    # the same content with the same tags is one import (a second is skipped): repetitions differ by tag
    for rep, setup in enumerate(("1gpu", "1gpu", "8-partitions")):
        code, _, err = cli_work_serving(capsys, "import", str(RESULT), "--tool", "vllm-serving", "--tag", f"setup={setup}",
                           "--tag", f"rep={rep}", "--db", db)
        assert code == 0, err
    runs = stored(db)
    assert len(runs) == 3
    for _run, ms in runs:
        by = {(m.metric, m.params.get("stat")): m for m in ms}
        assert by[("request_throughput", None)].value == pytest.approx(0.9733236714351853)
        assert by[("ttft_ms", "mean")].value == pytest.approx(97.50969301155726)
        assert {m.params["request_rate"] for m in ms} == {1.0}
    code, out, err = cli_work_serving(capsys, "compare", "setup=1gpu", "setup=8-partitions", "--benchmark", "serving",
                         "--json", "--db", db)
    assert code == 0, err
    rows = {(d["metric"], d["params"].get("stat")): d for d in map(json.loads, out.splitlines())
            if d["kind"] == "comparison"}
    tput = rows[("request_throughput", None)]
    assert (tput["n_a"], tput["n_b"]) == (2, 1)
    assert tput["mean_a"] == pytest.approx(tput["mean_b"]) and tput["delta_pct"] == pytest.approx(0.0)
    assert ("tpot_ms", "p99") in rows and ("output_token_throughput", None) in rows
