"""Tests of clusterbench.cli.commands.stream: ``clusterbench stream``."""

from __future__ import annotations

import json
import random
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from json_schema import check_lines
from judge_helpers import cli as cli_argv_check
from judge_helpers import cli as cli_qualify_preflight
from judge_helpers import cli as cli_theory
from judge_helpers import run_cli, save
from paths import TESTS

import clusterbench.store.store as store_module
from clusterbench.cli import all_commands, main
from clusterbench.cli.argv_check import check_argv
from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.judge.profile_yaml import load_yaml
from clusterbench.judge.profiles import parse_profile
from clusterbench.judge.select import Row, load_runs, rows_of
from clusterbench.judge.validate import evaluate
from clusterbench.records import Measurement, Run, TelemetrySample
from clusterbench.store import Store


def cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


# (a command line every node refuses, the words of its error)
REFUSED = [
    (["stream", "--float", "--dtype", "float"], "--float and --dtype cannot be used together: give one"),
    (["stream", "-s", "1K", "--sizes", "1K:4K"], "--arraysize and --sizes cannot be used together: give one"),
    (["stream", "--devices", "0,,1"], "invalid --devices '0,,1'"),
    (["stream", "--devices", "-1"], "invalid --devices '-1'"),
    (["stream", "--devices", "0-"], "invalid --devices '0-'"),
    (["stream", "--devices", "0,0"], "device 0 is listed twice"),
    (["stream", "--devices", "²"], "invalid --devices '²'"),
    (["stream", "--device", "cpu", "--devices", "1"], "--devices 1: out of range, this host has 1 CPU device"),
    (["gemm", "--devices", "a"], "invalid --devices 'a'"),
    (["gemm", "--devices", "1,1"], "device 1 is listed twice"),
    (["gemm", "--devices", "9" * 5000], "is larger than any host's device count"),
    (["transfer", "--devices", "0;1"], "invalid --devices '0;1'"),
    (["transfer", "--device", "cpu", "--devices", "0,1"], "--devices 1: out of range"),
]


IDS = [" ".join(a)[:40] for a, _ in REFUSED]


xmlschema = pytest.importorskip("xmlschema", reason="xmlschema (test extra) validates against the JUnit XSD")


DATA = TESTS / "data"


SCHEMA = xmlschema.XMLSchema(str(DATA / "schemas" / "junit-10.xsd"))


STREAM_FLOOR = {"name": "stream floor", "benchmark": "stream", "metric": "bandwidth",
                "params": {"kernel": "Triad"}, "op": ">=", "value": 0.001, "unit": "GB/s"}


GEMM_FLOOR = {"name": "gemm floor", "benchmark": "gemm", "metric": "tflops", "op": ">=", "value": 1e-9}


SMALL_STREAM = ["stream", "--device", "cpu", "-s", "1K", "-n", "2"]


def _profile(tmp_path: Path, suite: list[dict], criteria: list[dict]) -> Path:
    p = tmp_path / "probe.yaml"
    p.write_text(json.dumps({"name": "probe", "suite": suite, "criteria": criteria}))
    return p


def _replace_callback(monkeypatch, command: str, fn) -> None:
    monkeypatch.setattr(all_commands()[command], "callback", fn)


def cli_results_cmds(capsys, *argv: object) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


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


def _coll(rng: random.Random) -> list[Measurement]:
    ms = []
    for p in (10, 20, 24):
        for pl in ("out", "in"):
            v = 100 * (1 + rng.gauss(0, 0.02))
            params = {"bytes": 1 << p, "count": (1 << p) // 4, "dtype": "float", "redop": "sum", "root": -1,
                      "placement": pl, "ranks": 16}
            ms += [Measurement("all_reduce", "busbw", v, "GB/s", params),
                   Measurement("all_reduce", "algbw", v * 16 / 30, "GB/s", dict(params))]
    return ms


def _stream(rng: random.Random, hosts: list[str]) -> list[Measurement]:
    return [Measurement("stream", "bandwidth", 3000 * (1 + rng.gauss(0, 0.01)), "GB/s",
                        {"kernel": k, "array_size": 1 << 25, "dtype": "double", "device": d, "host": h})
            for h in hosts for d in range(2) for k in ("Copy", "Triad")]


def _train(rng: random.Random) -> list[Measurement]:
    return [Measurement("train", "samples_per_s", 1000 * (1 + rng.gauss(0, 0.01)), "samples/s", {"stat": "avg"})]


def _fill(db: str, n: int) -> None:
    """``n`` collective runs on two hosts (half tagged grp=a, half grp=b), ``n`` stream runs with
    telemetry and ``n`` train runs: what compare, trend, report, theory and scaling read."""
    rng = random.Random(7)
    with Store.open(db) as s, s.transaction():
        for i in range(n):
            day = f"2026-01-{1 + i % 28:02d}T{i // 28:02d}:00:00Z"
            s.save_run(Run("coll", hosts=["node1", "node2"], ranks=16, started_at=day,
                           tags={"grp": "a" if i < n // 2 else "b", "link_speed": "100Gbps"}), _coll(rng))
            s.save_run(Run("stream", hosts=["node1"], ranks=2, started_at=day, tags={"kind": "stream"}),
                       _stream(rng, ["node1"]),
                       [TelemetrySample(0.5 * t, "power", 300.0 + t, "W", "node1", "0") for t in range(3)])
            s.save_run(Run("train", hosts=["node1", "node2"][: 1 + i % 2], ranks=8, started_at=day,
                           tags={"kind": "train"}), _train(rng))


@pytest.fixture
def statements(monkeypatch):
    """Every SQL statement the stores opened from now on run (SQLite's trace callback)."""
    seen: list[str] = []
    real = store_module.connect

    def traced(where, readonly=False):
        backend = real(where, readonly)
        backend.conn.set_trace_callback(seen.append)
        return backend

    monkeypatch.setattr(store_module, "connect", traced)
    return seen


def _run_cli(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as e:
        main(argv)
    out, err = capsys.readouterr()
    assert not e.value.code, err
    return out


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


def _one_line_error(rc: int, out: str, err: str) -> None:
    assert rc == 2, (rc, out, err)
    assert err.startswith("clusterbench: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err


SEEDS = ["transferbench/seed-mi300x-a2a.txt", "transferbench/seed-mi300x-example-cfg.txt",
         "transferbench/seed-mi300x-p2p.txt", "nccl-tests/seed-mi300x-rccl-all_reduce-8gpu.txt",
         "babelstream/seed-mi300x-hip-8gpu-mpi.txt", "rocblas-bench/seed-mi300x-gemm_strided_batched_ex-bf16.txt",
         "rocblas-bench/seed-mi300x-gemm_strided_batched_ex-int8.txt", "rocblas-bench/seed-mi300x-sgemm-4000.txt"]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> str:
    db = str(tmp_path_factory.mktemp("probe") / "cb.db")
    for f in SEEDS:
        code, _, err = run_cli("import", DATA / f, "--tag", "seed=mi300x", "--db", db)
        assert code == 0, err
    return db


@pytest.fixture(scope="module")
def rows_validate_probe(seeded) -> list[Row]:
    with Store.open(seeded) as s:
        return rows_of(load_runs(s, ["seed=mi300x"]))


def _validate_probe_profile(text: str):
    return parse_profile(load_yaml(text), "p.yaml")


def _one(rows_validate_probe, **crit):
    """The outcome of one criterion written as a flow mapping."""
    crit.setdefault("name", "c")
    return evaluate(_validate_probe_profile("name: t\ncriteria:\n  - " + json.dumps(crit) + "\n"), rows_validate_probe)[0]


def _slow_gpu_rows() -> list[Row]:
    """Four single-host runs of 8 GPUs; GPU 3 of host c 30% slow."""
    rows_validate_probe = []
    for i, host in enumerate("abcd"):
        run = Run("stream", hosts=[host], tags={"node": host})
        run.id = i + 1
        for d in range(8):
            v = 4000.0 * (1 + 0.001 * d) * (0.7 if (host, d) == ("c", 3) else 1)
            rows_validate_probe.append(Row(run, Measurement("stream", "bandwidth", v, "GB/s", {"kernel": "Triad", "device": str(d)})))
    return rows_validate_probe


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
