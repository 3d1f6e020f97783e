import random

import pytest
from judge_helpers import cli, coll_rows, json_lines, save

from clusterbench.errors import UsageError
from clusterbench.judge.profiles import dump_profile, load_profile, parse_profile
from clusterbench.records import Measurement
from clusterbench.units import convert

PROFILE = """
name: t
criteria:
  - name: big all_reduce
    source: test
    benchmark: all_reduce
    metric: busbw
    params: {placement: in, bytes: 8589934592}
    op: ">="
    value: {value}
    unit: GB/s
"""


def _profile(tmp_path, text, name="p.yaml"):
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return str(p)


def test_validate_pass_fail_exit_codes(tmp_path, db, capsys):
    save(db, coll_rows(1.0, random.Random(1)))
    ok = _profile(tmp_path, PROFILE.replace("{value}", "250"), "ok.yaml")
    rc, out, _ = cli(capsys, "validate", "last", "--profile", ok, "--db", db)
    assert rc == 0, out
    assert "PASS" in out and "big all_reduce" in out
    bad = _profile(tmp_path, PROFILE.replace("{value}", "350"), "bad.yaml")
    rc, out, _ = cli(capsys, "validate", "--profile", bad, "--db", db, "--json")
    assert rc == 1
    o, summary = json_lines(out)
    assert o["kind"] == "criterion" and o["status"] == "fail" and o["measured"] < 350 and o["margin"] < 0
    assert summary["kind"] == "summary" and summary["exit_code"] == 1
    assert summary["counts"] == {"pass": 0, "fail": 1, "skipped": 0, "error": 0}


def test_percentage_of_baseline_and_range(tmp_path, db, capsys):
    save(db, [Measurement("gemm", "tflops", 95.0, "TFLOP/s", {"m": 8, "n": 8, "k": 8, "dtype": "fp16"}),
              Measurement("gemm", "time_us", 12.0, "us", {"m": 8, "n": 8, "k": 8, "dtype": "fp16"})])
    p = _profile(tmp_path, """
criteria:
  - {name: pct, benchmark: gemm, metric: tflops, op: ">=", baseline: 100, pct: 90}
  - {name: rng, benchmark: gemm, metric: time_us, op: range, min: 10, max: 11}
  - {name: ms, benchmark: gemm, metric: time_us, op: "<=", value: 0.013, unit: ms}
  - {name: absent, benchmark: gemm, metric: tflops, params: {dtype: fp8_e4m3}, op: ">=", value: 1}
""")
    rc, out, _ = cli(capsys, "validate", "--profile", p, "--db", db, "--json")
    res = {o["criterion"]: o for o in json_lines(out) if "criterion" in o}
    assert res["pct"]["status"] == "pass" and res["pct"]["threshold"].startswith(">= 90")
    assert res["rng"]["status"] == "fail"
    assert res["ms"]["status"] == "pass"  # 0.013 ms = 13 us >= 12 us
    assert res["absent"]["status"] == "skipped" and "fp8_e4m3" in res["absent"]["detail"]
    assert rc == 1


def test_outlier_criterion_one_host_30_percent_slow(tmp_path, db, capsys):
    rng = random.Random(3)
    ms = []
    for i in range(8):
        ms += coll_rows(0.7 if i == 5 else 1.0, rng, noise_small=0.01, host=f"gpu-{i:02d}")
    save(db, ms, hosts=[f"gpu-{i:02d}" for i in range(8)])
    p = _profile(tmp_path, """
criteria:
  - name: no slow host
    benchmark: all_reduce
    metric: busbw
    params: {placement: in}
    outliers: none
    by: host
""")
    rc, out, _ = cli(capsys, "validate", "--profile", p, "--db", db, "--json")
    (o,) = [x for x in json_lines(out) if x["kind"] == "criterion"]
    assert rc == 1 and o["status"] == "fail"
    assert {x["host"] for x in o["outliers"]} == {"gpu-05"}
    big = [x for x in o["outliers"] if int(dict(x["params"])["bytes"]) >= 1 << 20]
    assert big and all(abs(x["rel_dev"] + 0.3) < 0.05 for x in big)


@pytest.mark.parametrize("text, msg", [
    ("criteria:\n  - {name: a, benchmark: b, metric: c, op: '>=', value: 1, colour: red}", "unknown key(s) colour"),
    ("criteria:\n  - {name: a, benchmark: b, metric: c, op: '=>', value: 1}", "op must be one of"),
    ("name: x\ncriteria: []", "no criteria"),
    ("name: x\ncriterias: []", "unknown key(s) criterias"),
    ("criteria:\n  - {name: a, benchmark: b, metric: c, op: '>=', value: fast}", "value must be a number"),
    ("criteria:\n  - {name: a, benchmark: b, metric: c, op: range, min: 3, max: 1}", "min is greater"),
    ("criteria:\n  - {name: a, benchmark: b, metric: c, outliers: some}", "outliers must be 'none'"),
    ("criteria: [\n", "invalid YAML"),
    # units are read by the CLI's one unit table, when the profile loads
    ("name: x\ncriteria:\n  - name: a\n    benchmark: all_reduce\n    metric: busbw\n    op: '>='\n"
     "    value: 1\n    unit: GBs\n", "criterion 1 ('a'), line 8: unknown unit 'GBs'"),
    ("name: x\ncriteria:\n  - name: a\n    benchmark: all_reduce\n    metric: busbw\n    op: '>='\n"
     "    value: 1\n    unit: us\n", "line 8: unit 'us' is a time, but all_reduce busbw is in GB/s"),
    ("name: x\ncriteria:\n  - {name: ok, benchmark: b, metric: c, op: '>=', value: 1}\n"
     "  - name: bad size\n    benchmark: all_reduce\n    metric: busbw\n    params: {bytes: 8X}\n"
     "    op: '>='\n    value: 1\n", "criterion 2 ('bad size'), line 7: invalid params.bytes '8X'"),
    ("name: x\ncriteria:\n  - name: a\n    name: b\n", "line 4: key 'name' given twice (first at line 3)"),
    ("criteria:\n  - {name: a, benchmark: b, metric: c, op: '>=', value: " + "9" * 400 + "}", "value must be a number"),
    ("name: x\ncriteria:\n  - name: typo\n    benchmark: all_reduce\n    metric: bussbw\n    op: '>='\n"
     "    value: 1\n", "criterion 1 ('typo'), line 5: all_reduce has no metric 'bussbw' (it has: "),
    (b"criteria:\n  - {name: \"\xff\xfe\", benchmark: b, metric: c, op: '>=', value: 1}\n", "not UTF-8 text"),
])
def test_bad_profiles_are_usage_errors(tmp_path, db, capsys, text, msg):
    save(db, coll_rows(1.0, random.Random(1)))
    p = _profile(tmp_path, text)
    rc, out, err = cli(capsys, "validate", "--profile", p, "--db", db)
    assert rc == 2
    assert err.startswith("clusterbench: error: ") and msg in err and err.count("\n") == 1


def test_usage_errors(tmp_path, db, capsys):
    save(db, coll_rows(1.0, random.Random(1)))
    rc, _, err = cli(capsys, "validate", "env=nope", "--profile", "amd-mi300x-oem", "--db", db)
    assert rc == 2 and "matches no run" in err
    rc, _, err = cli(capsys, "validate", "--profile", "no-such-profile", "--db", db)
    assert rc == 2 and "unknown profile" in err
    rc, _, err = cli(capsys, "validate", "--profile", str(tmp_path / "missing.yaml"), "--db", db)
    assert rc == 2 and "does not exist" in err
    # nothing in the profile matches: exit 2 after the table
    p = _profile(tmp_path, "criteria:\n  - {name: a, benchmark: stream, metric: bandwidth, op: '>=', value: 1}")
    rc, out, err = cli(capsys, "validate", "--profile", p, "--db", db)
    assert rc == 2 and "SKIPPED" in out and "matched any measurement" in err


def test_profile_units_and_sizes_as_on_the_command_line(tmp_path, db, capsys):
    """Every unit spelling the CLI takes works in a profile; sizes take K/M/G; thresholds print
    in the profile's unit without exponents."""
    save(db, coll_rows(1.0, random.Random(1)))  # 8 GiB in-place busbw about 300 GB/s
    p = _profile(tmp_path, """
criteria:
  - {name: gbps, benchmark: all_reduce, metric: busbw, params: {placement: in, bytes: 8G}, op: ">=", value: 2000, unit: Gbps}
  - {name: gbit, benchmark: all_reduce, metric: busbw, params: {placement: in, bytes: 8GiB}, op: ">=", value: 2000, unit: Gbit/s}
  - {name: mbs, benchmark: all_reduce, metric: busbw, params: {placement: in, bytes: [8G, 2G]}, op: ">=", value: 200000, unit: MB/s}
  - {name: big, benchmark: all_reduce, metric: busbw, params: {placement: in, bytes: 8G}, op: "<=", value: 9000000, unit: MB/s}
""")
    rc, out, _ = cli(capsys, "validate", "--profile", p, "--db", db, "--json")
    res = {o["criterion"]: o for o in json_lines(out) if o["kind"] == "criterion"}
    assert rc == 0 and {o["status"] for o in res.values()} == {"pass"}
    assert res["gbps"]["matched"] == 1 and res["mbs"]["matched"] == 2
    assert res["gbps"]["params"] == {"placement": "in", "bytes": 8589934592}
    assert res["gbit"]["threshold"] == ">= 2,000 Gbit/s"
    assert res["big"]["threshold"] == "<= 9,000,000 MB/s"
    loaded = load_profile(p)
    assert [c.unit for c in loaded.criteria] == ["Gbps", "Gbit/s", "MB/s", "MB/s"]


def test_nothing_matched_is_exit_2_as_the_help_says(tmp_path, db, capsys):
    save(db, coll_rows(1.0, random.Random(1)))
    p = _profile(tmp_path, "criteria:\n  - {name: a, benchmark: stream, metric: bandwidth, op: '>=', value: 1}")
    rc, out, err = cli(capsys, "validate", "--profile", p, "--db", db, "--json")
    lines = json_lines(out)
    assert rc == 2 and lines[0]["status"] == "skipped" and lines[-1]["exit_code"] == 2
    assert err.count("\n") == 1 and "matched any measurement" in err
    rc, help_text, _ = cli(capsys, "validate", "--help")
    assert "2 for usage errors, including a profile none of whose criteria matched" in " ".join(help_text.split())


def test_units_convert():
    assert convert(94100, "GFLOP/s", "TFLOP/s") == pytest.approx(94.1)
    assert convert(4177285, "MB/s", "GB/s") == pytest.approx(4177.285)
    with pytest.raises(ValueError):
        convert(1, "GB/s", "us")


def test_builtin_profile_has_every_table_threshold():
    p = load_profile("amd-mi300x-oem")
    by_table: dict[str, int] = {}
    for c in p.criteria:
        for t in range(1, 7):
            if f"Table {t}" in c.source:
                by_table[t] = by_table.get(t, 0) + 1
    # Table 1: 1, Table 2: 2, Table 3: 6 (Test 5 is N/A), Table 4: 1, Table 5: 3, Table 6: 5
    assert by_table == {1: 1, 2: 2, 3: 6, 4: 1, 5: 3, 6: 5}
    gemm = [c for c in p.criteria if c.benchmark == "gemm"]
    assert [convert(c.value, c.unit, "TFLOP/s") for c in gemm] == pytest.approx([94.1, 130.6, 162.7])


def test_dump_profile_round_trips():
    p = load_profile("amd-mi300x-oem")
    import yaml

    again = parse_profile(yaml.safe_load(dump_profile(p)))
    assert again.criteria == p.criteria


def test_parse_profile_rejects_non_mapping():
    with pytest.raises(UsageError):
        parse_profile(["a"])


def test_a_failing_upper_bound_says_above_and_a_range_outside(tmp_path, db, capsys):
    save(db, [Measurement("gemm", "time_us", v, "us", {"m": 8, "n": 8, "k": k, "dtype": "fp16"})
              for k, v in ((8, 12.0), (16, 30.0), (32, 31.0))])
    p = _profile(tmp_path, """
criteria:
  - {name: upper, benchmark: gemm, metric: time_us, op: "<=", value: 20}
  - {name: rng, benchmark: gemm, metric: time_us, op: range, min: 11, max: 13}
""")
    rc, out, _ = cli(capsys, "validate", "--profile", p, "--db", db, "--json")
    res = {o["criterion"]: o for o in json_lines(out) if "criterion" in o}
    assert rc == 1
    assert res["upper"]["detail"].startswith("2 of 3 above the bound")
    assert res["rng"]["detail"].startswith("2 of 3 outside the bound")
