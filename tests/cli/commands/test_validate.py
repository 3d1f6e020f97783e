"""Tests of clusterbench.cli.commands.validate: ``clusterbench validate``."""

import json
import random

import pytest
from drain_profiles import PROFILE, _stream_runs
from hostile_text import _cb, _clean
from judge_helpers import EXPECTED, C, cli, coll_rows, json_lines, run_cli, save
from junit_xml import _cases, _read
from stored_runs import _no_wall, _ok

from clusterbench.judge.profiles import load_profile
from clusterbench.records import Measurement, Run
from clusterbench.report.jsonl import run_lines
from clusterbench.store import Store

# 1e300 stays finite through a percent (x100) or a link rate, so its efficiency or speedup is a
# number of 300 digits in fixed-point form, where 1.7e308 would only reach inf
FAR = [1e300, 1.7e308, 1e-300, 5e-324, -0.0, -7.5, 12.5, 123456789012345678.0, -1e300]


# a median near zero with a tight spread, and one run far below: a deviation of -7.5e302%
NEAR_ZERO = [1e-300, 1.01e-300, 0.99e-300, 1.02e-300, -7.5]


GIB8 = 8 << 30


def _all_reduce(value: float) -> list[Measurement]:
    return [Measurement("all_reduce", metric, value, "GB/s",
                        {"bytes": GIB8, "count": GIB8 // 4, "dtype": "float", "redop": "sum", "root": -1,
                         "placement": place})
            for metric in ("busbw", "algbw") for place in ("out", "in")]


@pytest.fixture(scope="module")
def far_db(tmp_path_factory) -> str:
    """What the commands that judge runs compute from: two-host all_reduce runs (tag v) for a link
    efficiency, runs around 1e-300 with one far below (tag near=0) for a baseline's left-out run,
    MI300X stream runs for a percent of peak, train runs (tag scale=1) for speedups of 1e300, and
    an inventory whose memory is past what a float holds."""
    path = str(tmp_path_factory.mktemp("far") / "far.db")
    huge = {"h1": {"host": "h1", "memory": {"total_bytes": 10 ** 400},
                   "cpu": {"numa_nodes": [{"node": 0, "cpus": "0-1", "memory_bytes": 1.7e308}]}}}
    with Store.open(path) as s:
        for i, v in enumerate(FAR):
            s.save_run(Run("coll", hosts=["h1", "h2"], ranks=2, tags={"v": str(i), "link_speed": "100Gbps"},
                           meta={"inventory": huge}), _all_reduce(v))
            s.save_run(Run("stream", hosts=["h1"], ranks=1, devices=["AMD Instinct MI300X"], tags={"v": str(i)}),
                       [Measurement("stream", "bandwidth", v, "GB/s",
                                    {"kernel": "Triad", "dtype": "double", "device": "0", "array_size": 1 << 28})])
        for v in NEAR_ZERO:
            s.save_run(Run("coll", hosts=["h1", "h2"], ranks=2, tags={"near": "0"}), _all_reduce(v))
        for nodes, v in ((1, 12.5), (2, 1e300), (4, 5e-324), (8, 1.7e308)):
            s.save_run(Run("train", hosts=[f"n{i}" for i in range(nodes)], ranks=nodes, tags={"scale": "1"}),
                       [Measurement("train", "samples_per_s", v, "samples/s", {"stat": "avg"})])
    return path


PROFILE_judge_validate = """
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


@pytest.mark.parametrize("argv, codes", [
    (["validate", "1..99", "--profile", "cpu-smoke", "--link-speed", "100Gbps"], (0, 1)),
    (["validate", "1..99", "--profile", "amd-mi300x-oem", "--link-speed", "1bps", "--nodes", "3"], (1,)),
    (["theory", "--run", "1..99"], (0,)),
    (["theory", "--run", "v=0", "--link", "1bps"], (0,)),
    # a link past any real one (the 20 digits are the user's own, echoed in the heading)
    (["theory", "--link", "99999999999999999999Gbps"], (0,)),
    (["scaling", "scale=1"], (0,)),
    (["scaling", "scale=1", "--baseline", "scale=1"], (0,)),
    (["baseline", "create", "near=0", "-o", "{tmp}/near.yaml"], (0,)),
    (["baseline", "create", "1..99", "-o", "{tmp}/all.yaml"], (0, 2)),
    (["env", "show", "v=0"], (0,)),
])
def test_judging_commands_print_far_values_compactly(far_db, tmp_path, argv, codes):
    argv = [a.format(tmp=tmp_path) for a in argv]
    rc, out, err = run_cli(*argv, "--db", far_db)
    _ok(rc, out, err, codes)
    _no_wall(argv, out, err)


def test_far_values_read_as_exponents(far_db, tmp_path):
    """What each of those lines says instead of 300 digits."""
    _, out, _ = run_cli("validate", "v=0", "--profile", "cpu-smoke", "--link-speed", "100Gbps", "--db", far_db)
    assert "algbw 1e+300 GB/s = 8e+300% of optimal 12.50 GB/s" in out
    _, out, _ = run_cli("validate", "1..99", "--profile", "amd-mi300x-oem", "--db", far_db)
    assert "# peak stream Triad: best 1.7e+308 GB/s = 3.20755e+306% of AMD Instinct MI300X datasheet" in out
    _, out, _ = run_cli("validate", "v=0", "v=3", "--profile", "amd-mi300x-oem", "--db", far_db)
    assert "= 1.88679e+298% of AMD Instinct MI300X" in out
    _, out, _ = run_cli("theory", "--run", "v=0", "--link", "99999999999999999999Gbps", "--db", far_db)
    head, *rows = out.splitlines()[1:7]
    assert rows[0] == "     2      1.25e+19      1.25e+19" and {len(r) for r in rows} == {len(head)}
    assert "1e+300 GB/s = 8e+282% of 1.25e+19 GB/s" in out
    _, out, _ = run_cli("scaling", "scale=1", "--db", far_db)
    rows = [line.split() for line in out.splitlines() if not line.startswith("#")]
    assert [r[-2:] for r in rows] == [["1.000", "1.000"], ["8e+298", "4e+298"], ["0.000", "0.000"],
                                      ["1.4e+307", "1.7e+306"]]
    _, _, err = run_cli("baseline", "create", "near=0", "-o", tmp_path / "p.yaml", "--db", far_db)
    assert "-7.5 is -7.5e+302% vs median 1e-300 (modified z -5.05875e+302)" in err, err
    _, out, _ = run_cli("env", "show", "v=0", "--db", far_db)
    assert "memory    9.31323e+390 GiB; NUMA nodes: 0 (cpus 0-1, 1.58325e+299 GiB)" in out


@pytest.mark.parametrize("argv", [
    ["validate", "1..99", "--profile", "cpu-smoke", "--link-speed", "1bps", "--nodes", "2"],
    ["validate", "1..99", "--profile", "amd-mi300x-oem", "--link-speed", "100Gbps", "--nodes", "2"],
    ["theory", "--run", "1..99", "--link", "1bps", "--nodes", "2"],
    ["theory", "--run", "1..99"],
    ["scaling", "copy=1", "--baseline", "copy=0"],
    ["scaling", "copy=0", "copy=1"],
    ["baseline", "create", "1..99", "-o", "{tmp}/b.yaml"],
])
def test_judging_commands_on_the_extreme_database(extreme_db, tmp_path, argv):
    argv = [a.format(tmp=tmp_path) for a in argv]
    rc, out, err = run_cli(*argv, "--db", extreme_db)
    _ok(rc, out, err, (0, 1, 2) if argv[0] == "baseline" else (0, 1))
    _no_wall(argv, out, err)


def test_a_refused_node_name_ends_the_json_lines_without_a_summary_that_contradicts_it(capsys, db, tmp_path):
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE)
    _stream_runs(db, {"-all": 90.0, "n2": 120.0}, "a")   # a host name scontrol would take as an option
    rc, out, err = cli(capsys, "validate", "check=a", "--profile", str(prof), "--db", db, "--on-fail", "taint",
                       "--json")
    assert rc == 2 and err.count("\n") == 1 and "-all" in err
    assert [d["kind"] for d in json_lines(out) if d["kind"] in ("summary", "drain")] == []


def test_cli_usage_errors(capsys, db, tmp_path, monkeypatch):
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE)
    _stream_runs(db, {"n1": 90.0}, "a")
    rc, _, err = cli(capsys, "validate", "check=a", "--profile", str(prof), "--db", db, "--apply")
    assert rc == 2 and "--apply and --undrain need --on-fail" in err
    monkeypatch.setenv("PATH", str(tmp_path))   # no scontrol
    rc, _, err = cli(capsys, "validate", "check=a", "--profile", str(prof), "--db", db, "--on-fail", "drain",
                     "--apply")
    assert rc == 2 and err.count("\n") == 1 and "scontrol not found" in err


def test_validate_junit_has_every_criterion_with_its_verdict(seed_db, capsys, tmp_path):  # noqa: F811
    out = tmp_path / "validate.xml"
    rc, _, err = cli(capsys, "validate", "seed=mi300x", "--profile", "amd-mi300x-oem", "--db", seed_db,
                     "--junit", str(out))
    assert rc == 1, err
    root = _read(out)
    cases = _cases(root)
    assert len(cases) == 19
    for name, (status, measured) in EXPECTED.items():
        c = cases[name]
        if status == "pass":   # no verdict element; the measured value in its output
            assert [e.tag for e in c] == ["system-out"]
            assert f"measured: {measured:.6g}" in c.find("system-out").text
        else:
            f = c.find("failure")
            assert f is not None and f.get("type") == "fail"
            # the measured value, the threshold and the evidence are in the failure
            assert "measured 48.349 GB/s" in f.get("message") and ">= 48.4 GB/s" in f.get("message")
            assert "source: Table 3 (Test 2" in f.text and "runs: " in f.text
    skipped = [n for n, c in cases.items() if c.find("skipped") is not None]
    assert skipped == ["no degraded GPU in BabelStream Triad"]
    assert root.get("failures") == "1" and root.find("testsuite").get("skipped") == "1"


def test_junit_into_a_missing_directory_is_one_line(seed_db, capsys, tmp_path):  # noqa: F811
    rc, _, err = cli(capsys, "validate", "seed=mi300x", "--profile", "amd-mi300x-oem", "--db", seed_db,
                     "--junit", str(tmp_path / "nope" / "x.xml"))
    assert rc == 2 and err.count("\n") == 1 and "does not exist" in err


def test_seed_outputs_against_amd_mi300x_oem(seed_db, capsys):
    rc, out, _ = cli(capsys, "validate", "seed=mi300x", "--profile", "amd-mi300x-oem", "--db", seed_db, "--json")
    res = {o["criterion"]: o for o in json_lines(out) if "criterion" in o}
    for name, (status, measured) in EXPECTED.items():
        assert res[name]["status"] == status, (name, res[name])
        assert res[name]["measured"] == pytest.approx(measured, rel=1e-6), name
    t2 = res["TransferBench config Test 2 (DMA G0->G1)"]
    assert t2["margin"] == pytest.approx(48.349 - 48.4) and t2["margin_pct"] == pytest.approx(-0.105, abs=1e-3)
    # GEMM thresholds are GFLOPS in the table: shown in the measurements' TFLOP/s, compared as
    # 94.1 TFLOP/s (97.19 TFLOP/s passes; 97.19 against 94100 would fail), stated as the profile has it
    gemm = res["rocBLAS FP32 GEMM 4000x4000x4000"]
    assert gemm["threshold"] == ">= 94.1 TFLOP/s" and gemm["unit"] == "TFLOP/s"
    assert gemm["stated"] == ">= 94,100 GFLOP/s"
    assert gemm["margin"] == pytest.approx(97.1906 - 94.1)
    # thresholds in the measurements' unit, 6 significant digits, without exponent notation
    assert res["BabelStream Copy"]["threshold"] == ">= 4,177.29 GB/s"
    assert res["BabelStream Copy"]["stated"] == ">= 4,177,285 MB/s"
    # only two GPUs' BabelStream output is in the guide: too few to look for a degraded one
    assert res["no degraded GPU in BabelStream Triad"]["status"] == "skipped"
    assert rc == 1  # Test 2 fails


def test_seed_table_output_and_single_family(seed_db, capsys):
    rc, out, _ = cli(capsys, "validate", "seed=mi300x", "--profile", "amd-mi300x-oem", "--db", seed_db)
    assert rc == 1
    assert "FAIL     TransferBench config Test 2 (DMA G0->G1)" in out
    assert "# 17 pass, 1 fail, 1 skipped, 0 error" in out
    assert ">= 4,177.29 GB/s" in out and "MB/s" not in out and "e+0" not in out
    # device results as percent of the datasheet peak (MI300X HBM3: 5.3 TB/s)
    assert "# peak stream Copy: best 4269 GB/s = 80.5% of AMD Instinct MI300X datasheet 5300 GB/s" in out
    # the RCCL run alone passes: everything else is skipped, exit 0
    rc, out, _ = cli(capsys, "validate", "1", "--profile", "amd-mi300x-oem", "--db", seed_db)
    assert rc == 0 and "# 1 pass, 0 fail, 18 skipped, 0 error" in out


def test_validate_pass_fail_exit_codes(tmp_path, db, capsys):
    save(db, coll_rows(1.0, random.Random(1)))
    ok = _profile(tmp_path, PROFILE_judge_validate.replace("{value}", "250"), "ok.yaml")
    rc, out, _ = cli(capsys, "validate", "last", "--profile", ok, "--db", db)
    assert rc == 0, out
    assert "PASS" in out and "big all_reduce" in out
    bad = _profile(tmp_path, PROFILE_judge_validate.replace("{value}", "350"), "bad.yaml")
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
    assert res["gbit"]["threshold"] == ">= 250 GB/s" and res["gbit"]["stated"] == ">= 2,000 Gbit/s"
    assert res["big"]["threshold"] == "<= 9,000 GB/s" and res["big"]["stated"] == "<= 9,000,000 MB/s"
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


def test_validate_and_compare_escape(capsys, evil_db, tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text(json.dumps({"name": "evil", "criteria": [
        {"name": "busbw \x1b[2J", "benchmark": "all_reduce", "metric": "busbw", "op": ">=", "value": 0.5,
         "unit": "GB/s"}]}))
    code, out, err = _cb(capsys, ["validate", "1", "--profile", str(profile), "--db", evil_db])
    _clean(out + err)
    assert "busbw \\x1b[2J" in out
    code, out, err = _cb(capsys, ["compare", "1", "2", "--db", evil_db])
    _clean(out + err)
    assert "mystery\\x1b[2J" in out


def test_text_and_json_say_the_same(seeded):
    code, out, _ = run_cli("validate", "seed=mi300x", "--profile", "amd-mi300x-oem", "--db", seeded)
    jcode, jout, _ = run_cli("validate", "seed=mi300x", "--profile", "amd-mi300x-oem", "--db", seeded, "--json")
    assert code == jcode == 1
    lines = json_lines(jout)
    crits = [d for d in lines if d["kind"] == "criterion"]
    table = [t for t in out.splitlines()[2:] if t.split(" ", 1)[0] in ("PASS", "FAIL", "SKIPPED", "ERROR")]
    assert len(table) == len(crits) == 19
    for text, d in zip(table, crits, strict=True):
        assert text.startswith(d["status"].upper()) and d["threshold"] in text
        if d["margin"] is not None:
            assert f"{d['margin']:+.4g}" in text
    assert lines[-1]["counts"] == {"pass": 17, "fail": 1, "skipped": 1, "error": 0}
    assert "# 17 pass, 1 fail, 1 skipped, 0 error" in out


def test_bad_profile_on_the_command_line_is_exit_2(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: t\ncriteria:\n" + C + ", params: 0}\n")
    code, out, err = run_cli("validate", "--profile", path, "--db", tmp_path / "cb.db")
    assert code == 2 and out == "" and err.count("\n") == 1 and "line 3" in err


# -- profiles judge only the hardware they are for -------------------------------------------------
H100 = "NVIDIA H100 80GB HBM3"
# BENCHMARKS.md, one NVIDIA H100 80GB HBM3 (SXM), 2026-11-26: what clusterbench measured there
H100_FIGURES = {("stream", "Copy"): 3007.0, ("stream", "Triad"): 2993.0, ("gemm", "bf16"): 793.4,
                ("gemm", "fp16"): 769.6, ("gemm", "tf32"): 414.4, ("gemm", "fp8_e4m3"): 1459.0,
                ("transfer", "h2d"): 52.05, ("transfer", "d2h"): 53.10}


def _h100_lines(bandwidth: float = 1.0, run_id: int = 1) -> list[str]:
    """The H100's stream, GEMM and transfer runs as clusterbench JSON lines; ``bandwidth`` scales
    every bandwidth (stream and copies), GEMM as measured."""
    meta = {"device_type": "cuda", "device_names": {"cuda:0": H100}}
    stream = [Measurement("stream", "bandwidth", H100_FIGURES[("stream", k)] * bandwidth, "GB/s",
                          {"kernel": k, "array_size": 1 << 27, "dtype": "double", "device": "cuda:0", "memory": "main"})
              for k in ("Copy", "Triad")]
    gemm = [Measurement("gemm", "tflops", H100_FIGURES[("gemm", d)], "TFLOP/s",
                        {"m": 8192, "n": 8192, "k": 8192, "batch": 1, "dtype": d, "transA": "N", "transB": "T",
                         "device": "cuda:0", "stat": "best"}) for d in ("tf32", "bf16", "fp16", "fp8_e4m3")]
    copies = [Measurement("transfer", "bandwidth", H100_FIGURES[("transfer", t)] * bandwidth, "GB/s",
                          {"src": "C0" if t == "h2d" else "G0", "dst": "G0" if t == "h2d" else "C0", "direction": "uni",
                           "method": "copy_engine", "bytes": 1 << 30, "test": t, "host_memory": "pinned", "stat": "pair"})
              for t in ("h2d", "d2h")]
    lines: list[str] = []
    for i, (bench, ms) in enumerate((("stream", stream), ("gemm", gemm), ("transfer", copies))):
        run = Run(bench, hosts=["gpu01"], ranks=1, devices=[H100], meta=dict(meta), id=run_id + i,
                  tags={"cut": str(bandwidth)})
        lines += run_lines(run, ms)
    return lines


def test_an_h100_run_of_the_benchmarks_figures_passes_its_profile_and_a_20_percent_cut_fails(capsys, db, tmp_path):
    whole, cut = tmp_path / "h100.jsonl", tmp_path / "h100-cut.jsonl"
    whole.write_text("\n".join(_h100_lines()) + "\n")
    cut.write_text("\n".join(_h100_lines(0.8, run_id=10)) + "\n")
    for f in (whole, cut):
        rc, _, err = cli(capsys, "import", f, "--db", db)
        assert rc == 0, err
    rc, out, _ = cli(capsys, "validate", "cut=1.0", "--profile", "nvidia-h100-sxm", "--db", db, "--json")
    res = {o["criterion"]: o for o in json_lines(out) if o["kind"] == "criterion"}
    assert rc == 0 and {o["status"] for o in res.values()} == {"pass"} and len(res) == 8, res
    copy = res["stream Copy at 80% of HBM bandwidth"]
    assert copy["threshold"] == ">= 80% of 3,350 GB/s = 2,680 GB/s" and copy["measured"] == 3007.0
    rc, out, _ = cli(capsys, "validate", "cut=0.8", "--profile", "nvidia-h100-sxm", "--db", db, "--json")
    res = {o["criterion"]: o for o in json_lines(out) if o["kind"] == "criterion"}
    failed = sorted(n for n, o in res.items() if o["status"] == "fail")
    # 2406 GB/s is 71.8% of 3350; 41.6 GB/s of copies 65% of PCIe Gen5 x16's 64 GB/s a direction
    assert rc == 1 and failed == ["d2h pinned 1 GiB at 70% of PCIe Gen5 x16", "h2d pinned 1 GiB at 70% of PCIe Gen5 x16",
                                  "stream Copy at 80% of HBM bandwidth", "stream Triad at 80% of HBM bandwidth"]
    # the same H100 run against the H200's profile: not the hardware it is for
    rc, out, _ = cli(capsys, "validate", "cut=1.0", "--profile", "nvidia-h200", "--db", db, "--json")
    res = [o for o in json_lines(out) if o["kind"] == "criterion"]
    assert rc == 0 and {(o["status"], o["reason"]) for o in res} == {("skipped", "hardware")}


def _cpu_stream_run(db: str) -> int:
    ms = [Measurement("stream", "bandwidth", v, "GB/s", {"kernel": k, "array_size": 1 << 25, "dtype": "double",
                                                        "device": "cpu", "memory": "main"})
          for k, v in (("Copy", 21.0), ("Mul", 20.0), ("Add", 23.0), ("Triad", 22.0), ("Dot", 19.0))]
    return save(db, ms, benchmark="stream", hosts=["vm"], ranks=1, devices=["AMD EPYC"],
                meta={"device_type": "cpu", "device_names": {"cpu": "AMD EPYC"}})


def test_a_cpu_run_against_the_mi300x_profile_is_skipped_not_failed(capsys, db, tmp_path):
    """validate 3 --profile amd-mi300x-oem on a CPU stream run failed all five BabelStream criteria
    (exit 1): a false alert on every node that is no MI300X."""
    rid = _cpu_stream_run(db)
    rc, out, err = cli(capsys, "validate", rid, "--profile", "amd-mi300x-oem", "--db", db, "--json")
    lines = json_lines(out)
    res = [o for o in lines if o["kind"] == "criterion"]
    assert rc == 0, err
    assert res and {(o["status"], o["reason"]) for o in res} == {("skipped", "hardware")}
    copy = next(o for o in res if o["criterion"] == "BabelStream Copy")
    assert copy["matched"] == 1 and "run 1 on AMD EPYC (cpu)" in copy["detail"] and "MI300X" in copy["detail"]
    assert lines[-1]["counts"] == {"pass": 0, "fail": 0, "skipped": 19, "error": 0} and lines[-1]["exit_code"] == 0
    rc, out, _ = cli(capsys, "validate", rid, "--profile", "amd-mi300x-oem", "--db", db)
    assert rc == 0 and "# profile amd-mi300x-oem is for devices (AMD )?(Instinct )?MI300X( VF)?" in out
    assert "# 0 pass, 0 fail, 19 skipped, 0 error" in out
    # JUnit: skipped cases that say why, no failure
    junit = tmp_path / "v.xml"
    rc, _, _ = cli(capsys, "validate", rid, "--profile", "amd-mi300x-oem", "--db", db, "--junit", junit)
    xml = junit.read_text()
    assert rc == 0 and "<failure" not in xml and 'skipped="19"' in xml and "not the hardware the profile is for" in xml
    # the smoke test's floors are for CPUs: it judges the same run
    rc, out, _ = cli(capsys, "validate", rid, "--profile", "cpu-smoke", "--db", db)
    assert rc == 0 and "PASS     stream Triad floor" in out
