"""``clusterbench coll`` and ``clusterbench run`` through the real CLI: bad input, JSON contract,
stored runs re-printed by ``results show``, and a rank killed mid-run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading

import pytest
from process_helpers import assert_all_gone, process_family

from clusterbench.cli import main
from clusterbench.records import COMPLETE, INCOMPLETE, Note
from clusterbench.store import Store

SMALL = ["-b", "8", "-e", "256", "-f", "4", "-n", "2", "-w", "1"]


def cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.mark.parametrize("args,words", [
    (["coll", "all_reduce", "-b", "12Q"], "invalid minbytes (-b) '12Q'"),
    (["coll", "all_reduce", "-b", "1M", "-e", "1K"], "larger than maxbytes"),
    (["coll", "allscatter"], "unknown collective 'allscatter'"),
    (["coll", "all_reduce", "-d", "float8"], "unknown datatype 'float8'"),
    (["coll", "all_reduce", "-o", "xor"], "unknown reduction op 'xor'"),
    (["coll", "all_reduce", "-a", "9"], "invalid average (-a) 9"),
    (["coll", "all_reduce", "--np", "0"], "--np must be at least 1"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, db, args, words):
    code, out, err = cli(capsys, *args, "--db", db)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("clusterbench: error: ") and words in err, err
    assert "Traceback" not in out + err


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the no-GPU message")
def test_np_beyond_gpus_without_gpu(capsys, db):
    code, _, err = cli(capsys, "coll", "all_reduce", "--device", "cuda", "--np", "4", "--db", db)
    assert code == 2 and err == "clusterbench: error: --device cuda: no CUDA or ROCm GPU is visible to PyTorch\n"


def test_unwritable_and_corrupt_databases(capsys, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    code, _, err = cli(capsys, "coll", "all_reduce", *SMALL, "--db", str(blocker / "results.db"))
    assert code == 2 and err.count("\n") == 1 and "cannot create database directory" in err
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not sqlite" * 100)
    code, _, err = cli(capsys, "coll", "all_reduce", *SMALL, "--db", str(corrupt))
    assert code == 2 and err.count("\n") == 1 and "not a database" in err
    assert corrupt.read_bytes() == b"this is not sqlite" * 100  # nothing written into it


def test_json_lines_follow_the_contract(capsys, db):
    code, out, err = cli(capsys, "coll", "reduce_scatter", *SMALL, "--json", "--db", db)
    assert code == 0, err
    units = {"time_us": "us", "algbw": "GB/s", "busbw": "GB/s", "wrong": "", "avg_busbw": "GB/s",
             "out_of_bounds": "", "iter_time_us": "us"}   # iter_time_us: gloo's per-op statistics
    records = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    assert records
    for r in records:
        assert list(r) == ["kind", "run", "benchmark", "metric", "value", "unit", "params"]
        assert r["benchmark"] == "reduce_scatter" and isinstance(r["run"], int)
        assert r["unit"] == units[r["metric"]]
        if r["metric"] in ("time_us", "algbw", "busbw", "wrong", "iter_time_us"):
            assert {"bytes", "count", "dtype", "redop", "root", "placement", "ranks"} <= set(r["params"])
            assert r["params"]["redop"] == "sum" and r["params"]["root"] == -1
        if r["metric"] == "iter_time_us":   # min <= median <= max of the slowest rank's per-op times
            assert r["params"]["stat"] in ("min", "max", "avg", "median", "mad", "first", "stddev")
    assert {r["metric"] for r in records} == set(units)
    stats = {(r["params"]["bytes"], r["params"]["placement"], r["params"]["stat"]): r["value"]
             for r in records if r["metric"] == "iter_time_us"}
    for (size, place, stat), v in stats.items():
        if stat == "median":
            assert stats[(size, place, "min")] <= v <= stats[(size, place, "max")]
    lines = [json.loads(line) for line in out.splitlines()]
    run = next(x for x in lines if x["kind"] == "run")   # after the measurements: the whole run record
    last = run
    assert [x["kind"] for x in lines[lines.index(run) + 1:]] in ([], ["warning"], ["warning", "warning"])
    assert last["kind"] == "run" and last["id"] == records[0]["run"] and last["status"] == "complete"
    assert last["benchmark"] == "coll" and last["ranks"] >= 1 and last["hosts"]


def _table_lines(text, notes):
    skip = {f"# {Note.from_stored(n).text}" for n in notes}
    return [line for line in text.splitlines() if line not in skip]


def test_results_show_reprints_the_table(capsys, db):
    code, live, err = cli(capsys, "coll", "all_gather,broadcast", *SMALL, "--db", db)
    assert code == 0, err
    run_id = int(re.search(r"# run (\d+) \(complete\) stored in", err).group(1))
    with Store.open(db) as store:
        run = store.get_run(run_id)
    code, shown, _ = cli(capsys, "results", "show", str(run_id), "--db", db)
    assert code == 0
    table = [line for line in shown.splitlines() if not line.startswith(("# run ", "# source: "))]
    notes = run.meta.get("notes", [])
    # the same table; notes sit inside their op's table in both (live: once its first row is
    # done; shown: right after its header)
    assert _table_lines("\n".join(table), notes) == _table_lines(live, notes)
    assert notes and all(f"# {Note.from_stored(n).text}" in table for n in notes)
    assert any(line.split()[:5] == ["128", "16", "float", "none", "-1"] for line in table)


def _pids_from_header(line):
    m = re.match(r"#\s+Rank\s+(\d+) Group\s+\d+ Pid\s+(\d+) on", line)
    return (int(m.group(1)), int(m.group(2))) if m else None


def test_kill_a_rank_mid_run(tmp_path):
    db = str(tmp_path / "kill.db")
    cmd = [sys.executable, "-m", "clusterbench", "coll", "all_reduce", "-b", "8", "-e", "64M", "-f", "2",
           "-n", "20", "-w", "1", "--np", "3", "--timeout", "60", "--db", db]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killer = threading.Timer(150, proc.kill)  # never let the test hang
    killer.start()
    try:
        pids: dict[int, int] = {}
        for line in proc.stdout:
            found = _pids_from_header(line)
            if found:
                pids[found[0]] = found[1]
            elif line.strip() and not line.startswith("#"):
                break  # the first finished row
        assert set(pids) == {0, 1, 2}
        family = process_family(proc)
        os.kill(pids[1], signal.SIGKILL)
        rest, err = proc.communicate(timeout=120)
    finally:
        killer.cancel()
    assert proc.returncode not in (0, None)
    errors = [e for e in err.splitlines() if e.startswith("clusterbench: error:")]
    assert len(errors) == 1 and "rank 1 on" in errors[0] and "SIGKILL" in errors[0], err
    assert "Traceback" not in err
    with Store.open(db) as store:
        (run,) = store.list_runs()
        assert run.status == INCOMPLETE
        assert [m for m in store.measurements(run.id) if m.metric == "busbw"]
    assert_all_gone(family, within=10)


def test_run_stores_one_run_with_every_collective(tmp_path):
    db = str(tmp_path / "suite.db")
    proc = subprocess.run([sys.executable, "-m", "clusterbench", "run", "--db", db], capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert f"stored in {db}" in proc.stderr
    with Store.open(db) as store:
        (run,) = store.list_runs()
        ms = store.measurements(run.id)
    assert run.status == COMPLETE and run.benchmark == "suite" and run.ranks == 2
    collectives = {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv"}
    assert collectives <= {m.benchmark for m in ms}  # other suite steps may add their own benchmarks
    assert all(m.value == 0 for m in ms if m.benchmark in collectives and m.metric in ("wrong", "out_of_bounds"))
    assert proc.stdout.count("# Out of bounds values : 0 OK") == 7


def test_repeat_under_torchrun_runs_every_repetition_on_every_rank(tmp_path):
    """Under a launcher every process repeats: a worker that left after the first repetition
    made the second one fail waiting for it."""
    db = str(tmp_path / "rep.db")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                           "-m", "clusterbench", "coll", "all_reduce", "-b", "8", "-e", "64", "--device", "cpu",
                           "--repeat", "2", "--telemetry-interval", "0", "--timeout", "60", "--db", db],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    with Store.open(db) as store:
        runs = store.list_runs()
    assert [r.status for r in runs] == [COMPLETE, COMPLETE]
    assert {r.tags["repeat"] for r in runs} == {"1", "2"} and len({r.tags["repeat_group"] for r in runs}) == 1


def test_a_one_device_benchmark_runs_under_a_launcher_with_more_ranks(tmp_path):
    """stream picks one rank per device; under torchrun the launcher's ranks are the ranks (the
    extra one has no device and waits), not an error about an --np the user never gave."""
    db = str(tmp_path / "s.db")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                           "-m", "clusterbench", "stream", "-s", "64K", "-n", "3", "--device", "cpu",
                           "--telemetry-interval", "0", "--timeout", "60", "--db", db],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    with Store.open(db) as store:
        (run,) = store.list_runs()
        assert run.status == COMPLETE and run.ranks == 2
        assert {m.params["kernel"] for m in store.measurements(run.id) if m.metric == "bandwidth"} >= {"Copy", "Triad"}
