"""Profiles and ``clusterbench validate`` probed with hostile and mistaken input: YAML that does not
parse or is too big, numbers PyYAML cannot build, thresholds that cannot mean anything, units the
metric cannot be converted to, typos that would match nothing, built-in names that are paths, odd
params in the tools' own checks; and the shipped MI300X profile against the guide's tables."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from judge_helpers import json_lines, run_cli

from clusterbench.errors import UsageError
from clusterbench.judge import profiles as profiles_mod
from clusterbench.judge.profile_yaml import load_yaml
from clusterbench.judge.profiles import BUILTIN_DIR, load_profile, parse_profile
from clusterbench.judge.select import Row
from clusterbench.judge.tool_checks import tool_outcomes
from clusterbench.judge.validate import ERROR, SKIPPED, evaluate
from clusterbench.records import Measurement, Run

OK = "  - {name: ok, benchmark: all_reduce, metric: busbw, op: '>=', value: 1}\n"


def _error(tmp_path: Path, body: str | bytes) -> str:
    """The one-line message loading ``body`` as a profile file gives."""
    path = tmp_path / "p.yaml"
    path.write_bytes(body if isinstance(body, bytes) else body.encode())
    with pytest.raises(UsageError) as e:
        load_profile(str(path))
    msg = str(e.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


def _crit(**kw: object) -> str:
    return "name: t\ncriteria:\n  - " + json.dumps({"name": "c", **kw}) + "\n"


# --- YAML itself -------------------------------------------------------------------------------

@pytest.mark.parametrize("body, says", [
    # where and what: line and column as an editor shows them, and PyYAML's own words
    ("name: t\ncriteria: [\n  - {a: 1\n", "invalid YAML at line 3, column 3: "),
    ("name: t\ncriteria:\n\t- {name: c}\n", "line 3, column 1: found character '\\t' that cannot start any token"),
    ("name: t\ncriteria:\n  - {name: c\n", "line 4, column 1: expected ',' or '}'"),
    ("a: &a [*a]\n", "line 1, column 4: found unconstructable recursive node"),
    ("name: t\ncriteria:\n  - *nope\n", "found undefined alias 'nope'"),
    ("name: !!python/object:os.system t\ncriteria:\n" + OK, "line 1, column 7: could not determine a constructor"),
])
def test_yaml_errors_say_line_column_and_problem(tmp_path, body, says):
    assert says in _error(tmp_path, body)


def test_an_integer_too_long_to_build_is_one_line(tmp_path):
    """PyYAML's int() of 5,000 digits raised ValueError: an internal error instead of a usage one."""
    msg = _error(tmp_path, "name: t\ncriteria:\n" + OK.rstrip("}\n") + ", params: {bytes: " + "9" * 5000 + "}}\n")
    assert "line 3" in msg and "too long" in msg


def test_a_big_document_without_aliases_is_not_blamed_on_aliases(monkeypatch):
    """A document of many plain values said "its aliases expand it", though it had none."""
    from clusterbench.judge import profile_yaml

    monkeypatch.setattr(profile_yaml, "MAX_NODES", 50)
    text = "name: t\ncriteria:\n" + "".join(
        f"  - {{name: c{i}, benchmark: all_reduce, metric: busbw, op: '>=', value: 1}}\n" for i in range(20))
    with pytest.raises(UsageError) as e:
        load_yaml(text)
    assert "aliases" not in str(e.value) and "more than 50 values" in str(e.value)
    bomb = "a: &a [1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    with pytest.raises(UsageError, match="aliases expand it past 50 values"):
        load_yaml(bomb)


def test_a_file_over_the_size_limit_is_refused_before_parsing(tmp_path, monkeypatch):
    """100 MB of comment took a minute of parsing to end in "no criteria"."""
    monkeypatch.setattr(profiles_mod, "MAX_PROFILE_BYTES", 1000)
    msg = _error(tmp_path, "name: t\ncriteria:\n" + OK + "#" + "x" * 2000 + "\n")
    assert "larger than" in msg and "1000 bytes" in msg


@pytest.mark.parametrize("body, says", [
    (b"", "is empty"),
    (b"# only a comment\n", "is empty"),
    (b"- a\n- b\n", "expected a mapping with name and criteria, got a list"),
    (b"just text\n", "expected a mapping with name and criteria, got a str"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8 text"),
    (b"name: t\ncriteria:\n" + OK.encode() + b"\x00\n", "invalid YAML at line 4"),
])
def test_files_that_are_no_profile(tmp_path, body, says):
    assert says in _error(tmp_path, body)


# --- built-in names ----------------------------------------------------------------------------

def test_a_builtin_name_is_a_name_never_a_path(tmp_path):
    """A name with '..' that was no file where it was typed was looked up under the built-in
    folder: ``../../../../tmp/x`` loaded /tmp/x.yaml as if it shipped with clusterbench."""
    (tmp_path / "outside.yaml").write_text("name: outside\ncriteria:\n" + OK)
    escape = os.path.relpath(tmp_path / "outside", BUILTIN_DIR)
    assert escape.startswith("..") and not Path(escape).exists()
    for name in (escape, "amd-mi300x-oem/../cpu-smoke", "./cpu-smoke", "-x", ".hidden", "cpu-smoke\n"):
        with pytest.raises(UsageError, match="unknown profile"):
            load_profile(name)


def test_an_empty_profile_name_is_not_a_directory():
    with pytest.raises(UsageError, match="empty"):
        load_profile("")


# --- thresholds and units ----------------------------------------------------------------------

@pytest.mark.parametrize("kw, says", [
    # a bandwidth, a time or a FLOP rate is never negative: ">= -5 GB/s" passes everything
    (dict(benchmark="all_reduce", metric="busbw", op=">=", value=-5), "value must not be negative"),
    (dict(benchmark="all_reduce", metric="time_us", op="range", min=-1, max=3, unit="ms"), "min must not be negative"),
    (dict(benchmark="gemm", metric="tflops", op=">=", baseline=-3, pct=90), "baseline must not be negative"),
    # baseline x pct past a float: an OverflowError out of the judge, exit 1 "internal error"
    (dict(benchmark="all_reduce", metric="busbw", op=">=", baseline=1e308, pct=1e308), "is no finite number"),
    # a unit on a count: never convertible, judged "error" on every run
    (dict(benchmark="all_reduce", metric="wrong", op="<=", value=0, unit="GB/s"), "all_reduce wrong has no unit"),
    (dict(benchmark="serving", metric="output_token_throughput", op=">=", value=1, unit="GB/s"),
     "serving output_token_throughput is in tok/s"),
    (dict(benchmark="net", metric="lost_percent", op="<=", value=1, unit="ms"), "net lost_percent is in %"),
])
def test_thresholds_that_cannot_mean_anything_are_refused(kw, says):
    with pytest.raises(UsageError, match=re.escape(says)):
        parse_profile(load_yaml(_crit(**kw)), "p.yaml")


def test_the_metrics_own_unit_is_accepted_where_the_unit_table_lacks_it():
    """``unit: tok/s`` on a tok/s metric was refused as an unknown unit."""
    p = parse_profile(load_yaml(_crit(benchmark="serving", metric="output_token_throughput", op=">=",
                                      value=100, unit="tok/s")), "p.yaml")
    rows = [Row(Run(benchmark="serving", id=1), Measurement("serving", "output_token_throughput", 150.0, "tok/s", {}))]
    o = evaluate(p, rows)[0]
    assert (o.status, o.threshold) == ("pass", ">= 100 tok/s")


def test_zero_and_signed_metrics_stay_allowed():
    """A count bound of 0 and a negative bound on a metric without a physical unit still load."""
    parse_profile(load_yaml(_crit(benchmark="all_reduce", metric="wrong", op="<=", value=0)), "p.yaml")
    parse_profile(load_yaml(_crit(benchmark="train", metric="loss", op="range", min=-1, max=3)), "p.yaml")


def _rows(*values_units: tuple[float, str]) -> list[Row]:
    return [Row(Run(benchmark="stream", id=i + 1), Measurement("stream", "bandwidth", v, u, {"kernel": "Triad"}))
            for i, (v, u) in enumerate(values_units)]


def test_measurements_in_two_units_are_converted_not_refused():
    """Runs of one metric stored in MB/s and GB/s were an "error"; they convert exactly."""
    p = parse_profile(load_yaml(_crit(benchmark="stream", metric="bandwidth", op=">=", value=3000)), "p.yaml")
    o = evaluate(p, _rows((3100.0, "GB/s"), (2900000.0, "MB/s")))[0]
    assert o.status == "fail" and o.unit == "GB/s" and o.measured == pytest.approx(2900.0)
    assert "1 of 2 below" in o.detail


def test_measurements_in_units_that_do_not_convert_are_an_error_with_the_threshold():
    p = parse_profile(load_yaml(_crit(benchmark="stream", metric="bandwidth", op=">=", value=3000)), "p.yaml")
    o = evaluate(p, _rows((3100.0, "GB/s"), (2.0, "us")))[0]
    assert o.status == ERROR and "mix units" in o.detail and o.threshold == ">= 3,000 GB/s"


# --- typos -------------------------------------------------------------------------------------

@pytest.mark.parametrize("bench, means", [("all_reduse", "all_reduce"), ("alreduce", "allreduce"),
                                          ("straem", "stream"), ("ib_write_bwx", "ib_write_bw")])
def test_a_misspelt_benchmark_is_refused_naming_the_known_one(bench, means):
    with pytest.raises(UsageError, match=f"unknown benchmark '{bench}' \\(did you mean {means}\\?\\)"):
        parse_profile(load_yaml(_crit(benchmark=bench, metric="busbw", op=">=", value=1)), "p.yaml")


def test_a_benchmark_no_family_knows_is_skipped_saying_so():
    """Measurements imported from JSON lines may carry any benchmark: far from every known name
    it loads, and matching nothing it says why."""
    p = parse_profile(load_yaml(_crit(benchmark="my_probe", metric="score", op=">=", value=1)), "p.yaml")
    o = evaluate(p, _rows((1.0, "GB/s")))[0]
    assert o.status == SKIPPED and "no my_probe/score measurement" in o.detail


def test_a_misspelt_param_is_an_error_not_a_silent_skip():
    """``placment: in`` matched no row and was "skipped": with every other criterion passing,
    exit 0, though the check never ran."""
    p = parse_profile(load_yaml(_crit(benchmark="stream", metric="bandwidth", params={"kernal": "Triad"},
                                      op=">=", value=1)), "p.yaml")
    o = evaluate(p, _rows((3100.0, "GB/s")))[0]
    assert o.status == ERROR and o.detail == ("no stream/bandwidth measurement with kernal=Triad: "
                                          "none has a param 'kernal' (did you mean kernel?)")


def test_a_param_only_other_runs_have_is_still_skipped():
    """Validating a run that lacks a param (a native a2a run against the config tests) is no typo."""
    p = parse_profile(load_yaml(_crit(benchmark="stream", metric="bandwidth", params={"test_index": 3},
                                      op=">=", value=1)), "p.yaml")
    o = evaluate(p, _rows((3100.0, "GB/s")))[0]
    assert o.status == SKIPPED and o.detail.endswith("none has a param 'test_index'")


# --- the tools' own checks ---------------------------------------------------------------------

@pytest.mark.parametrize("ranks", ["x", float("nan"), 8.5, True, -3, [8]])
def test_tool_check_with_a_rank_count_that_is_no_count_is_skipped(ranks):
    """Params come from JSON lines as written: ``"ranks": "x"`` was a ValueError out of validate,
    and ``true`` was one rank, a tolerance of 0 and a failure."""
    run = Run(benchmark="import", id=1)
    ms = [Measurement("all_reduce", "max_error", 1e-6, "", {"dtype": "float", "ranks": ranks, "bytes": 8})]
    (o,) = tool_outcomes([(run, ms)])
    assert o.status == SKIPPED and "rank count" in o.detail


def test_tool_check_falls_back_to_the_runs_rank_count():
    run = Run(benchmark="import", id=1, ranks=8)
    ms = [Measurement("all_reduce", "max_error", 1e-6, "", {"dtype": "float", "ranks": "x", "bytes": 8})]
    (o,) = tool_outcomes([(run, ms)])
    assert o.status == "pass" and o.threshold == "<= 7e-05"


# --- the command line: one line per outcome with --json -----------------------------------------

def test_every_outcome_has_its_json_line(tmp_path):
    db = tmp_path / "cb.db"
    log = Path(__file__).parent / "data" / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"
    code, _, err = run_cli("import", log, "--db", db)
    assert code == 0, err
    prof = tmp_path / "p.yaml"
    prof.write_text("name: t\ncriteria:\n"
                    "  - {name: p, benchmark: all_reduce, metric: busbw, params: {placement: in, bytes: 8G}, op: '>=', value: 304}\n"
                    "  - {name: f, benchmark: all_reduce, metric: busbw, params: {placement: in, bytes: 8G}, op: '>=', value: 320}\n"
                    "  - {name: s, benchmark: stream, metric: bandwidth, op: '>=', value: 1}\n"
                    "  - {name: e, benchmark: all_reduce, metric: busbw, params: {placment: in}, op: '>=', value: 1}\n")
    code, out, _ = run_cli("validate", "--profile", prof, "--db", db, "--json")
    lines = json_lines(out)
    got = {x["criterion"]: x["status"] for x in lines if x["kind"] == "criterion"}
    assert {k: got[k] for k in "pfse"} == {"p": "pass", "f": "fail", "s": "skipped", "e": "error"}
    assert lines[-1]["kind"] == "summary" and lines[-1]["exit_code"] == code == 1


# --- the shipped MI300X profile against the guide's tables --------------------------------------

# AMD Instinct MI300X system validation guide, chapter 5, Tables 1-6: (benchmark, params that tell
# the row apart, minimum passing score as printed, unit as its numbers are). Table 5's header says
# TFLOPS over numbers that are rocblas-bench GFLOPS (the guide's example lines print 97190.6 for
# the FP32 test), so its unit here is GFLOP/s.
GUIDE = [
    ("transfer", {"test": "a2a"}, 32.9, "GB/s"),
    ("transfer", {"test": "p2p", "direction": "uni"}, 33.9, "GB/s"),
    ("transfer", {"test": "p2p", "direction": "bi"}, 43.9, "GB/s"),
    ("transfer", {"test_index": 1}, 47.1, "GB/s"),
    ("transfer", {"test_index": 2}, 48.4, "GB/s"),
    ("transfer", {"test_index": 3, "src": "G0"}, 31.9, "GB/s"),
    ("transfer", {"test_index": 3, "src": "G1"}, 38.9, "GB/s"),
    ("transfer", {"test_index": 4}, 1264, "GB/s"),
    ("transfer", {"test_index": 6}, 48.6, "GB/s"),
    ("all_reduce", {"bytes": 8589934592}, 304, "GB/s"),
    ("gemm", {"dtype": "fp32"}, 94100, "GFLOP/s"),
    ("gemm", {"dtype": ["bf16", "fp16"]}, 130600, "GFLOP/s"),
    ("gemm", {"dtype": "int8"}, 162700, "GFLOP/s"),
    ("stream", {"kernel": "Copy"}, 4177285, "MB/s"),
    ("stream", {"kernel": "Mul"}, 4067069, "MB/s"),
    ("stream", {"kernel": "Add"}, 3920853, "MB/s"),
    ("stream", {"kernel": "Triad"}, 3885301, "MB/s"),
    ("stream", {"kernel": "Dot"}, 3660781, "MB/s"),
]


def test_every_shipped_mi300x_threshold_is_the_guides_number_and_unit():
    bounds = [c for c in load_profile("amd-mi300x-oem").criteria if not c.outliers]
    assert len(bounds) == len(GUIDE)
    for bench, params, value, unit in GUIDE:
        (c,) = [c for c in bounds if c.benchmark == bench and all(c.params.get(k) == v for k, v in params.items())]
        assert (c.op, c.value, c.unit, c.aggregate in ("all", "max")) == (">=", value, unit, True), c.name
        assert f"{value:,}".rstrip("0").rstrip(".") in c.source.replace(" ", "") or str(value) in c.source, c.name


def test_every_shipped_profile_loads_and_is_a_plain_name():
    names = sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml"))
    assert names and all(re.fullmatch(r"[a-z0-9][a-z0-9-]*", n) for n in names)
    for n in names:
        assert load_profile(n).name == n


def test_a_misspelt_outliers_by_is_an_error_not_a_silent_skip():
    """``by: devcie`` found 0 values to compare and was "skipped", like a run of too few GPUs."""
    p = parse_profile(load_yaml(_crit(benchmark="stream", metric="bandwidth", outliers="none", by="devcie")), "p.yaml")
    rows = [Row(Run(benchmark="stream", id=1), Measurement("stream", "bandwidth", 3000.0 + d, "GB/s",
                                                           {"kernel": "Triad", "device": str(d)})) for d in range(8)]
    o = evaluate(p, rows)[0]
    assert o.status == ERROR and "no stream/bandwidth measurement has a param 'devcie' (did you mean device?)" in o.detail
    p = parse_profile(load_yaml(_crit(benchmark="stream", metric="bandwidth", outliers="none", by="tag:node")), "p.yaml")
    assert evaluate(p, rows)[0].status == SKIPPED
