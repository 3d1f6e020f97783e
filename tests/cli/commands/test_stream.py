"""Tests of clusterbench.cli.commands.stream: ``clusterbench stream``."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from bench_cli import cli
from cli_errors import _one_line_error
from json_schema import check_lines
from judge_helpers import _one, save
from judge_helpers import cli as cli_argv_check
from judge_helpers import cli as cli_qualify_preflight
from judge_helpers import cli as cli_theory
from junit_xml import xmlschema
from paths import DATA, TESTS
from probe_profiles import (
    SMALL_STREAM,
    STREAM_FLOOR,
    _profile,
    _replace_callback,
)
from qualify_profiles import IDS, REFUSED
from stored_runs import _run_cli, _slow_gpu_rows, cli_results_cmds
from synthetic_runs import _fill

from clusterbench.cli.argv_check import check_argv
from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.records import Measurement
from clusterbench.store import Store

SCHEMA = xmlschema.XMLSchema(str(DATA / "schemas" / "junit-10.xsd"))


GEMM_FLOOR = {"name": "gemm floor", "benchmark": "gemm", "metric": "tflops", "op": ">=", "value": 1e-9}


PROFILE = """\
name: probe-scale
description: floors far below the stored values
source: test
criteria:
  - name: all_reduce 1 MiB busbw
    source: test
    benchmark: all_reduce
    metric: busbw
    params: {bytes: 1048576}
    op: ">="
    value: 1
  - name: stream triad
    source: test
    benchmark: stream
    metric: bandwidth
    params: {kernel: Triad}
    op: ">="
    value: 1
"""


def _commands(n: int, tmp: Path) -> dict[str, list[str]]:
    coll = f"1-{3 * n}"   # every run: the commands skip what they cannot judge
    profile = tmp / "probe.yaml"
    profile.write_text(PROFILE)
    return {
        "results list": ["results", "list", "--limit", "10000"],
        "results list --json": ["results", "list", "--json", "--limit", "10000"],
        "results show": ["results", "show", coll],
        "results show --json": ["results", "show", "--json", coll],
        "results export --csv": ["results", "export", "--csv", coll],
        "results export": ["results", "export", coll],
        "compare": ["compare", "grp=a", "grp=b"],
        "trend": ["trend", "--benchmark", "stream"],
        "trend selectors": ["trend", "kind=stream", "grp=a"],
        "baseline create": ["baseline", "create", "grp=a", "-o", str(tmp / "base.yaml")],
        "validate": ["validate", "--profile", str(profile), coll],
        "theory": ["theory", "--run", "grp=a"],
        "scaling": ["scaling", "kind=train"],
        "env diff": ["env", "diff", "1", "2"],
        "export openmetrics": ["export", "openmetrics"],
    }


def _counts(tmp_path: Path, capsys, statements: list[str], n: int) -> dict[str, int]:
    db = str(tmp_path / f"runs{n}.db")
    _fill(db, n)
    counts = {}
    for name, argv in _commands(n, tmp_path).items():
        statements.clear()
        _run_cli(capsys, [*argv, "--db", db])
        counts[name] = len(statements)
    return counts


@pytest.mark.parametrize("args,words", [
    (["-s", "0"], "must be positive"),
    (["-s", "-4"], "must be positive"),
    (["-s", "1T"], "more than the"),
    (["--dtype", "half"], "unknown dtype 'half'"),
    (["--devices", "1"], "out of range"),
    (["--kernels", "Scale"], "unknown kernel 'Scale'"),
    (["-n", "1"], "at least 2"),
    (["--sizes", "4M:1M"], "invalid --sizes"),
])
def test_bad_input(capsys, db, args, words):
    code, out, err = cli(capsys, "stream", *args, "--db", db)
    assert code == 2 and err.count("\n") == 1 and err.startswith("clusterbench: error: "), err
    assert words in err and "Traceback" not in out + err


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a GPU")
def test_every_gpu_at_once(capsys, db):
    import torch

    code, out, err = cli(capsys, "stream", "-s", "1M", "-n", "5", "--devices", "all", "--json", "--db", db)
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    devices = {r["params"]["device"] for r in rows if r["metric"] == "bandwidth"}
    expected = {f"cuda:{i}" for i in range(torch.cuda.device_count())}
    assert expected <= devices and (len(expected) == 1 or "all" in devices)


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a GPU")
def test_arrays_beyond_two_to_the_31_elements(capsys, db):
    """8 GiB float arrays (2^31 elements): Dot and the check must not fail; 3 arrays of 8 GiB."""
    import torch

    free = torch.cuda.mem_get_info(0)[0]
    if free < 28 << 30:
        pytest.skip("needs 28 GiB of free GPU memory")
    code, out, err = cli(capsys, "stream", "-s", str(2**31 + 1024), "--dtype", "float", "-n", "2",
                         "--kernels", "Copy,Triad,Dot", "--devices", "0", "--json", "--db", db)
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    assert {r["params"]["kernel"] for r in rows if r["metric"] == "bandwidth"} == {"Copy", "Triad", "Dot"}


@pytest.mark.parametrize("argv, words", REFUSED, ids=IDS)
def test_check_argv_refuses_what_every_node_would(capsys, db, argv, words):
    with pytest.raises(UsageError, match="^step: ") as e:
        check_argv(argv, "step", values=True)
    assert words in str(e.value) and "\n" not in str(e.value)
    rc, _, own = cli_argv_check(capsys, *argv, "--db", db)
    assert rc == 2 and own.endswith(f"error: {str(e.value).removeprefix('step: ')}\n"), own
    assert not Path(db).exists()


def test_criteria_of_a_suite_whose_every_step_failed_are_reported_skipped(capsys, db, tmp_path, monkeypatch):
    """Every step failed, nothing was measured: the criteria vanished from the JSON lines and the
    JUnit (an empty `validate` suite), where a CI page must show each one as not judged."""
    def broken(**_kwargs):
        raise ClusterbenchError("the benchmark broke")

    _replace_callback(monkeypatch, "stream", broken)
    xml = tmp_path / "q.xml"
    profile = _profile(tmp_path, [{"name": "s", "command": SMALL_STREAM}], [STREAM_FLOOR, GEMM_FLOOR])
    rc, out, err = cli_qualify_preflight(capsys, "qualify", "--profile", profile, "--db", db, "--no-preflight", "--json",
                       "--junit", xml, "-o", tmp_path / "q.html")
    assert rc == 1, err
    lines = check_lines(out)
    crit = [d for d in lines if d["kind"] == "criterion"]
    assert [(d["criterion"], d["status"]) for d in crit] == [("stream floor", "skipped"), ("gemm floor", "skipped")]
    assert lines[-1]["counts"]["skipped"] == 2 and lines[-1]["failed_steps"] == 1
    SCHEMA.validate(str(xml))
    suites = {s.get("name"): s for s in ET.parse(xml).getroot().findall("testsuite")}
    validate = suites["validate probe"]
    assert validate.get("tests") == "2" and validate.get("skipped") == "2"
    assert suites["qualify probe steps"].get("errors") == "1"


@pytest.mark.parametrize("argv", [["stream", "-s", "1K", "-n", "2", "--device", "cpu"],
                                  ["import", str(TESTS / "data" / "osu" / "hpcbench-osu_bw-v5.3.2-host.txt")]])
def test_a_link_speed_tag_no_judge_can_read_is_refused_before_anything_runs(capsys, db, argv):
    """`--tag link_speed=garbage` stored the run, then its own table failed ("internal error while
    printing", exit 1) and so did every later read of it."""
    rc, out, err = cli_results_cmds(capsys, *argv, "--tag", "link_speed=garbage", "--db", db)
    assert rc == 2 and len(err.splitlines()) == 1 and "link_speed" in err, err
    with Store.open(db) as s:
        assert s.list_runs() == []


def test_read_commands_run_as_many_statements_for_many_runs_as_for_few(tmp_path, capsys, statements):
    few, many = _counts(tmp_path, capsys, statements, 4), _counts(tmp_path, capsys, statements, 40)
    assert many == few


def test_runs_without_collective_rows(db, capsys):
    rid = save(db, [Measurement("stream", "bandwidth", 900.0, "GB/s", {"kernel": "Triad"})],
               benchmark="stream", hosts=["a", "b"])
    for extra in ([], ["--json"]):
        rc, out, err = cli_theory(capsys, "theory", "--nodes", "2", "--run", str(rid), "--db", db, *extra)
        _one_line_error(rc, out, err)


def test_stream_dtype_and_size(rows_validate_probe):
    o = _one(rows_validate_probe, benchmark="stream", metric="bandwidth", params={"kernel": "Copy", "dtype": "fp64",
                                                                   "array_size": "256M"}, op=">=", value=1)
    assert (o.status, o.matched) == ("pass", 2)


@pytest.mark.parametrize("aggregate, measured, status", [
    ("all", 3878.410495, "fail"), ("min", 3878.410495, "fail"), ("max", 3927.179117, "pass"),
    ("mean", (3878.410495 + 3927.179117) / 2, "pass"), ("median", (3878.410495 + 3927.179117) / 2, "pass"),
])
def test_aggregates_over_the_two_tables(rows_validate_probe, aggregate, measured, status):
    o = _one(rows_validate_probe, benchmark="stream", metric="bandwidth", params={"kernel": "Dot"}, op=">=", value=3900,
             unit="GB/s", aggregate=aggregate)
    assert (o.status, o.measured, o.matched) == (status, pytest.approx(measured), 2)


def test_outliers_by_device_tell_hosts_apart():
    """GPU 3 of host c was pooled with GPU 3 of hosts a, b, d: never found, and when found
    every host with a GPU 3 was named for draining."""
    o = _one(_slow_gpu_rows(), benchmark="stream", metric="bandwidth", params={"kernel": "Triad"},
             outliers="none", by="device")
    assert o.status == "fail" and list(o.failing) == ["c"]
    assert [f["device"] for f in o.outliers] == ["c:3"] and o.measured == pytest.approx(4012.0 * 0.7)
