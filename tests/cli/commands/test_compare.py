"""Tests of clusterbench.cli.commands.compare: ``clusterbench compare SEL_A SEL_B``."""

import dataclasses
import itertools
import json
import random
import re
import shutil

import numpy as np
import pytest
from adjust_trials import base_sweep, sweep_runs
from judge_helpers import cli, coll_rows, json_lines, run_cli, save
from paths import TESTS
from scipy import stats as sps
from work_helpers import cli as cli_work_serving
from work_helpers import stored

from clusterbench.judge.compare import SAME, compare
from clusterbench.judge.select import Row
from clusterbench.records import Measurement, Run
from clusterbench.report.jsonl import run_lines
from clusterbench.store import Store

GOLDEN = TESTS / "data" / "golden" / "pre-redesign.db"


EXTREMES = [1.7e308, 1e-300, 5e-324, -0.0, 0.0, 123456789012345678.0, 12.5, 3.25, -7.5, 1e15, -1.7e308]


# the database's values: -1.7e308 and 1.7e308 in one row overflow the judge's standard deviation
# (see test_compare_of_values_spanning_the_float_range)
STORED = EXTREMES[:-1]


# a run of digits no column holds: what an unbounded fixed-point format prints for 1.7e308
WALL = re.compile(r"\d[\d,]{24,}")


@pytest.fixture(scope="module")
def extreme_db(tmp_path_factory) -> str:
    """Each golden run twice (tags copy=0 and copy=1), its values cycling through EXTREMES."""
    where = tmp_path_factory.mktemp("extreme")
    shutil.copy(GOLDEN, where / "golden.db")
    values = itertools.cycle(STORED)
    path = str(where / "extreme.db")
    with Store.open(str(where / "golden.db")) as src, Store.open(path) as dst:
        for run in sorted(src.list_runs(), key=lambda r: r.id or 0):
            for copy in range(2):
                ms = [dataclasses.replace(m, value=next(values)) for m in src.measurements(run.id)]
                again = dataclasses.replace(run, id=None, tags={**run.tags, "copy": str(copy)})
                dst.save_run(again, ms)
    return path


def _ok(rc: int, out: str, err: str, codes: tuple[int, ...] = (0,)) -> None:
    assert rc in codes, (rc, err)
    assert "Traceback" not in out + err and "internal error" not in err, err


def _store_two_sides(db) -> None:
    """Five runs a side at 3% noise; B 10% lower at the large sizes (env=a, env=b)."""
    base = base_sweep()
    rng = random.Random(11)
    for side, start, step in (("a", 1, 0.0), ("b", 1000, 0.10)):
        rows = sweep_runs(base, 5, 0.03, rng, start, step)
        for i in range(5):
            save(db, [r.m for r in rows if r.run.id == start + i], benchmark="import", tags={"env": side})


def rows_judge_compare(values, bytes_=1 << 30, metric="busbw", unit="GB/s", start=1):
    out = []
    for i, v in enumerate(values):
        run = Run("coll", id=start + i)
        out.append(Row(run, Measurement("all_reduce", metric, v, unit,
                                        {"bytes": bytes_, "placement": "in", "host": f"h{i}"})))
    return out


G8 = 8 << 30


def _coll(v: float) -> list[Measurement]:
    return [Measurement("all_reduce", metric, v, "GB/s", {"bytes": G8, "count": G8 // 4, "dtype": "float",
                                                           "redop": "sum", "root": -1, "placement": place})
            for metric in ("busbw", "algbw") for place in ("out", "in")]


def _stream(v: float) -> list[Measurement]:
    return [Measurement("stream", "bandwidth", v, "GB/s",
                        {"kernel": "Triad", "dtype": "double", "device": "0", "array_size": 1 << 28})]


@pytest.fixture(scope="module")
def probe_db(tmp_path_factory) -> str:
    """Runs stored as a user would: a clusterbench JSON lines file imported."""
    where = tmp_path_factory.mktemp("probe")
    lines: list[str] = []
    for i, v in enumerate((1.7e308, 5e-324)):
        lines += run_lines(Run("coll", hosts=["h1", "h2"], ranks=2, id=2 * i + 1,
                               tags={"x": "coll", "link_speed": "100Gbps"}), _coll(v))
        lines += run_lines(Run("stream", hosts=["h1"], ranks=1, devices=["AMD Instinct MI300X"], id=2 * i + 2,
                               tags={"x": "stream"}), _stream(v))
    for i, (tag, v) in enumerate([("a", 1e-300), ("a", 1.1e-300), ("a", 0.9e-300),
                                  ("b", 1.7e308), ("b", 1.6e308), ("b", 1.65e308)]):
        lines += run_lines(Run("stream", hosts=["h1"], ranks=1, id=10 + i, tags={"cmp": tag}), _stream(v))
    (where / "runs.jsonl").write_text("\n".join(lines) + "\n")
    db = str(where / "probe.db")
    rc, _, err = run_cli("import", where / "runs.jsonl", "--db", db)
    assert rc == 0, err
    return db


PARAMS = {"bytes": 1 << 30, "count": 1 << 28, "dtype": "float", "redop": "sum", "root": -1,
          "placement": "in", "ranks": 16}


def _busbw(value: float) -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", value, "GB/s", dict(PARAMS))]


DATA = TESTS / "data"


RCCL = DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"      # out- and in-place columns


A3 = DATA / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"


PKB = DATA / "nccl-tests" / "pkb-k80-2node-transitional-format-wrong-na.txt"   # N/A in #wrong


PERFTEST = DATA / "perftest" / "cx7-ndr-4-tools-mib-sec-default-cpu-freq-warnings.txt"   # import warnings


BABEL = DATA / "babelstream" / "kaanolgu-v4.0-openacc-v100-validation-failed.txt"   # failed, errors


VLLM = DATA / "vllm-serving" / "vllm-pr7062-serving-result-text-truncated.txt"     # incomplete


OSU = DATA / "osu" / "hpcbench-osu_bw-v5.3.2-host.txt"


ODD_TAGS = {"team": 'a,b "q" <b>&amp;', "nl": "x\ny", "ctl": "bell\x07\x1b[31m"}


ODD_ERROR = "boom <b>bold</b> & \x1b[2J"


def _cli(*argv: object) -> tuple[int, str, str]:
    return run_cli(*argv)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("agree")
    db = str(tmp / "r.db")
    for side in ("A", "B"):
        for i, path in enumerate((RCCL, A3, PKB)):
            rc, _, err = _cli("import", path, "--db", db, "--tag", f"side={side}", "--tag", f"file={i}")
            assert rc == 0, err
    for path in (PERFTEST, BABEL, VLLM, OSU):
        rc, _, err = _cli("import", path, "--db", db, "--tag", "side=C")
        assert rc in (0, 1), err
    params = {"count": 2, "dtype": "float", "redop": "sum", "root": -1, "placement": "out", "ranks": 2}
    edge = [Measurement("all_reduce", "busbw", v, "GB/s", {**params, "bytes": b})
            for b, v in ((8, 5e-324), (16, 1.7e308), (32, -1.7e308), (64, 12.345))]
    edge.append(Measurement("odd", "m", 1.5, "u", {"p": 'v,"1"\n2', "q": "<i>"}))
    with Store.open(db) as s:
        ids = {"edge": s.save_run(Run("coll", hosts=["h<1>&"], ranks=2, tags=ODD_TAGS, errors=[ODD_ERROR],
                                      meta={"warnings": ["doubt <w>"],
                                            "notes": [{"text": "note <n>", "benchmark": "all_reduce"}]}), edge),
               "failed": s.save_run(Run("coll", hosts=["n1"], ranks=2, status="failed", tags={"only": "failed"},
                                        errors=["rank 1 died"]), [])}
        # two runs whose values at 16 B are +-1.7e308: their sd overflows a float
        for k, sign in enumerate((1.0, -1.0)):
            s.save_run(Run("coll", hosts=["e"], ranks=2, tags={"grp": "b", "k": str(k)}),
                       [Measurement(m.benchmark, m.metric, m.value * sign if abs(m.value) > 1e300 else m.value,
                                    m.unit, m.params) for m in edge[:4]])
        s.save_run(Run("coll", hosts=["e"], ranks=2, tags={"grp": "a"}), edge[:4])
    rc, out, _ = _cli("results", "list", "--db", db, "--json", "--limit", "1000")
    runs = {o["id"]: o for o in map(json.loads, out.splitlines())}
    return {"db": db, "tmp": tmp, "runs": runs, **ids}


def _lines(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines() if x.startswith("{")]


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


def test_compare_table_and_json_agree(store):
    for a, b in (("side=A", "side=B"), ("grp=a", "grp=b")):
        rc, text, _ = _cli("compare", a, b, "--db", store["db"])
        rcj, js, _ = _cli("compare", a, b, "--db", store["db"], "--json")
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
