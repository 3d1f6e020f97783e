"""``clusterbench import``: store, print, tag, dry-run, and bad input (one line per bad file)."""

import json
import shutil
from pathlib import Path

import pytest

from clusterbench.cli import main
from clusterbench.errors import StoreError
from clusterbench.store import Store

DATA = Path(__file__).parent / "data"
SEED_NCCL = DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"
ALLTOALL = DATA / "nccl-tests" / "superbench-nccl_alltoall.log"
P2P = DATA / "transferbench" / "seed-mi300x-p2p.txt"


@pytest.fixture
def db(any_db):
    """Every import test runs against an SQLite file and a real PostgreSQL database."""
    return any_db


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def stored(db):
    with Store.open(db) as s:
        return s.list_runs()


def test_import_stores_one_run_per_file_with_tags(capsys, db):
    rc, out, err = cli(capsys, "import", str(SEED_NCCL), str(P2P), "--db", db, "--tag", "env=container",
                       "--tag", "node=gpu-07")
    assert rc == 0 and err == ""
    assert "run 1: rccl-tests develop:ae3e635 all_reduce complete, 250 measurements" in out
    runs = stored(db)
    assert len(runs) == 2 and all(r.benchmark == "import" for r in runs)
    assert all(r.tags == {"env": "container", "node": "gpu-07"} for r in runs)
    with Store.open(db) as s:
        nccl = next(r for r in runs if r.source.startswith("rccl-tests"))
        ms = s.measurements(nccl.id)
        assert len(ms) == 250 and nccl.meta["file"] == str(SEED_NCCL) and nccl.command[0] == "clusterbench"
        last = [m for m in ms if m.metric == "busbw" and m.params["bytes"] == 8589934592 and m.params["placement"] == "in"]
        assert last[0].value == 315.84


def test_reprint_of_imported_run_is_the_nccl_tests_table(capsys, db):
    cli(capsys, "import", str(SEED_NCCL), "--db", db)
    rc, out, _ = cli(capsys, "results", "show", "1", "--db", db)
    assert rc == 0
    assert "8589934592    2147483648     float     sum      -1    47488  180.88  316.55      0    47594  180.48  315.84      0" in out
    assert "# Avg bus bandwidth    : 102.138" in out


def test_json_prints_the_measurement_contract(capsys, db):
    rc, out, _ = cli(capsys, "import", str(ALLTOALL), "--db", db, "--json")
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


def test_dry_run_stores_nothing(capsys, db):
    rc, out, _ = cli(capsys, "import", str(SEED_NCCL), "--db", db, "--dry-run", "--json")
    run, summary = [json.loads(x) for x in out.splitlines()]
    assert rc == 0 and run["kind"] == "run" and run["id"] is None and run["stored"] is False
    assert run["measurements"] == 250 and run["benchmarks"] == ["all_reduce"] and run["status"] == "complete"
    assert summary["stored"] is False and summary["runs"] == [] and summary["counts"]["complete"] == 1
    assert stored(db) == []


def test_host_for_logs_that_name_none(capsys, db):
    cli(capsys, "import", str(P2P), "--db", db, "--host", "node-3")
    assert stored(db)[0].hosts == ["node-3"]
    cli(capsys, "import", str(SEED_NCCL), "--db", db, "--host", "node-3")  # the log names its host
    assert stored(db)[0].hosts == ["SMC-SC-DC19-06"]


def test_bad_files_are_listed_and_good_ones_stored(capsys, db, tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 8)
    empty = tmp_path / "empty.log"
    empty.write_text("")
    unknown = tmp_path / "notes.txt"
    unknown.write_text("a meeting note\nnothing measured here\n")
    rc, out, err = cli(capsys, "import", str(junk), str(SEED_NCCL), str(empty), str(unknown),
                       str(tmp_path / "missing.log"), str(tmp_path), "--db", db)
    assert rc == 2
    lines = err.splitlines()
    assert lines == [
        f"clusterbench: error: {junk}: binary data, not a text log",
        f"clusterbench: error: {empty}: empty file",
        f"clusterbench: error: {unknown}: unknown format: not the output of babelstream, clusterbench-jsonl, "
        "hipblaslt-bench, iperf3, nccl-tests, osu, perftest, rccl-tests, rocblas-bench, stream, transferbench, "
        "vllm-serving (use --tool to force one)",
        f"clusterbench: error: {tmp_path / 'missing.log'}: No such file or directory",
        f"clusterbench: error: {tmp_path}: is a directory",
        "clusterbench: error: 5 of 6 files not imported",
    ]
    assert [r.source for r in stored(db)] == ["rccl-tests develop:ae3e635"]


def test_single_bad_file_one_line(capsys, db, tmp_path):
    p = tmp_path / "x.log"
    p.write_text("hello\n")
    rc, out, err = cli(capsys, "import", str(p), "--db", db)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1


def test_wrong_tool_forced(capsys, db):
    rc, _, err = cli(capsys, "import", str(SEED_NCCL), "--tool", "perftest", "--db", db)
    assert rc == 2 and "no perftest results found" in err
    rc, _, err = cli(capsys, "import", str(SEED_NCCL), "--tool", "bogus", "--db", db)
    assert rc == 2 and "bogus" in err


def test_log_of_a_test_failure_is_stored_failed_with_its_errors(capsys, db):
    rc, out, _ = cli(capsys, "import", str(DATA / "nccl-tests" / "issue322-16G-test-nccl-failure-truncated.txt"),
                     "--db", db)
    # exit 1: what was imported is a run that failed; its summary says so with its first errors
    assert rc == 1 and "all_reduce failed, 40 measurements" in out
    assert "#   error: HCA-128: Test NCCL failure" in out
    run = stored(db)[0]
    assert run.status == "failed" and len(run.errors) == 9


def test_file_with_several_runs_is_stored_whole_or_not_at_all(capsys, db, tmp_path, monkeypatch):
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
    rc, out, err = cli(capsys, "import", str(three), str(good), "--db", db)
    assert rc == 2 and f"{three}: disk full" in err
    runs = stored(db)
    assert [r.meta["file"] for r in runs] == [str(good)]  # the two runs stored before the failure were removed
    with Store.open(db) as s:
        assert sum(s.measurement_counts().values()) == 250


def test_concatenated_logs_become_several_runs(capsys, db, tmp_path):
    cat = tmp_path / "nightly.log"
    cat.write_text(SEED_NCCL.read_text() + (DATA / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt").read_text())
    rc, out, _ = cli(capsys, "import", str(cat), "--db", db)
    assert rc == 0 and len(out.splitlines()) == 2
    assert sorted(r.ranks for r in stored(db)) == [8, 16]


def test_gzipped_log(capsys, db, tmp_path):
    import gzip

    gz = tmp_path / "nccl_alltoall.log.gz"
    gz.write_bytes(gzip.compress(ALLTOALL.read_bytes()))
    rc, out, _ = cli(capsys, "import", str(gz), "--db", db)
    assert rc == 0 and "alltoall complete, 206 measurements" in out
    bad = tmp_path / "cut.log.gz"
    bad.write_bytes(gzip.compress(ALLTOALL.read_bytes())[:200])
    rc, _, err = cli(capsys, "import", str(bad), "--db", db)
    assert rc == 2 and len(err.splitlines()) == 1 and str(bad) in err
