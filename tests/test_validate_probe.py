"""validate against the real logs of tests/data, judged by hand: every criterion's measured value,
threshold, margin and verdict; units, params, aggregates, range, baseline, outliers; round trips
through ``baseline create`` and ``dump_profile``; and profile YAML that must be refused in one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from judge_helpers import json_lines, run_cli

from clusterbench.errors import UsageError
from clusterbench.judge.profile_yaml import load_yaml
from clusterbench.judge.profiles import dump_profile, load_profile, parse_profile
from clusterbench.judge.select import Row, load_runs, rows_of
from clusterbench.judge.validate import evaluate
from clusterbench.records import Measurement, Run
from clusterbench.store import Store

DATA = Path(__file__).parent / "data"
SEEDS = ["transferbench/seed-mi300x-a2a.txt", "transferbench/seed-mi300x-example-cfg.txt",
         "transferbench/seed-mi300x-p2p.txt", "nccl-tests/seed-mi300x-rccl-all_reduce-8gpu.txt",
         "babelstream/seed-mi300x-hip-8gpu-mpi.txt", "rocblas-bench/seed-mi300x-gemm_strided_batched_ex-bf16.txt",
         "rocblas-bench/seed-mi300x-gemm_strided_batched_ex-int8.txt", "rocblas-bench/seed-mi300x-sgemm-4000.txt"]

# From the logs, by hand: (criterion of amd-mi300x-oem, status, measured in the records' unit, the
# bound in that unit). Transfer lines are GB/s; BabelStream prints MB/s (stored /1000 as GB/s) and
# every GPU must pass (the worse of the two tables); rocblas-bench prints GFLOPS (stored /1000).
EXPECTED = [
    ("TransferBench a2a average bandwidth", "pass", 35.776, 32.9),                 # Average bandwidth (GPU Timed)
    ("TransferBench p2p average unidirectional copy GPU->GPU", "pass", 48.44, 33.9),   # Averages (During UniDir)
    ("TransferBench p2p average bidirectional copy GPU<->GPU", "pass", 46.24, 43.9),   # Averages (During BiDir)
    ("TransferBench config Test 1 (GFX G0->G1, 4 CUs)", "pass", 47.774, 47.1),      # Transfer 00 line
    ("TransferBench config Test 2 (DMA G0->G1)", "fail", 48.349, 48.4),
    ("TransferBench config Test 3, 0 to 1", "pass", 32.809, 31.9),
    ("TransferBench config Test 3, 1 to 0", "pass", 39.603, 38.9),
    ("TransferBench config Test 4 (memset G0)", "pass", 1274.598, 1264),
    ("TransferBench config Test 6 (broadcast G0 -> G0,G1)", "pass", 48.933, 48.6),
    ("RCCL all_reduce in-place busbw at 8 GiB", "pass", 315.84, 304),                # 8589934592 B, in-place
    ("rocBLAS FP32 GEMM 4000x4000x4000", "pass", 97.1906, 94.1),
    ("rocBLAS strided batched BF16 GEMM 1024x2048x512, batch 5", "pass", 159.783, 130.6),
    ("rocBLAS strided batched INT8 GEMM 1024x2048x512, batch 5", "pass", 177.478, 162.7),
    ("BabelStream Copy", "pass", 4255.995148, 4177.285),
    ("BabelStream Mul", "pass", 4113.642067, 4067.069),
    ("BabelStream Add", "pass", 3948.620619, 3920.853),
    ("BabelStream Triad", "pass", 3947.212603, 3885.301),
    ("BabelStream Dot", "pass", 3878.410495, 3660.781),
]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> str:
    db = str(tmp_path_factory.mktemp("probe") / "cb.db")
    for f in SEEDS:
        code, _, err = run_cli("import", DATA / f, "--tag", "seed=mi300x", "--db", db)
        assert code == 0, err
    return db


@pytest.fixture(scope="module")
def rows(seeded) -> list[Row]:
    with Store.open(seeded) as s:
        return rows_of(load_runs(s, ["seed=mi300x"]))


def _profile(text: str):
    return parse_profile(load_yaml(text), "p.yaml")


def _one(rows, **crit):
    """The outcome of one criterion written as a flow mapping."""
    crit.setdefault("name", "c")
    return evaluate(_profile("name: t\ncriteria:\n  - " + json.dumps(crit) + "\n"), rows)[0]


def test_builtin_profile_on_the_guides_own_logs(rows):
    got = {o.criterion.name: o for o in evaluate(load_profile("amd-mi300x-oem"), rows)}
    for name, status, measured, bound in EXPECTED:
        o = got[name]
        assert o.status == status, name
        assert o.measured == pytest.approx(measured, rel=1e-12), name
        assert o.margin == pytest.approx(measured - bound, abs=1e-9), name
        assert o.margin_pct == pytest.approx((measured - bound) / bound * 100, rel=1e-9), name
    assert got["BabelStream Copy"].threshold == ">= 4,177,285 MB/s"
    assert got["rocBLAS FP32 GEMM 4000x4000x4000"].threshold == ">= 94,100 GFLOP/s"
    # two tables are two "devices" of one host's import: too few to look for outliers, and it says so
    skipped = got["no degraded GPU in BabelStream Triad"]
    assert skipped.status == "skipped" and "at least 3" in skipped.detail


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


@pytest.mark.parametrize("value, unit, status", [
    (2526, "Gbps", "pass"), (2527, "Gbps", "fail"),          # 315.84 GB/s = 2526.72 Gbit/s
    (315840, "MB/s", "pass"), (315841, "MB/s", "fail"),
    (301208, "MiB/s", "pass"), (301209, "MiB/s", "fail"),    # 315.84e9 / 2**20 = 301208.5
    (315.84, "", "pass"), (0.31585, "TB/s", "fail"),
])
def test_units_convert_at_the_boundary(rows, value, unit, status):
    crit = dict(benchmark="all_reduce", metric="busbw", params={"placement": "in", "bytes": "8G"}, op=">=", value=value)
    if unit:
        crit["unit"] = unit
    o = _one(rows, **crit)
    assert (o.status, o.unit, o.measured) == (status, "GB/s", 315.84)


def test_times_in_another_unit(rows):
    crit = dict(benchmark="all_reduce", metric="time_us", params={"placement": "in", "bytes": 8589934592}, op="<=")
    assert _one(rows, **crit, value=47.594, unit="ms").status == "pass"        # 47594 us in-place
    o = _one(rows, **crit, value=47.5, unit="ms")
    assert (o.status, o.margin) == ("fail", pytest.approx(-94.0))


@pytest.mark.parametrize("params", [
    {"bytes": "8G"}, {"bytes": "8GiB"}, {"bytes": 8589934592}, {"dtype": "fp32", "bytes": "8G"},
    {"dtype": "FLOAT", "bytes": "8G"}, {"dtype": ["half", "float32"], "bytes": "8G"},
])
def test_sizes_and_dtypes_as_people_write_them(rows, params):
    o = _one(rows, benchmark="allreduce", metric="busbw", params={**params, "placement": "in"}, op=">=", value=1)
    assert (o.status, o.matched, o.measured) == ("pass", 1, 315.84)


@pytest.mark.parametrize("dtype", ["fp32", "float", "s", "float32", "FP32"])
def test_gemm_dtype_aliases(rows, dtype):
    o = _one(rows, benchmark="gemm", metric="tflops", params={"m": "4000", "dtype": dtype}, op=">=", value=97.19)
    assert (o.status, o.matched) == ("pass", 1)


def test_stream_dtype_and_size(rows):
    o = _one(rows, benchmark="stream", metric="bandwidth", params={"kernel": "Copy", "dtype": "fp64",
                                                                   "array_size": "256M"}, op=">=", value=1)
    assert (o.status, o.matched) == ("pass", 2)


@pytest.mark.parametrize("aggregate, measured, status", [
    ("all", 3878.410495, "fail"), ("min", 3878.410495, "fail"), ("max", 3927.179117, "pass"),
    ("mean", (3878.410495 + 3927.179117) / 2, "pass"), ("median", (3878.410495 + 3927.179117) / 2, "pass"),
])
def test_aggregates_over_the_two_tables(rows, aggregate, measured, status):
    o = _one(rows, benchmark="stream", metric="bandwidth", params={"kernel": "Dot"}, op=">=", value=3900,
             unit="GB/s", aggregate=aggregate)
    assert (o.status, o.measured, o.matched) == (status, pytest.approx(measured), 2)


def test_range_margin_is_to_the_nearer_bound(rows):
    crit = dict(benchmark="all_reduce", metric="busbw", params={"placement": "in", "bytes": "8G"}, op="range")
    o = _one(rows, **crit, min=300, max=320)
    assert (o.status, o.margin, o.margin_pct) == ("pass", pytest.approx(4.16), pytest.approx(4.16 / 320 * 100))
    o = _one(rows, **crit, min=0.3, max=0.31, unit="TB/s")
    assert (o.status, o.margin, o.margin_pct) == ("fail", pytest.approx(-5.84), pytest.approx(-5.84 / 310 * 100))


def test_baseline_bound_is_exact():
    """100% of a baseline is the baseline (x * 100 / 100 is an ulp above 255.598), and 95% of
    1.5e308 is not inf."""
    from clusterbench.judge.profiles import Criterion

    assert Criterion("c", "b", "m", baseline=255.598, pct=100.0).bound() == 255.598
    assert Criterion("c", "b", "m", baseline=1.5e308, pct=95.0).bound() == pytest.approx(1.425e308)
    assert Criterion("c", "b", "m", op="<=", baseline=47000, pct=101.2).bound() == pytest.approx(47564)


def test_exponents_without_a_dot_are_numbers(rows):
    """YAML 1.2 (and JSON) floats: 1e9, 4.1e6, 1.5e308 were strings to YAML 1.1 and refused."""
    p = _profile("name: t\ncriteria:\n  - {name: c, benchmark: all_reduce, metric: busbw, op: '<=', "
                 "value: 3.1584e5, unit: MB/s}\n  - {name: d, benchmark: all_reduce, metric: busbw, "
                 "op: '>=', baseline: 1.5e308, pct: 95}\n")
    assert p.criteria[0].value == 315840.0
    o = evaluate(p, rows)[1]
    assert o.status == "fail" and math.isfinite(o.margin) and "= inf" not in o.threshold


def test_a_criterion_matching_nothing_is_skipped_saying_why(rows):
    o = _one(rows, benchmark="all_reduce", metric="busbw", params={"bytes": "16G"}, op=">=", value=1)
    assert o.status == "skipped" and "bytes=17179869184" in o.detail


def _slow_gpu_rows() -> list[Row]:
    """Four single-host runs of 8 GPUs; GPU 3 of host c 30% slow."""
    rows = []
    for i, host in enumerate("abcd"):
        run = Run("stream", hosts=[host], tags={"node": host})
        run.id = i + 1
        for d in range(8):
            v = 4000.0 * (1 + 0.001 * d) * (0.7 if (host, d) == ("c", 3) else 1)
            rows.append(Row(run, Measurement("stream", "bandwidth", v, "GB/s", {"kernel": "Triad", "device": str(d)})))
    return rows


def test_outliers_by_device_tell_hosts_apart():
    """GPU 3 of host c was pooled with GPU 3 of hosts a, b, d: never found, and when found
    every host with a GPU 3 was named for draining."""
    o = _one(_slow_gpu_rows(), benchmark="stream", metric="bandwidth", params={"kernel": "Triad"},
             outliers="none", by="device")
    assert o.status == "fail" and list(o.failing) == ["c"]
    assert [f["device"] for f in o.outliers] == ["c:3"] and o.measured == pytest.approx(4012.0 * 0.7)


def test_baseline_round_trip_passes_and_one_percent_stricter_fails(seeded, tmp_path):
    """baseline create, then validate the same runs: every row passes, including a bidirectional
    pair's total (which a subset match made also judge its two legs, at half its bandwidth)."""
    out = tmp_path / "b.yaml"
    code, _, err = run_cli("baseline", "create", "seed=mi300x", "-o", out, "--pct", "100", "--db", seeded)
    assert code == 0, err
    profile = load_profile(str(out))
    assert any(c.absent == ("leg",) for c in profile.criteria)
    # stream rows are per GPU (two tables): at 100% of their median one of two is below it
    stream = [c for c in profile.criteria if c.benchmark == "stream"]
    code, text, _ = run_cli("validate", "seed=mi300x", "--profile", out, "--db", seeded)
    assert f"# {len(profile.criteria) - len(stream)} pass, {len(stream)} fail, 0 skipped, 0 error" in text
    code, text, _ = run_cli("baseline", "create", "seed=mi300x", "-o", out, "--pct", "90", "--db", seeded)
    code, text, _ = run_cli("validate", "seed=mi300x", "--profile", out, "--db", seeded)
    assert code == 0 and f"# {len(profile.criteria)} pass, 0 fail" in text
    # every other criterion 1% above its baseline: exactly those fail
    crits = [c for c in load_profile(str(out)).criteria if c.benchmark != "stream"]
    stricter = out.read_text()
    doc = load_yaml(stricter)
    for i, c in enumerate(doc["criteria"]):
        if c["benchmark"] != "stream" and i % 2 == 0:
            c["pct"] = 101.0
    strict = tmp_path / "strict.yaml"
    strict.write_text(json.dumps({"name": "strict", "criteria": [dict(c) for c in doc["criteria"]]}))
    outcomes = {d["criterion"]: d["status"] for d in json_lines(
        run_cli("validate", "seed=mi300x", "--profile", strict, "--db", seeded, "--json")[1]) if d["kind"] == "criterion"}
    want = {c["name"]: "fail" if c.get("pct") == 101.0 else "pass" for c in doc["criteria"]}
    assert outcomes == want and len(crits) > 100


def test_dump_profile_keeps_every_field():
    text = """
name: full
description: d
source: s
notes: why
suite:
  - {name: st, command: [stream, -n, 5]}
criteria:
  - {name: a, source: x, note: y, benchmark: transfer, metric: bandwidth, params: {test: p2p, leg: null},
     op: '>=', baseline: 68.62, pct: 90, unit: MB/s, aggregate: median}
  - {name: b, benchmark: stream, metric: bandwidth, outliers: none, by: device, threshold: 5,
     min_rel_dev: 0.1, higher_is_better: false}
  - {name: c, benchmark: gemm, metric: tflops, op: range, min: 1, max: 2.5e3}
"""
    p = _profile(text)
    back = parse_profile(load_yaml(dump_profile(p)), "p.yaml")
    assert back == p and p.notes == "why" and p.criteria[0].absent == ("leg",)


def _yaml_error(tmp_path, body: str | bytes) -> str:
    path = tmp_path / "p.yaml"
    path.write_bytes(body if isinstance(body, bytes) else body.encode())
    with pytest.raises(UsageError) as e:
        load_profile(str(path))
    msg = str(e.value)
    assert "\n" not in msg
    return msg


C = "  - {name: c, benchmark: all_reduce, metric: busbw, op: '>=', value: 1"


@pytest.mark.parametrize("body, says", [
    ("name: t\ncriteria:\n" + C + ", params: 0}\n", "line 3: params must be a mapping"),
    ("name: t\ncriteria:\n" + C + ", params: []}\n", "line 3: params must be a mapping"),
    ("name: t\ncriteria:\n" + C + ", params: {dtype: []}}\n", "params.dtype is an empty list"),
    ("name: t\ncriteria:\n" + C + ", params: {dtype: {a: 1}}}\n", "params.dtype must be a value or a list"),
    ("name: t\ncriteria:\n" + C + ", params: {bytes: -8}}\n", "params.bytes must not be negative"),
    ("name: t\ncriteria:\n" + C + ", params: {~: 1}}\n", "a param name must be a non-empty string"),
    ("name: t\ncriteria:\n" + C + ", by: host}\n", "line 3: key(s) by apply only to an outliers criterion"),
    ("name: t\ncriteria:\n" + C + ", higher_is_better: false}\n", "apply only to an outliers criterion"),
    ("name: t\ncriteria:\n  - {name: o, benchmark: stream, metric: bandwidth, outliers: none, threshold: -1}\n",
     "line 3: threshold must be positive"),
    ("name: t\ncriteria:\n  - {name: o, benchmark: stream, metric: bandwidth, outliers: none, min_rel_dev: -0.1}\n",
     "min_rel_dev must not be negative"),
    ("name: [1, 2]\ncriteria:\n" + C + "}\n", "line 1: name must be a non-empty string"),
    ("name: t\ndescription: {a: 1}\ncriteria:\n" + C + "}\n", "line 2: description must be"),
    ("name: t\ncriteria:\n" + C + "}\n" + C + "}\n", "duplicate criterion name 'c': criterion 2, line 4"),
    ("name: t\ncriteria:\n" + C + "}\n\x00\n", "invalid YAML at line 4"),
    (b"name: t\ncriteria:\n  - {name: \xe9}\n", "not UTF-8 text"),
])
def test_bad_profiles_are_one_line_errors(tmp_path, body, says):
    assert says in _yaml_error(tmp_path, body)


def test_bad_profile_on_the_command_line_is_exit_2(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: t\ncriteria:\n" + C + ", params: 0}\n")
    code, out, err = run_cli("validate", "--profile", path, "--db", tmp_path / "cb.db")
    assert code == 2 and out == "" and err.count("\n") == 1 and "line 3" in err


def test_merge_keys_override_instead_of_clashing(tmp_path):
    """Sharing a criterion with <<: *anchor and renaming it is YAML's own way, not a key twice."""
    path = tmp_path / "p.yaml"
    path.write_text("name: t\ncriteria:\n  - &base\n    name: a\n    benchmark: all_reduce\n    metric: busbw\n"
                    "    op: '>='\n    value: 1\n  - <<: *base\n    name: b\n    value: 2\n")
    p = load_profile(str(path))
    assert [(c.name, c.value) for c in p.criteria] == [("a", 1.0), ("b", 2.0)]
    path.write_text("name: t\ncriteria:\n  - <<: {name: a}\n    name: b\n    name: c\n")
    assert "line 5: key 'name' given twice" in _yaml_error(tmp_path, path.read_bytes())


def test_bom_and_crlf_load(tmp_path):
    text = "name: t\ncriteria:\n" + C + "}\n"
    for body in (b"\xef\xbb\xbf" + text.encode(), text.replace("\n", "\r\n").encode()):
        path = tmp_path / "p.yaml"
        path.write_bytes(body)
        assert load_profile(str(path)).criteria[0].value == 1


def test_degraded_devices_tell_hosts_apart():
    """The report's degraded section pooled GPU n of every host the same way."""
    from clusterbench.judge.degraded import find_degraded

    found = [d for d in find_degraded(_slow_gpu_rows()) if d.by == "device"]
    assert [d.outlier.key for d in found] == ["c:3"]
