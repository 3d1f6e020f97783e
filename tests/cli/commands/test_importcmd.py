"""Tests of clusterbench.cli.commands.importcmd: ``clusterbench import``."""

import gzip
import io
import json
import math
import os
import re
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
from child_cli import _runs
from cli_errors import _one_line_error, one_error
from hostile_text import DEEP, ESC, _cb, _clean
from import_sources import (
    _import_jsonl_origins_ms,
    _import_jsonl_origins_run,
    _interleave,
    _lines,
    _ms,
    _run,
)
from ingest_helpers import (
    A3MEGA,
    IPERF3,
    MEASUREMENT,
    RUN,
    TITANXP,
    WOHLBIER,
    _a3mega_row,
    _iperf3,
    _jsonl,
    _with,
    damaged,
)
from json_schema import check_lines
from judge_helpers import _one, _profile, cli, json_lines, run_cli
from paths import DATA, TESTS
from stored_runs import (
    ALLTOALL,
    NUL,
    OSU,
    SEED_NCCL,
    SWEEP,
    _ids,
    _m,
    _slow_gpu_rows,
    cli_results_cmds,
    cli_store_cli,
    import_log,
    shown_show_tables_complete,
)

import clusterbench.ingest as ingest
from clusterbench.cli import main
from clusterbench.errors import StoreError
from clusterbench.ingest import LogFormatError, parse_text
from clusterbench.ingest.nccl_files import lenient_json
from clusterbench.ingest.registry import Importer
from clusterbench.judge.profiles import load_profile
from clusterbench.judge.validate import evaluate
from clusterbench.records import Measurement, Run
from clusterbench.report.jsonl import run_lines
from clusterbench.store import Store, TelemetrySample

PKB = DATA / "nccl-tests" / "pkb-2019-v100-2node-old-error-column-nccl-2.4.6.txt"


@pytest.fixture
def db_import_checks_cli(tmp_path):
    return str(tmp_path / "r.db")


def profile(tmp_path, benchmark):
    p = tmp_path / "p.yaml"
    p.write_text(f"name: t\ncriteria:\n  - {{name: busbw, benchmark: {benchmark}, metric: busbw, op: '>=', "
                 "value: 0.001, unit: GB/s, aggregate: max}\n")
    return str(p)


P2P = DATA / "transferbench" / "seed-mi300x-p2p.txt"


@pytest.fixture
def db_import_cli(any_db):
    """Every import test runs against an SQLite file and a real PostgreSQL database."""
    return any_db


def stored(db_import_cli):
    with Store.open(db_import_cli) as s:
        return s.list_runs()


A, B = _lines(_import_jsonl_origins_run("gpu01"), _import_jsonl_origins_ms(3, 10.0)), _lines(_import_jsonl_origins_run("gpu02", "2026-01-02T03:04:06.000Z"), _import_jsonl_origins_ms(3, 20.0))


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


# -- iperf3 -J -------------------------------------------------------------------------------
def _sent(value):
    def change(doc):
        doc["end"]["sum_sent"]["bits_per_second"] = value
    return change


def _at(*keys, value):
    def change(doc):
        d = doc
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
    return change


def _argv_check_run(rid: int) -> str:
    return json.dumps({"kind": "run", "id": rid, "benchmark": "coll", "source": "clusterbench 1",
                       "command": ["x"], "started_at": "2026-01-02T00:00:00.000Z", "ended_at": None,
                       "status": "complete", "hosts": ["h1"], "ranks": 2, "devices": [], "versions": {},
                       "env": {"a": str(rid)}, "tags": {}, "errors": [], "meta": {"n": 1}})


NCCL_LOG = TESTS / "data" / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"


SKIP_DIRS = {"golden", "schemas", "sysfs"}


LOGS = sorted(p for p in DATA.rglob("*") if p.is_file() and p.name != "README.md"
              and p.relative_to(DATA).parts[0] not in SKIP_DIRS)


# A number standing alone in a table: not the digit of a name (G0, cuda:0, x8192) or a version.
_NUMBER = re.compile(r"(?<![A-Za-z_\d.:])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\d.]|[A-Za-z_]\d)")


def cells(text: str) -> list[str]:
    """Every number the table prints, run header lines (ranks, pids, devices) left out."""
    out = []
    for line in text.splitlines():
        if line.startswith(("# run ", "# source:", "# command", "#  Rank ")):
            continue
        out += _NUMBER.findall(line)
    return out


def matches(value: float, cell: str) -> bool:
    """``cell`` is ``value`` as printed at the cell's precision (%f decimals or %g digits)."""
    printed = float(cell)
    if value != 0 and printed == 0:
        return False  # a nonzero value printed as 0 says nothing
    if not math.isfinite(value):
        return False
    mantissa, _, exponent = cell.lower().lstrip("+-").partition("e")
    if exponent:
        digits = len(mantissa.replace(".", "").lstrip("0")) or 1
        step = 10.0 ** (math.floor(math.log10(abs(printed))) - digits + 1) if printed else 10.0 ** int(exponent)
    else:
        decimals = len(mantissa.partition(".")[2])
        step = 10.0 ** -decimals
    return abs(value - printed) <= step / 2 * (1 + 1e-9) + abs(value) * 1e-12


def missing_values(text: str, measurements: list[dict]) -> list[dict]:
    """The measurements with no cell of their own in ``text`` (a cell serves one measurement:
    the ones with the fewest candidate cells choose first)."""
    table = cells(text)
    candidates = [[i for i, c in enumerate(table) if matches(m["value"], c)] for m in measurements]
    used: set[int] = set()
    missing = []
    for k in sorted(range(len(measurements)), key=lambda k: len(candidates[k])):
        free = next((i for i in candidates[k] if i not in used), None)
        if free is None:
            missing.append(measurements[k])
        else:
            used.add(free)
    return missing


def _shown_runs(path: Path, tmp_path: Path) -> list[tuple[str, list[dict]]]:
    tmp_path.mkdir(parents=True, exist_ok=True)   # a writer makes no directory but the default's
    db = str(tmp_path / "x.db")
    return [shown_show_tables_complete(run, db) for run in import_log(path, db)]


def _show(tool_file: str, tmp_path: Path) -> list[tuple[str, list[dict]]]:
    return _shown_runs(DATA / tool_file, tmp_path)


def _laptop(path, runs):
    with Store.open(path) as s:
        for i in range(runs):
            s.save_run(Run(benchmark="coll", hosts=["laptop"], tags={"i": str(i), "env": "home"},
                           meta={"notes": [f"run {i}"]}),
                       [Measurement("all_reduce", "busbw", 1.5 + j, "GB/s", {"bytes": 8 << j}) for j in range(5)],
                       [TelemetrySample(0.5 * j, "power", 100.0 + j, "W", "laptop", "0") for j in range(3)])


def _contents(db):
    """Everything stored, by uid, without the database's own ids."""
    with Store.open(db) as s:
        uids = {rid: uid for uid, rid in s.uids().items()}
        return {uids[r.id]: (r.benchmark, r.tags, r.meta, r.hosts, r.started_at,
                             [m.to_dict() for m in s.measurements(r.id)], s.telemetry(r.id))
                for r in s.list_runs()}


def _store_nul_run(**kw) -> Run:
    return Run(**{"benchmark": "coll", "hosts": ["h1"], "ranks": 1, "tags": {"env": "x"}, **kw})


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


def test_results_show_prints_the_warnings(capsys, db_import_checks_cli):
    cli(capsys, "import", str(DATA / "nccl-tests" / "coreweave-kubectl-logs-minbytes4-rows-elided-start-512M.txt"),
        "--db", db_import_checks_cli)
    rc, out, _ = cli(capsys, "results", "show", "1", "--db", db_import_checks_cli)
    assert rc == 0 and "# run 1: import (incomplete)" in out
    assert ("# warning: the header promises 30 sizes 4..2147483648 per table; the float sum table shows 5 "
            "(536870912..8589934592)") in out.splitlines()


def test_validate_prints_the_warnings(capsys, db_import_checks_cli, tmp_path):
    cli(capsys, "import", str(DATA / "hipblaslt-bench" / "issue251-2023-gfx906-unsupported-warning-bogus-gflops-v1.txt"),
        "--db", db_import_checks_cli)
    p = tmp_path / "gemm.yaml"
    p.write_text("name: g\ncriteria:\n  - {name: tflops, benchmark: gemm, metric: tflops, op: '>=', value: 1,"
                 " unit: TFLOP/s}\n")
    rc, out, _ = cli(capsys, "validate", "1", "--profile", str(p), "--db", db_import_checks_cli)
    assert rc == 0   # the figure passes the profile, but the user is told it is not believable
    assert any(line.startswith("# warning: run 1: implausible GEMM figure: 2048x2048x2048 fp32 at 2728 TFLOP/s")
               for line in out.splitlines())
    rc, out, _ = cli(capsys, "validate", "1", "--profile", str(p), "--db", db_import_checks_cli, "--json")
    warnings = [x for x in check_lines(out) if x["kind"] == "warning"]
    assert [w["run"] for w in warnings] == [1, 1] and warnings[1]["text"].startswith("implausible GEMM")


def test_old_error_column_above_tolerance_fails_show_and_validate(capsys, db_import_checks_cli, tmp_path):
    cli(capsys, "import", str(WOHLBIER), "--db", db_import_checks_cli)   # all_gather is run 1
    rc, out, _ = cli(capsys, "results", "show", "1", "--db", db_import_checks_cli)
    assert "  4294967280      89478485     float    none      -1    53902     N/A   73.04  1e+00" in out
    assert ("# Max error above nccl-tests' tolerance on 4 rows (worst 1 at 4294967280 B, tolerance 0.00011): "
            "FAILED") in out
    rc, out, _ = cli(capsys, "validate", "1", "--profile", profile(tmp_path, "all_gather"), "--db", db_import_checks_cli)
    assert rc == 1
    line = next(x for x in out.splitlines() if "max error within nccl-tests' tolerance" in x)
    assert line.startswith("FAIL") and "<= 0.00011" in line and "4 of 62 rows above it" in line


def test_old_error_column_within_tolerance_passes(capsys, db_import_checks_cli, tmp_path):
    cli(capsys, "import", str(PKB), "--db", db_import_checks_cli)
    rc, out, _ = cli(capsys, "results", "show", "1", "--db", db_import_checks_cli)
    assert "           8             2     float     sum      -1    58.10    0.00    0.00  4e-07" in out
    assert "Max error above" not in out and "# Out of bounds values : 0 OK" in out
    rc, out, _ = cli(capsys, "validate", "1", "--profile", profile(tmp_path, "all_reduce"), "--db", db_import_checks_cli)
    assert rc == 0 and next(x for x in out.splitlines() if "nccl-tests' tolerance" in x).startswith("PASS")


def test_import_stores_one_run_per_file_with_tags(capsys, db_import_cli):
    rc, out, err = cli(capsys, "import", str(SEED_NCCL), str(P2P), "--db", db_import_cli, "--tag", "env=container",
                       "--tag", "node=gpu-07")
    assert rc == 0 and err == ""
    assert "run 1: rccl-tests develop:ae3e635 all_reduce complete, 250 measurements" in out
    runs = stored(db_import_cli)
    assert len(runs) == 2 and all(r.benchmark == "import" for r in runs)
    assert all(r.tags == {"env": "container", "node": "gpu-07"} for r in runs)
    with Store.open(db_import_cli) as s:
        nccl = next(r for r in runs if r.source.startswith("rccl-tests"))
        ms = s.measurements(nccl.id)
        assert len(ms) == 250 and nccl.meta["file"] == str(SEED_NCCL) and nccl.command[0] == "clusterbench"
        last = [m for m in ms if m.metric == "busbw" and m.params["bytes"] == 8589934592 and m.params["placement"] == "in"]
        assert last[0].value == 315.84


def test_reprint_of_imported_run_is_the_nccl_tests_table(capsys, db_import_cli):
    cli(capsys, "import", str(SEED_NCCL), "--db", db_import_cli)
    rc, out, _ = cli(capsys, "results", "show", "1", "--db", db_import_cli)
    assert rc == 0
    assert "8589934592    2147483648     float     sum      -1    47488  180.88  316.55      0    47594  180.48  315.84      0" in out
    assert "# Avg bus bandwidth    : 102.138" in out


def test_json_prints_the_measurement_contract(capsys, db_import_cli):
    rc, out, _ = cli(capsys, "import", str(ALLTOALL), "--db", db_import_cli, "--json")
    lines = [json.loads(x) for x in out.splitlines()]
    assert rc == 0 and len(lines) == 208
    *measurements, run, summary = lines
    assert set(measurements[0]) == {"kind", "run", "benchmark", "metric", "value", "unit", "params"}
    assert {x["kind"] for x in measurements} == {"measurement"}
    assert {x["run"] for x in measurements} == {1} and {x["benchmark"] for x in measurements} == {"alltoall"}
    assert run["kind"] == "run" and run["id"] == 1 and run["benchmark"] == "import"
    assert run["status"] == "complete" and run["measurements"] == 206 and run["file"] == str(ALLTOALL)
    assert summary == {"kind": "summary", "command": "import", "files": 1, "stored": True, "runs": [1],
                       "counts": {"complete": 1, "incomplete": 0, "failed": 0, "interrupted": 0},
                       "failed_files": [], "already_imported": [], "exit_code": 0}


def test_dry_run_stores_nothing(capsys, db_import_cli):
    rc, out, _ = cli(capsys, "import", str(SEED_NCCL), "--db", db_import_cli, "--dry-run", "--json")
    run, summary = [json.loads(x) for x in out.splitlines()]
    assert rc == 0 and run["kind"] == "run" and run["id"] is None and run["stored"] is False
    assert run["measurements"] == 250 and run["benchmarks"] == ["all_reduce"] and run["status"] == "complete"
    assert summary["stored"] is False and summary["runs"] == [] and summary["counts"]["complete"] == 1
    assert stored(db_import_cli) == []


def test_host_for_logs_that_name_none(capsys, db_import_cli):
    cli(capsys, "import", str(P2P), "--db", db_import_cli, "--host", "node-3")
    assert stored(db_import_cli)[0].hosts == ["node-3"]
    cli(capsys, "import", str(SEED_NCCL), "--db", db_import_cli, "--host", "node-3")  # the log names its host
    assert stored(db_import_cli)[0].hosts == ["SMC-SC-DC19-06"]


def test_bad_files_are_listed_and_good_ones_stored(capsys, db_import_cli, tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 8)
    empty = tmp_path / "empty.log"
    empty.write_text("")
    unknown = tmp_path / "notes.txt"
    unknown.write_text("a meeting note\nnothing measured here\n")
    rc, out, err = cli(capsys, "import", str(junk), str(SEED_NCCL), str(empty), str(unknown),
                       str(tmp_path / "missing.log"), str(tmp_path), "--db", db_import_cli)
    assert rc == 2
    lines = err.splitlines()
    assert lines == [
        f"clusterbench: error: {junk}: binary data, not a text log",
        f"clusterbench: error: {empty}: empty file",
        f"clusterbench: error: {unknown}: unknown format: not the output of {', '.join(ingest.TOOLS)} "
        "(use --tool to force one)",
        f"clusterbench: error: {tmp_path / 'missing.log'}: No such file or directory",
        f"clusterbench: error: {tmp_path}: is a directory",
        "clusterbench: error: 5 of 6 files not imported",
    ]
    assert [r.source for r in stored(db_import_cli)] == ["rccl-tests develop:ae3e635"]


def test_single_bad_file_one_line(capsys, db_import_cli, tmp_path):
    p = tmp_path / "x.log"
    p.write_text("hello\n")
    rc, out, err = cli(capsys, "import", str(p), "--db", db_import_cli)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1


def test_wrong_tool_forced(capsys, db_import_cli):
    rc, _, err = cli(capsys, "import", str(SEED_NCCL), "--tool", "perftest", "--db", db_import_cli)
    assert rc == 2 and "no perftest results found" in err
    rc, _, err = cli(capsys, "import", str(SEED_NCCL), "--tool", "bogus", "--db", db_import_cli)
    assert rc == 2 and "bogus" in err


def test_log_of_a_test_failure_is_stored_failed_with_its_errors(capsys, db_import_cli):
    rc, out, _ = cli(capsys, "import", str(DATA / "nccl-tests" / "issue322-16G-test-nccl-failure-truncated.txt"),
                     "--db", db_import_cli)
    # exit 1: what was imported is a run that failed; its summary says so with its first errors
    assert rc == 1 and "all_reduce failed, 40 measurements" in out
    assert "#   error: HCA-128: Test NCCL failure" in out
    run = stored(db_import_cli)[0]
    assert run.status == "failed" and len(run.errors) == 9


def test_file_with_several_runs_is_stored_whole_or_not_at_all(capsys, db_import_cli, tmp_path, monkeypatch):
    three = tmp_path / "nccl_alltoall-three.log"
    three.write_text(ALLTOALL.read_text() * 3)
    good = tmp_path / "seed.txt"
    shutil.copy(SEED_NCCL, good)
    real = Store.save_run_rows
    calls = {"n": 0}

    def flaky(self, run, rows, telemetry=()):
        calls["n"] += 1
        if calls["n"] == 3:  # the third run of the first file cannot be written
            raise StoreError("disk full")
        return real(self, run, rows, telemetry)

    monkeypatch.setattr(Store, "save_run_rows", flaky)
    rc, out, err = cli(capsys, "import", str(three), str(good), "--db", db_import_cli)
    assert rc == 2 and f"{three}: disk full" in err
    runs = stored(db_import_cli)
    assert [r.meta["file"] for r in runs] == [str(good)]  # the two runs stored before the failure were removed
    with Store.open(db_import_cli) as s:
        assert sum(s.measurement_counts().values()) == 250


def test_concatenated_logs_become_several_runs(capsys, db_import_cli, tmp_path):
    cat = tmp_path / "nightly.log"
    cat.write_text(SEED_NCCL.read_text() + (DATA / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt").read_text())
    rc, out, _ = cli(capsys, "import", str(cat), "--db", db_import_cli)
    assert rc == 0 and len(out.splitlines()) == 2
    assert sorted(r.ranks for r in stored(db_import_cli)) == [8, 16]


def test_gzipped_log(capsys, db_import_cli, tmp_path):
    import gzip

    gz = tmp_path / "nccl_alltoall.log.gz"
    gz.write_bytes(gzip.compress(ALLTOALL.read_bytes()))
    rc, out, _ = cli(capsys, "import", str(gz), "--db", db_import_cli)
    assert rc == 0 and "alltoall complete, 206 measurements" in out
    bad = tmp_path / "cut.log.gz"
    bad.write_bytes(gzip.compress(ALLTOALL.read_bytes())[:200])
    rc, _, err = cli(capsys, "import", str(bad), "--db", db_import_cli)
    assert rc == 2 and len(err.splitlines()) == 1 and str(bad) in err


def test_import_dash_reads_stdin(capsys, db, monkeypatch):

    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(_lines(_run(9), _ms(4))) + "\n"))
    with pytest.raises(SystemExit) as e:
        main(["import", "-", "--db", db, "--tag", "via=stdin"])
    out, err = capsys.readouterr()
    assert e.value.code == 0, err
    assert out == "-: run 1: clusterbench 0.1.0, imported from stdin (run 9) all_reduce complete, 4 measurements\n"
    with Store.open(db) as s:
        (run,) = s.list_runs()
        assert run.tags == {"env": "k8s", "via": "stdin"}
        assert run.command == ["clusterbench", "coll", "all_reduce", "--json"]  # the command it ran
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with pytest.raises(SystemExit) as e:
        main(["import", "-", "--db", db])
    assert e.value.code == 2 and capsys.readouterr().err == "clusterbench: error: -: empty file\n"


def test_import_refuses_in_one_line_and_stores_nothing(capsys, db, tmp_path):

    log = tmp_path / "two-hosts.log"
    log.write_text("\n".join(_interleave(A, B)) + "\n")
    with pytest.raises(SystemExit) as e:
        main(["import", str(log), "--db", db])
    err = capsys.readouterr().err
    assert e.value.code != 0 and "Traceback" not in err
    assert "run 1: its run record is on lines 7 and 8" in err
    assert len([ln for ln in err.splitlines() if "run 1:" in ln]) == 1
    with Store.open(db) as s:
        assert s.list_runs() == []


def test_a_batch_with_damaged_gzip_files_imports_the_others(capsys, tmp_path):
    db = str(tmp_path / "r.db")
    data = gzip.compress("".join(p.read_text() for p in (A3MEGA, WOHLBIER, A3MEGA)).encode())
    header_only = tmp_path / "bad-header.log.gz"           # a valid gzip header, then junk
    header_only.write_bytes(data[:10] + bytes(range(256)) * 4)
    late = tmp_path / "bad-later.log.gz"                   # damaged after the first runs were read
    late.write_bytes(data[: len(data) * 3 // 4] + b"\x00" * 64 + data[len(data) * 3 // 4 + 64:])
    locked = tmp_path / "locked.log"
    locked.write_text(A3MEGA.read_text())
    locked.chmod(0)
    good = tmp_path / "good.log"
    good.write_text(TITANXP.read_text())
    rc, out, err = cli(capsys, "import", str(header_only), str(late), str(locked), str(good), "--db", db)
    assert rc == 2
    lines = err.splitlines()
    assert lines[0].startswith(f"clusterbench: error: {header_only}: corrupt compressed data: Error -3")
    assert lines[1].startswith(f"clusterbench: error: {late}: corrupt compressed data")
    import os
    if os.geteuid() != 0:   # root reads a file without permissions
        assert lines[2] == f"clusterbench: error: {locked}: Permission denied"
    assert lines[-1].endswith("files not imported")
    with Store.open(db) as s:
        runs = s.list_runs()
    assert str(good) in {r.meta["file"] for r in runs}
    assert not [r for r in runs if r.meta["file"] in (str(late)[:-3], str(header_only)[:-3])]   # none half-stored


def test_a_file_name_that_is_not_utf8_is_stored_escaped(capsys, tmp_path):
    name = os.fsdecode(os.fsencode(str(tmp_path)) + b"/bad\xff\xfe.txt")
    Path(name).write_bytes(OSU.read_bytes())
    shown = str(tmp_path) + "/bad\\xff\\xfe.txt"
    db = tmp_path / "r.db"
    rc, out, err = cli(capsys, "import", name, "--db", db)
    assert rc == 0 and err == "", err
    assert out.splitlines()[0] == f"{shown}: run 1: osu 5.3.2 osu_bw complete, 2 measurements"
    with Store.open(db) as s:
        run = s.get_run(1)
        assert run.meta["file"] == shown
        assert s.conn.execute("SELECT name FROM imported_files").fetchall() == [(shown,)]
    rc, out, err = cli(capsys, "import", name, "--db", db, "--json")
    assert rc == 0 and f'"file": "{shown}"'.replace("\\", "\\\\") in out and "\\udc" not in out, out
    rc, out, err = cli(capsys, "import", name, "--db", db)
    assert rc == 0 and out == f"{shown}: already imported as run(s) 1 (same content): skipped\n"


def test_text_mode_says_when_printed_runs_were_not_stored(capsys, tmp_path, monkeypatch):
    src = tmp_path / "src.db"
    rc, _, err = cli(capsys, "import", OSU, "--db", src)
    assert rc == 0, err
    rc, lines, err = cli(capsys, "results", "export", "1", "--db", src)
    assert rc == 0, err
    db = tmp_path / "r.db"
    _stdin(monkeypatch, lines.encode())
    rc, out, err = cli(capsys, "import", "-", "--db", db)
    assert rc == 0 and out.startswith("-: run 1: ") and err == "", (out, err)

    # standard input is known only once read: its runs print before it is found imported
    _stdin(monkeypatch, lines.encode())
    rc, out, err = cli(capsys, "import", "-", "--db", db)
    assert rc == 0 and len(out.splitlines()) == 2, out
    assert out.startswith("-: run 2: ") and out.endswith("\n-: already imported as run(s) 1 (same content): skipped\n")
    assert err == "# note: -: run(s) 2 printed above were not stored: the file was imported before\n"
    with Store.open(db) as s:
        assert [r.id for r in s.list_runs()] == [1]


# -- TransferBench ---------------------------------------------------------------------------
@pytest.mark.parametrize("old, new", [
    ("Executor: CPU 00", "Executor: CPU00"),      # a space lost
    ("Executor: CPU 00", "Executor: CPU XY"),     # the index garbled
    ("Executor: CPU 00", "Executor; CPU 00"),     # one byte flipped: no ':' left
    ("Executor: CPU 00", "Executor: CPU 00 01"),  # one token too many
    ("Executor: CPU 00", "Executor: CPU ²"),      # a digit that int() refuses
])
def test_transferbench_damaged_executor_cell_names_the_line(capsys, tmp_path, old, new):
    path = damaged(tmp_path, SWEEP, old, new)
    with pytest.raises(LogFormatError) as e:
        parse_text(path.read_text())
    assert f"'{new}'" in str(e.value) and "executor" in str(e.value).lower()
    assert one_error(capsys, path, tmp_path / "cb.db") == str(e.value)


def test_a_broken_log_in_a_batch_leaves_the_others_stored(capsys, tmp_path):
    bad = damaged(tmp_path, SWEEP, "Executor: CPU 00", "Executor: CPU00")
    db = tmp_path / "cb.db"
    rc, out, err = cli(capsys, "import", bad, OSU, "--db", db)
    assert rc == 2 and "Traceback" not in err and "internal error" not in err
    assert err.splitlines() == [
        f"clusterbench: error: {bad}: line 23: executor cell 'Executor: CPU00' is not 'Executor: KIND INDEX'",
        "clusterbench: error: 1 of 2 files not imported"]
    assert [r.source.split()[0] for r in _runs(db)] == ["osu"]


@pytest.mark.parametrize("error", [ValueError("x"), IndexError("y"), OverflowError("z"), TypeError("t"),
                                   AttributeError("a"), KeyError("k"), ZeroDivisionError("d")])
def test_any_parser_defect_on_a_log_is_one_line_for_that_file(capsys, tmp_path, monkeypatch, error):
    """The importer boundary: a parser that fails on input it did not foresee names the file and
    the tool; the batch goes on."""
    def parse(lines, name, head):
        yield from ()
        raise error

    monkeypatch.setitem(ingest._BY_TOOL, "transferbench", Importer("transferbench", None, parse))
    db = tmp_path / "cb.db"
    rc, _, err = cli(capsys, "import", SWEEP, OSU, "--db", db)
    assert rc == 2
    first, last = err.splitlines()
    assert first.startswith(f"clusterbench: error: {SWEEP}: malformed transferbench log: the importer "
                            f"failed on it ({type(error).__name__}")
    assert last == "clusterbench: error: 1 of 2 files not imported"
    assert [r.source.split()[0] for r in _runs(db)] == ["osu"]


def test_iperf3_text_rate_of_hundreds_of_digits_is_refused(capsys, tmp_path):
    text = (DATA / "iperf3" / "hpcbench-tcp-1stream-old-bandwidth-header.txt").read_text()
    path = tmp_path / "iperf3.txt"
    path.write_text(text.replace("5.76 Gbits/sec", "9" * 400 + " Gbits/sec"))
    assert one_error(capsys, path, tmp_path / "cb.db") == \
        "summary row '[  4]   0.00-10.00  sec  6.70 GBytes  99999999999999999999999999999999999999...: " \
        "its transfer or rate is not a number"


@pytest.mark.parametrize("change, message", [
    (_sent("fast"), "end.sum_sent.bits_per_second is 'fast', not a number"),
    (_sent(None), "end.sum_sent.bits_per_second is None, not a number"),
    (_sent(True), "end.sum_sent.bits_per_second is True, not a number"),
    (_sent(10 ** 400), "end.sum_sent.bits_per_second is 100...000 (401 digits), not a finite number"),
    (_sent(float("inf")), "end.sum_sent.bits_per_second is inf, not a finite number"),
    (_at("start", value=5), "start is 5, not an object"),
    (_at("end", value=[1]), "end is [1], not an object"),
    (_at("end", "sum_sent", value="x"), "end.sum_sent is 'x', not an object"),
    (_at("end", "sum_sent", "bytes", value="many"), "end.sum_sent.bytes is 'many', not a number"),
    (_at("end", "sum_sent", "retransmits", value=[]), "end.sum_sent.retransmits is [], not a number"),
    (_at("start", "connected", value=7), "start.connected is 7, not a list of objects"),
    (_at("start", "connected", value=[3]), "start.connected is [3], not a list of objects"),
    (_at("start", "test_start", value="tcp"), "start.test_start is 'tcp', not an object"),
    (_at("start", "test_start", "num_streams", value="two"), "start.test_start.num_streams is 'two', not a number"),
    (_at("start", "timestamp", value=1), "start.timestamp is 1, not an object"),
])
def test_iperf3_wrong_typed_fields_are_one_line(capsys, tmp_path, change, message):
    path = _iperf3(tmp_path, change)
    assert one_error(capsys, path, tmp_path / "cb.db") == f"iperf3 JSON document 1: {message}"


def test_iperf3_a_400_digit_rate_written_as_digits_is_refused(capsys, tmp_path):
    text = IPERF3.read_text()
    rate = re.search(r'"bits_per_second":\s*([0-9.e+]+)', text[text.index('"sum_sent"'):]).group(1)
    path = tmp_path / "iperf3.json"
    path.write_text(text.replace(rate, "1" + "0" * 400))
    assert one_error(capsys, path, tmp_path / "cb.db") == \
        "iperf3 JSON document 1: end.sum_sent.bits_per_second is 100...000 (401 digits), not a finite number"


@pytest.mark.parametrize("raw, message", [
    ("1e999", "line 1: measurement value inf is not a finite number"),
    ("-1e999", "line 1: measurement value -inf is not a finite number"),
    ("Infinity", "line 1: measurement value inf is not a finite number"),
    ("NaN", "line 1: measurement value nan is not a finite number"),
    ("1" * 400, "line 1: measurement value 111...111 (400 digits) is not a finite number"),
])
def test_jsonl_values_that_are_not_finite_name_the_line(capsys, tmp_path, raw, message):
    path = _jsonl(tmp_path, _with(MEASUREMENT, "value", raw))
    assert one_error(capsys, path, tmp_path / "cb.db") == message


@pytest.mark.parametrize("measurement, run, message", [
    (_with(MEASUREMENT, "unit", r'"\ud800"'), None, r"line 1: not UTF-8 text: '\ud800' in field 'unit'"),
    (_with(MEASUREMENT, "params", r'{"host": "gpu\udfff"}'), None,
     r"line 1: not UTF-8 text: 'gpu\udfff' in field 'params'"),
    (_with(MEASUREMENT, "params", r'{"h\udc80": 1}'), None, r"line 1: not UTF-8 text: 'h\udc80' in field 'params'"),
    (json.dumps(MEASUREMENT), _with(RUN, "tags", r'{"env": "\ud83d"}'),
     r"line 2: not UTF-8 text: '\ud83d' in field 'tags'"),
    (json.dumps(MEASUREMENT), _with(RUN, "meta", r'{"notes": [{"text": "a\udc00b"}]}'),
     r"line 2: not UTF-8 text: 'a\udc00b' in field 'meta'"),
])
def test_jsonl_lone_surrogates_are_refused_like_tags(capsys, tmp_path, measurement, run, message):
    path = _jsonl(tmp_path, measurement, run)
    assert one_error(capsys, path, tmp_path / "cb.db") == message


def test_other_json_logs_with_lone_surrogates_are_refused(capsys, tmp_path):
    """iperf3 -J, vLLM result files and nccl-tests -J decode JSON escapes too."""
    iperf3 = _iperf3(tmp_path, _at("start", "connected", 0, "local_host", value="\ud800x"))
    assert one_error(capsys, iperf3, tmp_path / "cb.db") == r"iperf3 JSON document 1: not UTF-8 text: '\ud800x'"
    vllm = damaged(tmp_path, DATA / "vllm-serving" / "ascend-qwen2.5-vl-3b-bench-serve-save-result.json",
                   '"backend": "openai"', '"backend": "open\\udfffai"', "vllm.json")
    assert one_error(capsys, vllm, tmp_path / "cb.db") == r"vLLM result JSON: not UTF-8 text: 'open\udfffai'"
    with pytest.raises(LogFormatError, match=r"^JSON: not UTF-8 text: '\\udc00'$"):
        lenient_json('{"version": 2, "config": {"devices": [{"hostname": "\\udc00"}]}}')
    # a character beyond the BMP, escaped as a pair, is text
    assert lenient_json('{"hostname": "\\ud83d\\ude80"}') == ({"hostname": "\U0001f680"}, False)


@pytest.mark.parametrize("key, raw", [("started_at", '"yesterday"'), ("ended_at", '"soon"'),
                                      ("started_at", '"2026-13-01T00:00:00Z"'), ("started_at", '""')])
def test_jsonl_run_times_must_be_iso_8601(capsys, tmp_path, key, raw):
    path = _jsonl(tmp_path, json.dumps(MEASUREMENT), _with(RUN, key, raw))
    assert one_error(capsys, path, tmp_path / "cb.db") == \
        f"line 2: run field {key!r} is {json.loads(raw)!r}, not an ISO 8601 time"


def test_jsonl_ranks_beyond_what_a_store_holds_are_refused(capsys, tmp_path):
    path = _jsonl(tmp_path, json.dumps(MEASUREMENT), _with(RUN, "ranks", "9" * 30))
    assert one_error(capsys, path, tmp_path / "cb.db") == "line 2: run field 'ranks' is out of range"


def test_nccl_show_prints_n_a_for_each_value_not_stored(capsys, tmp_path):
    db = tmp_path / "cb.db"
    inf = _a3mega_row(tmp_path, "    inf     inf      0")
    nan_time = damaged(tmp_path, A3MEGA, "-1    203.2    5.16", "-1      nan    5.16", "nan.txt")
    rc, _, err = cli(capsys, "import", inf, nan_time, "--db", db)
    assert rc == 0, err
    _, out1, _ = cli(capsys, "results", "show", "1", "--db", db)
    _, out2, _ = cli(capsys, "results", "show", "2", "--db", db)
    row = "     1048576        262144     float     sum      -1  {}    207.2    5.06    9.49      0"
    assert row.format("  203.2     N/A     N/A      0") in out1.splitlines()
    assert row.format("    N/A    5.16    9.68      0") in out2.splitlines()


def test_measurements_nested_thousands_deep_are_one_line(capsys, db, tmp_path):
    log = tmp_path / "m.jsonl"
    log.write_text(json.dumps({"kind": "measurement", "run": 1, "benchmark": "all_reduce", "metric": "busbw",
                               "value": 1.5, "unit": "GB/s", "params": {"bytes": 8}}) + "\n" + _argv_check_run(1) + "\n")
    rc, _, err = cli(capsys, "import", log, "--db", db)
    assert rc == 0, err
    with sqlite3.connect(db) as con:
        con.execute("UPDATE measurement_packs SET body=?",
                    ('{"k":[["all_reduce","busbw","GB/s"]],"p":[' + DEEP + '],"r":[[0,0,1.5]]}',))
    con.close()
    rc, _, err = cli(capsys, "results", "show", "1", "--db", db)
    assert rc == 2 and err.count("\n") == 1 and "unreadable measurements: nested more than" in err, err


def test_every_outcome_has_its_json_line(tmp_path):
    db = tmp_path / "cb.db"
    log = TESTS / "data" / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"
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


def test_a_copied_import_is_still_known_as_imported(capsys, tmp_path, any_db):
    laptop = str(tmp_path / "laptop.db")
    rc, _, err = cli_results_cmds(capsys, "import", NCCL_LOG, "--tag", "site=a", "--db", laptop)
    assert rc == 0, err
    rc, _, err = cli_results_cmds(capsys, "results", "copy", "--from", laptop, "--to", any_db)
    assert rc == 0, err
    # the same log imported into the team database again is the run it holds, not a second one
    rc, out, err = cli_results_cmds(capsys, "import", NCCL_LOG, "--tag", "site=a", "--db", any_db)
    assert rc == 0 and "already imported as run(s) 1" in out, (out, err)
    assert _ids(any_db) == [1]
    # and the identity travels on: back into a new file, still one run
    back = str(tmp_path / "back.db")
    rc, _, err = cli_results_cmds(capsys, "results", "copy", "--from", any_db, "--to", back)
    assert rc == 0, err
    rc, out, err = cli_results_cmds(capsys, "import", NCCL_LOG, "--tag", "site=a", "--db", back)
    assert rc == 0 and "already imported" in out, (out, err)
    assert _ids(back) == [1]


def test_imported_log_without_hosts(db, capsys):
    rc, _, err = cli(capsys, "import", "tests/data/nccl-tests/issue294-h100-2node-16rank-rows-only-no-header.txt",
                     "--db", db)
    assert rc == 0, err
    for extra in ([], ["--json"]):
        rc, out, err = cli(capsys, "theory", "--run", "last", "--db", db, *extra)
        _one_line_error(rc, out, err)
        assert "nodes=" in err


@pytest.mark.parametrize("path", LOGS, ids=[str(p.relative_to(DATA)) for p in LOGS])
def test_table_shows_every_stored_value(path, tmp_path):
    for text, measurements in _shown_runs(path, tmp_path):
        finite = [m for m in measurements if isinstance(m["value"], (int, float)) and math.isfinite(m["value"])]
        missing = missing_values(text, finite)
        assert not missing, (f"{len(missing)} of {len(finite)} values not in the table, e.g. "
                             f"{missing[:3]}\n{text}")


def test_nccl_rows_with_the_same_params_all_print_in_order(tmp_path):
    # 12 GPUs from -b 8: all_gather prints three rows of size 0, each with its own times
    (text, ms), *_ = _show("nccl-tests/wohlbier-dgx2-v100-5-collectives-old-error-column-running-lines.txt",
                           tmp_path)
    rows = [line.split() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    times = [m for m in ms if m["metric"] == "time_us" and m["params"]["placement"] == "out"]
    assert len(rows) == len(times) == 31
    assert [r[0] for r in rows[:4]] == ["0", "0", "0", "48"]
    assert [r[5] for r in rows[:3]] == [f"{m['value']:.2f}" for m in times[:3]]
    assert "57.30" in text and "57.12" in text


def test_gemm_import_shows_its_time_and_no_none_device(tmp_path):
    ((text, _),) = _show("rocblas-bench/seed-mi300x-sgemm-4000.txt", tmp_path)
    row = next(line for line in text.splitlines() if "4000" in line and not line.startswith("#"))
    assert row.split()[0] == "-" and row.split()[-1] == "1317.0"
    assert "None" not in text
    ((text, _),) = _show("hipblaslt-bench/doc-bench-freq-all-per-xcd-columns.txt", tmp_path / "b")
    assert "GB/s" in text.splitlines()[-1]


def test_transfer_a2a_labels_every_record(tmp_path):
    ((text, ms),) = _show("transferbench/seed-mi300x-a2a.txt", tmp_path)
    assert "None" not in text
    assert "aggregate (timing=gpu)" in text and "aggregate (timing=cpu)" in text
    actual = next(m for m in ms if m["params"].get("stat") == "row_actual" and m["params"]["src"] == "G0")
    g0 = next(line for line in text.splitlines() if line.startswith("  G0 "))
    assert g0.split()[-1] == f"{actual['value']:.2f}"
    ((text, _),) = _show("transferbench/seed-mi300x-p2p.txt", tmp_path / "p")
    averages = [line for line in text.splitlines() if line.lstrip().startswith("average")]
    assert len(averages) == len(set(averages)) == 8
    assert any("(src=C dst=G)" in line for line in averages)


def test_transfer_config_prints_times_as_times(tmp_path):
    ((text, _),) = _show("transferbench/docs-timing-config-example-v1.6x.txt", tmp_path)
    assert "77688.000 GB/s" not in text  # a wall time is no bandwidth
    assert "timing=cpu" in text


def test_copy_is_idempotent_in_both_directions(capsys, any_db, tmp_path, monkeypatch):
    laptop = tmp_path / "laptop.db"
    _laptop(laptop, 3)
    cli_store_cli(capsys, "import", ALLTOALL, "--db", any_db)   # the team database has a run of its own

    rc, out, err = cli_store_cli(capsys, "results", "copy", "--from", laptop, "--to", any_db)
    assert rc == 0, err
    assert out.splitlines() == [
        "run 1: copied as run 2 (coll, 5 measurements)",
        "run 2: copied as run 3 (coll, 5 measurements)",
        "run 3: copied as run 4 (coll, 5 measurements)",
        f"copied 3 run(s) (15 measurements), skipped 0 already present: {laptop} -> {any_db}",
    ]
    rc, out, _ = cli_store_cli(capsys, "results", "copy", "--from", laptop, "--to", any_db, "--json")
    summary = json.loads(out)
    assert rc == 0 and len(out.splitlines()) == 1
    assert {k: summary[k] for k in ("kind", "copied", "skipped", "measurements", "from", "to")} == {
        "kind": "summary", "copied": 0, "skipped": 3, "measurements": 0, "from": str(laptop), "to": any_db}
    assert [(r["from"], r["to"], r["copied"]) for r in summary["runs"]] == [(1, 2, False), (2, 3, False), (3, 4, False)]

    _laptop(laptop, 1)  # one more run on the laptop: only that one goes
    rc, out, _ = cli_store_cli(capsys, "results", "copy", "--from", laptop, "--to", any_db)
    assert out.splitlines()[-1].startswith("copied 1 run(s) (5 measurements), skipped 3 already present")
    with Store.open(any_db) as s:
        assert len(s.list_runs()) == 5 and sum(s.measurement_counts().values()) == 206 + 20

    back = tmp_path / "back.db"   # and the other way: the team database into a fresh file
    monkeypatch.setenv("CLUSTERBENCH_DB", str(back))   # --to defaults to it
    rc, out, _ = cli_store_cli(capsys, "results", "copy", "--from", any_db, "--json")
    assert json.loads(out)["copied"] == 5
    assert _contents(back) == _contents(any_db)
    assert set(_contents(laptop)) <= set(_contents(back))


def test_sqlite_url_works_end_to_end(capsys, tmp_path):
    rc, _, err = cli(capsys, "import", str(TESTS / "data" / "nccl-tests" /
                                         "superbench-nccl_alltoall.log"), "--db", f"sqlite://{tmp_path}/u.db")
    assert rc == 0, err
    with Store.open(tmp_path / "u.db", create=False) as s:
        assert len(s.list_runs()) == 1


def test_import_of_a_json_line_with_a_nul_tag_is_refused(any_db, tmp_path):
    lines = list(run_lines(_store_nul_run(id=7), [_m()]))
    run_line = json.loads(lines[-1])
    run_line["tags"] = {"k": NUL}
    log = tmp_path / "pod.log"
    log.write_text("\n".join([*lines[:-1], json.dumps(run_line)]) + "\n")
    rc, out, err = run_cli("import", log, "--db", any_db)
    assert rc == 2 and "tag 'k' holds a NUL character" in err, (out, err)
    assert "cannot read" not in err and "cannot write" not in err and "Traceback" not in err
    with Store.open(any_db) as s:
        assert s.list_runs() == []


def test_imported_text_is_escaped(capsys, tmp_path):
    log = tmp_path / "evil.log"
    src = (TESTS / "data" / "nccl-tests").glob("*.txt")
    text = next(p for p in sorted(src) if "Avg bus bandwidth" in p.read_text()).read_text()
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("#  Rank"))
    lines[at] = lines[at].replace(" on ", f" on {ESC}x", 1)
    log.write_text("".join(lines))
    db = str(tmp_path / "imp.db")
    code, out, err = _cb(capsys, ["import", str(log), "--db", db])
    _clean(out + err)
    code, out, err = _cb(capsys, ["results", "show", "last", "--db", db])
    _clean(out + err)


def test_builtin_profile_on_the_guides_own_logs(rows_validate_probe):
    got = {o.criterion.name: o for o in evaluate(load_profile("amd-mi300x-oem"), rows_validate_probe)}
    for name, status, measured, bound in EXPECTED:
        o = got[name]
        assert o.status == status, name
        assert o.measured == pytest.approx(measured, rel=1e-12), name
        assert o.margin == pytest.approx(measured - bound, abs=1e-9), name
        assert o.margin_pct == pytest.approx((measured - bound) / bound * 100, rel=1e-9), name
    assert got["BabelStream Copy"].threshold == ">= 4,177.29 GB/s"
    assert got["rocBLAS FP32 GEMM 4000x4000x4000"].threshold == ">= 94.1 TFLOP/s"
    # two tables are two "devices" of one host's import: too few to look for outliers, and it says so
    skipped = got["no degraded GPU in BabelStream Triad"]
    assert skipped.status == "skipped" and "at least 3" in skipped.detail


@pytest.mark.parametrize("value, unit, status", [
    (2526, "Gbps", "pass"), (2527, "Gbps", "fail"),          # 315.84 GB/s = 2526.72 Gbit/s
    (315840, "MB/s", "pass"), (315841, "MB/s", "fail"),
    (301208, "MiB/s", "pass"), (301209, "MiB/s", "fail"),    # 315.84e9 / 2**20 = 301208.5
    (315.84, "", "pass"), (0.31585, "TB/s", "fail"),
])
def test_units_convert_at_the_boundary(rows_validate_probe, value, unit, status):
    crit = dict(benchmark="all_reduce", metric="busbw", params={"placement": "in", "bytes": "8G"}, op=">=", value=value)
    if unit:
        crit["unit"] = unit
    o = _one(rows_validate_probe, **crit)
    assert (o.status, o.unit, o.measured) == (status, "GB/s", 315.84)


def test_times_in_another_unit(rows_validate_probe):
    crit = dict(benchmark="all_reduce", metric="time_us", params={"placement": "in", "bytes": 8589934592}, op="<=")
    assert _one(rows_validate_probe, **crit, value=47.594, unit="ms").status == "pass"        # 47594 us in-place
    o = _one(rows_validate_probe, **crit, value=47.5, unit="ms")
    assert (o.status, o.margin) == ("fail", pytest.approx(-94.0))


@pytest.mark.parametrize("params", [
    {"bytes": "8G"}, {"bytes": "8GiB"}, {"bytes": 8589934592}, {"dtype": "fp32", "bytes": "8G"},
    {"dtype": "FLOAT", "bytes": "8G"}, {"dtype": ["half", "float32"], "bytes": "8G"},
])
def test_sizes_and_dtypes_as_people_write_them(rows_validate_probe, params):
    o = _one(rows_validate_probe, benchmark="allreduce", metric="busbw", params={**params, "placement": "in"}, op=">=", value=1)
    assert (o.status, o.matched, o.measured) == ("pass", 1, 315.84)


def test_range_margin_is_to_the_nearer_bound(rows_validate_probe):
    crit = dict(benchmark="all_reduce", metric="busbw", params={"placement": "in", "bytes": "8G"}, op="range")
    o = _one(rows_validate_probe, **crit, min=300, max=320)
    assert (o.status, o.margin, o.margin_pct) == ("pass", pytest.approx(4.16), pytest.approx(4.16 / 320 * 100))
    o = _one(rows_validate_probe, **crit, min=0.3, max=0.31, unit="TB/s")
    assert (o.status, o.margin, o.margin_pct) == ("fail", pytest.approx(-5.84), pytest.approx(-5.84 / 310 * 100))


def test_exponents_without_a_dot_are_numbers(rows_validate_probe):
    """YAML 1.2 (and JSON) floats: 1e9, 4.1e6, 1.5e308 were strings to YAML 1.1 and refused."""
    p = _profile("name: t\ncriteria:\n  - {name: c, benchmark: all_reduce, metric: busbw, op: '<=', "
                 "value: 3.1584e5, unit: MB/s}\n  - {name: d, benchmark: all_reduce, metric: busbw, "
                 "op: '>=', baseline: 1.5e308, pct: 95}\n")
    assert p.criteria[0].value == 315840.0
    o = evaluate(p, rows_validate_probe)[1]
    assert o.status == "fail" and math.isfinite(o.margin) and "= inf" not in o.threshold


def test_a_criterion_matching_nothing_is_skipped_saying_why(rows_validate_probe):
    o = _one(rows_validate_probe, benchmark="all_reduce", metric="busbw", params={"bytes": "16G"}, op=">=", value=1)
    assert o.status == "skipped" and "bytes=17179869184" in o.detail


def test_degraded_devices_tell_hosts_apart():
    """The report's degraded section pooled GPU n of every host the same way."""
    from clusterbench.judge.degraded import find_degraded

    found = [d for d in find_degraded(_slow_gpu_rows()) if d.by == "device"]
    assert [d.outlier.key for d in found] == ["c:3"]
