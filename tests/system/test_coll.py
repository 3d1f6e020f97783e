"""System tests (coll): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

import io
import json
import math
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import psutil
import pytest
import torch.distributed as dist
from bench_cli import SMALL, _key, cli, cli_bench_cpu, measurements
from bench_tables import _index
from child_cli import FUTURE, _cb, _make_newer, _one_error, _runs
from cluster_fixtures import COLL, GLOO
from cluster_fixtures import _cb as _cluster_emulated_cb
from fleet_helpers import night
from fleet_metrics import BUSBW, _families, _value
from json_cases import _cases
from json_schema import check_lines
from judge_helpers import run_cli
from nccl_facts import FACTORS, PER_RANK, WIDTH
from paths import SRC, TESTS
from process_helpers import (
    _cmdline,
    _family,
    assert_all_gone,
    free_port,
    listens_on,
    process_family,
    wait_until,
)
from system_cli import (
    BIG,
    DTYPE_BYTES,
    _default_sighup,
    _fault_disk_cb,
    _finish,
    _get,
    _healthy,
    _start,
    _store_versions_cb,
    _stored,
    stored_bench_cpu,
)
from tmpfs_helpers import small_tmpfs
from tty_runs import ESCAPE, _skeleton
from tty_runs import _run as _progress_run

from clusterbench.bench.collectives import rank
from clusterbench.bench.collectives.config import coll_config as build_config
from clusterbench.cli import main
from clusterbench.families.collectives.spec import OPS, SPECS
from clusterbench.output import OUTPUT_FAILED
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job
from clusterbench.records import COMPLETE, FAILED, INCOMPLETE, INTERRUPTED, Measurement, Note, Run
from clusterbench.report import openmetrics
from clusterbench.report.terminal import TablePrinter
from clusterbench.runner import run_job
from clusterbench.store import Store
from clusterbench.store.migrations import MIGRATIONS


def _sweep(c, db, *extra, test=()):
    return _cluster_emulated_cb(["sweep", "--hosts", ",".join(c.hosts), "--agent", c.agent, "--no-single", *GLOO,
                "--join-timeout", "40", "--timeout", "120", "--db", db, *extra, "--", *COLL, *test])


def _table_lines(text, notes):
    skip = {f"# {Note.from_stored(n).text}" for n in notes}
    return [line for line in text.splitlines() if line not in skip]


def _pids_from_header(line):
    m = re.match(r"#\s+Rank\s+(\d+) Group\s+\d+ Pid\s+(\d+) on", line)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _fill(where: Path, leave: int) -> None:
    """Fill the file system of ``where`` up to ``leave`` bytes."""
    st = os.statvfs(where)
    free = st.f_bavail * st.f_frsize
    with open(where / "filler", "wb") as f:
        f.write(b"\0" * max(0, free - leave))


def _rows_until(proc: subprocess.Popen, n: int) -> list[str]:
    """Read the table until ``n`` finished rows were printed; return them."""
    rows: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() and not line.startswith("#"):
            rows.append(line)
            if len(rows) >= n:
                break
    return rows


def _sizes(lines: list[str]) -> list[int]:
    return [int(line.split()[0]) for line in lines if line.strip() and not line.startswith("#")]


def _assert_printed_is_stored(printed: list[str], run, ms) -> None:
    stored = sorted({int(m.params["bytes"]) for m in ms if m.metric == "busbw"})
    assert printed and set(_sizes(printed)) <= set(stored), (printed, stored)


def _cb_env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))


def _records(db: Path) -> list[tuple[Run, list[tuple]]]:
    with Store.open(db) as s:
        return [(r, [(m.benchmark, m.metric, m.value, m.unit, m.params) for m in s.measurements(r.id)])
                for r in reversed(s.list_runs())]


CASE_IDS = [c[0] for c in _cases({"db": "x", "tmp": "/nonexistent"})]




UNCHECKED_IN = {"alltoall", "sendrecv"}                      # nccl-tests does not check in-place


SIZES = [8, 32, 128, 512, 2048]                              # -b 8 -e 2K -f 4


def rows_native_records(records: list[dict[str, Any]]) -> dict[tuple, dict[str, float]]:
    """Row params (without stat) -> {metric: value}, per benchmark; per-iteration stats left out."""
    out: dict[tuple, dict[str, float]] = defaultdict(dict)
    for r in records:
        if r["kind"] == "measurement" and "stat" not in r["params"]:
            out[(r["benchmark"], *sorted(r["params"].items()))][r["metric"]] = r["value"]
    return out


def _run(config, np, db, target=rank.main):
    out = io.StringIO()
    job = Job(target, config, RankOptions(device="cpu", timeout=60), np=np)
    result = run_job(job, "coll", ["test"], TablePrinter(out=out), db=db, announce=lambda _t: None)
    return result, out.getvalue()


def _corrupt_output(ranks: set[int]):
    """Sweep.count_wrong that first adds 1 to the first element of the result this rank checks:
    a value the transport got wrong, after the op."""
    honest = rank.Sweep.count_wrong

    def count_wrong(self, b, per):
        if self.ctx.rank in ranks and b.output is not None and b.output.numel():
            b.output[0] += 1
        return honest(self, b, per)

    return count_wrong


def one_wrong_value_on_rank1(ctx, config):
    rank.Sweep.count_wrong = _corrupt_output({1})
    rank.main(ctx, config)


def one_wrong_value_on_every_rank(ctx, config):
    rank.Sweep.count_wrong = _corrupt_output(set(range(ctx.world_size)))
    rank.main(ctx, config)


@pytest.fixture
def tiny_fs_leftovers(tmp_path):
    """A directory on a 300 KiB tmpfs (root only; skipped where mount is refused)."""
    with small_tmpfs(tmp_path / "tiny", "300k") as mnt:
        yield mnt


def _stdio_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "CLUSTERBENCH_DEBUG")}
    return {**env, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", **extra}


COLL_progress = ["coll", "all_reduce", "--np", "2", "--device", "cpu", "-b", "8", "-e", "64K", "-f", "8", "-n", "2",
        "-w", "1", "--telemetry-interval", "0"]


def test_more_local_ranks_than_the_limit_is_refused_before_any_starts(tmp_path):
    db = tmp_path / "cb.db"
    err = _one_error(_cb("coll", "all_reduce", "--np", "3", "--device", "cpu", "--db", db,
                         env={"CLUSTERBENCH_MAX_LOCAL_RANKS": "2"}))
    assert "--np 3" in err and "at most 2" in err and "CLUSTERBENCH_MAX_LOCAL_RANKS=2" in err
    cores = len(os.sched_getaffinity(0))
    err = _one_error(_cb("coll", "all_reduce", "--np", "1000", "--device", "cpu", "--db", db))
    assert f"at most {4 * cores}" in err
    assert _runs(db) == []


def test_a_bad_rank_limit_is_a_usage_error(tmp_path):
    err = _one_error(_cb("coll", "all_reduce", "--np", "2", "--device", "cpu", "--db", tmp_path / "cb.db",
                         env={"CLUSTERBENCH_MAX_LOCAL_RANKS": "many"}))
    assert "CLUSTERBENCH_MAX_LOCAL_RANKS='many'" in err


def test_sizes_no_memory_holds_are_refused_with_the_memory_there_is(tmp_path):
    db = tmp_path / "cb.db"
    err = _one_error(_cb("coll", "all_reduce", "-b", "1T", "-e", "1T", "--np", "2", "--device", "cpu",
                         "--db", db))
    # a send and a receive buffer of 1 TiB each: out of place has both
    assert "2199023255552 B of buffers per rank" in err and "B of host memory available" in err
    err = _one_error(_cb("stream", "-s", "1T", "--device", "cpu", "--db", db))
    assert "free host memory" in err
    assert _runs(db) == []


def test_a_run_that_measures_nothing_is_never_complete(tmp_path):
    """sendrecv on one gloo rank: every placement is skipped, nothing is measured, and the run
    says so."""
    db = tmp_path / "cb.db"
    p = _cb("coll", "sendrecv", "-b", "8", "-e", "8", "--np", "1", "--device", "cpu", "--db", db)
    assert p.returncode == 1, p.stderr
    assert "without a single measurement" in p.stderr and "Traceback" not in p.stderr
    (run,) = _runs(db)
    assert run.status == "failed"


def test_sizes_that_hold_nothing_per_rank_are_refused_before_any_rank_starts(tmp_path):
    """Every size holds less than one double per rank: known before starting, so nothing is stored."""
    db = tmp_path / "cb.db"
    p = _cb("coll", "all_gather", "-b", "1", "-e", "4", "-d", "double", "--np", "2", "--device", "cpu",
            "--db", db)
    assert p.returncode == 2, p.stderr
    assert "nothing to measure" in _one_error(p)
    assert not db.exists() or _runs(db) == []


@pytest.mark.root
@pytest.mark.slow
def test_sweep_names_the_host_behind_a_shaped_link(clean, tmp_path):
    clean.shape(1, "1gbit")
    db = str(tmp_path / "sweep.db")
    r = _sweep(clean, db, "--link-rate", "1gbit", "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    lines = check_lines(r.stdout)  # every line valid against the published schema
    rows = [m for m in lines if m["kind"] == "measurement"]
    flagged = {m["params"]["host"] for m in rows if m["metric"] == "node_score" and m["params"]["suspect"]}
    assert flagged == {clean.hosts[1]}
    hosts = {h["host"]: h for h in lines if h["kind"] == "host"}
    assert set(hosts) == set(clean.hosts) and hosts[clean.hosts[1]]["status"] == "suspect"
    assert [h["status"] for n, h in hosts.items() if n != clean.hosts[1]] == ["ok", "ok"]
    assert lines[-1]["kind"] == "summary" and lines[-1]["suspects"] == [clean.hosts[1]]
    assert lines[-1]["exit_code"] == 1
    # large-message efficiency of the shaped host against the link the test knows (1 Gbit/s)
    eff = [m for m in rows if m["metric"] == "efficiency" and m["params"]["host"] == clean.hosts[1]]
    assert len(eff) == 1 and eff[0]["params"]["link_rate"] == 0.125
    assert 0 < eff[0]["value"] < 1.2   # a tbf link cannot be beaten by much: shaping took effect


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


def test_cli_option_stores_telemetry(db, capsys):

    with pytest.raises(SystemExit) as e:
        main(["coll", "all_reduce", "-b", "1K", "-e", "1K", "-n", "2", "-w", "1", "--np", "2", "--device", "cpu",
              "--telemetry-interval", "0.05", "--db", db, "--json"])
    assert e.value.code == 0
    with Store.open(db) as store:
        (run,) = store.list_runs()
        assert run.meta["telemetry"]["interval_s"] == 0.05
        assert len(store.telemetry(run.id)) == run.meta["telemetry"]["samples"] > 0
    with pytest.raises(SystemExit) as e:
        main(["coll", "all_reduce", "--telemetry-interval", "-1", "--db", db])
    assert e.value.code == 2 and "--telemetry-interval" in capsys.readouterr().err


def test_opening_on_a_full_disk_says_so(tiny_fs):
    db = tiny_fs / "results.db"
    Store.open(str(db)).close()
    _fill(tiny_fs, 0)
    p = _fault_disk_cb("coll", "all_reduce", "-b", "8", "-e", "64", "--np", "2", "--device", "cpu", "--db", str(db))
    assert p.returncode == 2 and p.stdout == ""  # refused before any rank ran
    assert p.stderr.startswith(f"clusterbench: error: cannot open results database {db}: no space left on the "
                               f"file system holding it: 0 bytes free in {tiny_fs}"), p.stderr
    assert p.stderr.count("\n") == 1
    (tiny_fs / "filler").unlink()
    assert _healthy(db) == []


def _wal_left_behind(db: Path) -> None:
    """A process killed with the database open leaves its -wal and -shm files behind (SQLite
    removes them only when the last connection closes)."""
    code = ("import os, signal, sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute('SELECT count(*) FROM runs').fetchone(); os.kill(os.getpid(), signal.SIGKILL)")
    subprocess.run([sys.executable, "-c", code, str(db)], timeout=60)
    assert Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()


def test_a_full_disk_with_a_wal_left_behind_is_refused_before_any_rank(tiny_fs):
    # Opening succeeds there (the WAL files exist: nothing to create), so the full disk was found
    # only when the run was stored, after every row was measured: the probe write at open finds it
    db = tiny_fs / "results.db"
    Store.open(str(db)).close()
    _wal_left_behind(db)
    _fill(tiny_fs, 0)
    p = _fault_disk_cb("coll", "all_reduce", "-b", "8", "-e", "64", "--np", "2", "--device", "cpu", "--db", str(db))
    assert p.returncode == 2 and p.stdout == "", p.stderr   # no row measured, none printed
    assert p.stderr.startswith(f"clusterbench: error: cannot write to results database {db}: no space left on the "
                               f"file system holding it: 0 bytes free in {tiny_fs}"), p.stderr
    assert p.stderr.count("\n") == 1
    (tiny_fs / "filler").unlink()
    assert _healthy(db) == []


def _immutable(path: Path) -> None:
    """``chattr +i path``, or the test skipped with the reason (not root, a file system without
    the attribute: tmpfs, overlay)."""
    if os.geteuid() != 0:
        pytest.skip("chattr +i needs root")
    r = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"chattr +i is not possible here: {r.stderr.strip()}")


def test_an_immutable_database_is_refused_before_any_rank(tmp_path):
    # chattr +i: the file opens (read-only, silently) and was found only when the run was stored
    db = tmp_path / "results.db"
    with Store.open(str(db)) as s:
        s.save_run(Run("stream", hosts=["h"]), [Measurement("stream", "bandwidth", 1.0, "GB/s", {})])
    _immutable(db)
    try:
        p = _fault_disk_cb("coll", "all_reduce", "-b", "8", "-e", "64", "--np", "2", "--device", "cpu",
                           "--db", str(db))
        listed = _fault_disk_cb("results", "list", "--db", str(db))
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=True)
    assert p.returncode == 2 and p.stdout == "", p.stderr
    assert p.stderr.startswith(f"clusterbench: error: cannot write to results database {db}: the file cannot "
                               "be written (attempt to write a readonly database): it is read-only or immutable"), p.stderr
    assert p.stderr.count("\n") == 1
    assert listed.returncode == 0 and "stream" in listed.stdout, listed.stderr   # reading still works
    assert [r[:2] for r in _healthy(db)] == [(1, "complete")]


def test_a_run_stored_onto_a_full_disk(tiny_fs):
    """A measuring command whose run no longer fits: one line saying so and where, nothing half
    stored, and the database as it was."""
    db = tiny_fs / "results.db"
    Store.open(str(db)).close()
    _fill(tiny_fs, 48 * 1024)  # room to open it (the WAL index takes 32 KiB), not to store the run
    p = _fault_disk_cb("coll", "all_reduce", "-b", "8", "-e", "16M", "-f", "2", "--np", "2", "--device", "cpu",
            "--telemetry-interval", "0.01", "--db", str(db))
    assert p.returncode == 2, p.stderr
    errors = [e for e in p.stderr.splitlines() if e.startswith("clusterbench: error:")]
    assert len(errors) == 1, p.stderr
    assert errors[0].startswith(f"clusterbench: error: cannot write to results database {db}: no space left"), p.stderr
    assert "Traceback" not in p.stderr
    assert any(line.split()[:1] == ["16777216"] for line in p.stdout.splitlines())  # its rows were shown
    assert _healthy(db) == []
    (tiny_fs / "filler").unlink()  # with room again, the same database takes the next run
    ok = _fault_disk_cb("coll", "all_reduce", "-b", "8", "-e", "64", "--np", "2", "--device", "cpu", "--db", str(db))
    assert ok.returncode == 0, ok.stderr
    assert [(s, n > 0) for _, s, n in _healthy(db)] == [("complete", True)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_keeps_the_rows_it_printed(tmp_path, sig):
    # SIGHUP: the terminal closed or the ssh session dropped (sent to the whole group, as the
    # terminal does; the ranks leave it to the parent)
    db = str(tmp_path / "term.db")
    proc = _start(db, preexec_fn=_default_sighup)
    printed = _rows_until(proc, 3)
    family = process_family(proc)
    if sig == signal.SIGHUP:
        os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)
    rest, err = _finish(proc)
    printed += rest.splitlines()
    name = signal.Signals(sig).name
    assert proc.returncode == 128 + sig, err
    errors = [e for e in err.splitlines() if e.startswith("clusterbench: error:")]
    assert errors == [f"clusterbench: error: interrupted by {name}"], err
    assert "Traceback" not in err
    (run,), ms = _stored(db)
    assert run.status == INTERRUPTED and run.errors == [f"interrupted by {name}"]
    _assert_printed_is_stored(printed, run, ms[run.id])
    assert f"# run {run.id} (interrupted) stored in" in err
    assert_all_gone(family)


@pytest.mark.parametrize("gap", [0.0, 0.05, 0.3, 1.0])
def test_ctrl_c_twice_keeps_the_run(tmp_path, gap):
    """Ctrl-C goes to the whole foreground process group; the impatient second one used to
    abandon the store in the middle (3 of 5 runs lost)."""
    db = str(tmp_path / "int.db")
    proc = _start(db)
    printed = _rows_until(proc, 2)
    family = process_family(proc)
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(gap)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    rest, err = _finish(proc)
    printed += rest.splitlines()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert "clusterbench: error: interrupted by SIGINT (Ctrl-C)" in err.splitlines()
    (run,), ms = _stored(db)
    assert run.status == INTERRUPTED
    _assert_printed_is_stored(printed, run, ms[run.id])
    assert_all_gone(family)


def test_closed_stdout_ends_the_printing_not_the_run(tmp_path):
    """``clusterbench coll ... | head -1``: the reader goes away after the first line."""
    db = str(tmp_path / "pipe.db")
    proc = _start(db, "-e", "1M")
    assert proc.stdout is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # as head -1 does once it has its line
    family = process_family(proc)
    _, err = _finish(proc)
    assert first.startswith("# Collective test")
    assert proc.returncode == OUTPUT_FAILED, err
    errors = [e for e in err.splitlines() if e.startswith("clusterbench: error:")]
    assert len(errors) == 1 and "standard output" in errors[0] and "broken pipe" in errors[0], err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    (run,), ms = _stored(db)
    assert run.status == COMPLETE and max(m.params["bytes"] for m in ms[run.id] if "bytes" in m.params) == 1 << 20
    assert_all_gone(family)


@pytest.mark.parametrize("as_json", [False, True])
def test_full_stdout_names_it_and_stores_the_run(tmp_path, as_json):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    db = str(tmp_path / "full.db")
    with open("/dev/full", "w") as full:
        proc = _start(db, "-e", "64K", *(["--json"] if as_json else []), stdout=full)
        _, err = _finish(proc)
    assert proc.returncode == OUTPUT_FAILED, err
    errors = [e for e in err.splitlines() if e.startswith("clusterbench: error:")]
    assert errors == ["clusterbench: error: cannot write to standard output (/dev/full): No space left on "
                      "device; the run is stored"], err
    (run,), _ = _stored(db)
    assert run.status == COMPLETE


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_reaches_a_rank_that_waits_for_a_peer_that_never_comes(tmp_path, sig):
    """Rank 0 of 2 under a launcher, and rank 1 never starts: the main thread waits for its
    peers (in Python since that wait counts who joined; before, inside PyTorch's C++ rendezvous,
    where Python runs no signal handler). It stops on the signal, with the signal's exit code
    and one error line, not at --timeout (which ends it with exit 1)."""
    db = str(tmp_path / "wait.db")
    port = free_port()
    env = {**os.environ, "WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    proc = subprocess.Popen([sys.executable, "-m", "clusterbench", "coll", "all_reduce", "-e", "1K", "-n", "1",
                             "--timeout", "600", "--telemetry-interval", "0", "--db", db],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        # rank 0 hosts the group's store at MASTER_PORT and counts there who joined: once it has
        # counted itself, it waits for rank 1
        wait_until(lambda: listens_on(proc, port), 120, f"rank 0 listening at port {port}")
        store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=60))
        wait_until(lambda: store.add("clusterbench/1/joined", 0) >= 1, 60, "rank 0 joined its group")
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=300)   # a bound only: --timeout would take 600 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + sig, err
    lines = err.strip().splitlines()
    assert "Traceback" not in err
    assert [ln for ln in lines if ln.startswith("clusterbench: error:")] == \
        [ln for ln in lines if ln.startswith("clusterbench: error: rank 0")] != [], err
    assert lines[-1].startswith(("clusterbench: error: rank 0", "# run ")), err
    (run,), _ms = _stored(db)
    assert run.status == INTERRUPTED


def test_serve_metrics_reads_the_database_at_each_scrape_and_stops_on_sigterm(serve, db):
    port, proc = serve
    text = _get(f"http://127.0.0.1:{port}/metrics")
    fams = _families(text)
    assert _value(fams[openmetrics.EXPORT_OK], ) == 1.0
    assert not [s for s in fams[BUSBW] if s.labels["host"] == "gpu09"]
    with Store.open(db) as s:   # a run stored now is on a scrape once the reader has checked (--refresh)
        s.save_run(Run("coll", hosts=["gpu09"], started_at=night(2)),
                   [Measurement("all_reduce", "busbw", 123.0, "GB/s", {"bytes": 8589934592, "placement": "in"})])

    def gpu09() -> list:
        return [s for s in _families(_get(f"http://127.0.0.1:{port}/metrics"))[BUSBW] if s.labels["host"] == "gpu09"]

    wait_until(gpu09, 30, "the run stored after the server started on a scrape")
    assert [s.value for s in gpu09()] == [pytest.approx(123e9)]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0


@pytest.mark.slow
def test_round_trip_of_a_real_run_through_a_pipe(tmp_path):
    a, b = tmp_path / "A.db", tmp_path / "B.db"
    bench = subprocess.run(
        [sys.executable, "-m", "clusterbench", "coll", "all_reduce", "-b", "8", "-e", "64", "--np", "2",
         "--device", "cpu", "--json", "--db", str(a), "--tag", "env=local", "--repeat", "2",
         "--telemetry-interval", "0"],
        capture_output=True, text=True, timeout=300, env=_cb_env())
    assert bench.returncode == 0, bench.stderr
    # as pdsh would deliver it: a host prefix on every line, and the other output around it
    log = "".join(f"node1: {line}\n" for line in ["starting", *bench.stdout.splitlines(), "done"])
    imp = subprocess.run([sys.executable, "-m", "clusterbench", "import", "-", "--db", str(b)],
                         input=log, capture_output=True, text=True, timeout=120, env=_cb_env())
    assert imp.returncode == 0, imp.stderr
    assert len(imp.stdout.splitlines()) == 2
    originals, copies = _records(a), _records(b)
    assert len(originals) == len(copies) == 2
    for (orig, oms), (copy, cms) in zip(originals, copies):
        assert cms == oms and len(cms) > 0
        for field in ("benchmark", "command", "started_at", "ended_at", "status", "hosts", "ranks",
                      "devices", "versions", "env", "tags", "errors", "meta"):
            assert getattr(copy, field) == getattr(orig, field), field
        assert copy.source == f"{orig.source}, imported from stdin (run {orig.id})"
    assert originals[0][0].tags["repeat"] == "1" and originals[0][0].meta["rank_hosts"]


@pytest.mark.parametrize("case", CASE_IDS)
def test_every_line_is_valid(store_json_lines, case):
    (Path(store_json_lines["tmp"]) / "notes.txt").write_text("a meeting note\n")
    name, argv, want_code, kinds = next(c for c in _cases(store_json_lines) if c[0] == case)
    code, out, err = run_cli(*argv, "--json")
    assert code == want_code, f"{name}: exit {code}\n{err}"
    objs = check_lines(out)
    assert kinds <= {o["kind"] for o in objs}, f"{name}: kinds {sorted({o['kind'] for o in objs})}"
    summaries = [o for o in objs if o["kind"] == "summary"]
    if summaries and "exit_code" in summaries[-1]:
        assert summaries[-1]["exit_code"] == code  # the summary tells the truth about the exit code


def test_coll_rows_follow_the_definitions(coll_run):
    n, _, records = coll_run
    seen: set[tuple] = set()
    for key, v in rows_native_records(records).items():
        op, p = key[0], dict(key[1:])
        if "dtype" not in p:                           # avg_busbw, out_of_bounds: per run
            continue
        w = DTYPE_BYTES[p["dtype"]]
        assert p["ranks"] == n
        assert p["count"] * (n if op in PER_RANK else 1) * w == p["bytes"], key
        assert math.isclose(v["algbw"], p["bytes"] / (v["time_us"] * 1e-6) / 1e9, rel_tol=1e-12), key
        assert v["busbw"] == pytest.approx(v["algbw"] * FACTORS[op](n), rel=1e-15, abs=0), key
        if p["placement"] == "in" and op in UNCHECKED_IN:
            assert "wrong" not in v, key
        else:
            assert v["wrong"] == 0, key
        seen.add((op, p["dtype"], p["bytes"], p["placement"]))
    expected = set()
    for op in FACTORS:
        for dtype, w in DTYPE_BYTES.items():
            for size in SIZES:
                # per rank: whole 16-byte units, as nccl-tests trims (count / n) & -(16 / w)
                count = size // w // n & ~(16 // w - 1) if op in PER_RANK else size // w
                if count == 0:                         # skipped with a note (docs/collectives.md)
                    continue
                for placement in ("out", "in"):      # both, for every op (copied on torch)
                    expected.add((op, dtype, count * (n if op in PER_RANK else 1) * w, placement))
    assert seen == expected


def test_coll_notes_follow_their_ops_table_live_and_in_results_show(tmp_path):
    db = str(tmp_path / "r.db")
    cmd = [sys.executable, "-m", "clusterbench"]
    live = subprocess.run([*cmd, "coll", "all_reduce,broadcast", "--np", "2", "--device", "cpu", "-b", "8",
                           "-e", "64", "-n", "2", "-w", "1", "--telemetry-interval", "0", "--db", db],
                          capture_output=True, text=True, timeout=300)
    assert live.returncode == 0, live.stderr
    shown = subprocess.run([*cmd, "results", "show", "last", "--db", db], capture_output=True, text=True,
                           timeout=120)
    if shown.returncode != 0:  # selectors other than ids may not be there yet
        shown = subprocess.run([*cmd, "results", "show", "1", "--db", db], capture_output=True, text=True,
                               timeout=120)
    assert shown.returncode == 0, shown.stderr
    for text in (live.stdout, shown.stdout):
        lines = text.splitlines()
        ar = (_index(lines, "# Collective test: all_reduce"), _index(lines, "concluded: all_reduce"))
        bc = (_index(lines, "# Collective test: broadcast"), _index(lines, "concluded: broadcast"))
        ar_note = _index(lines, "only an in-place all_reduce")
        bc_note = _index(lines, "only an in-place broadcast")
        # after the op's footer, where nccl-tests' parsers no longer read rows
        assert ar[0] < ar[1] < ar_note < bc[0] < bc[1] < bc_note, text
        assert lines[ar_note - 1] == "# Collective test concluded: all_reduce"
        # the one line naming out-of-place is the column header (SuperBench's parser takes the last)
        assert [i for i, line in enumerate(lines[ar[0]:bc[0]]) if "out-of-place" in line] == [
            _index(lines[ar[0]:], "out-of-place")]
    # live and stored tables alike, notes included: every note is known before the op's first row
    def tables(text: str) -> list[str]:
        lines = text.splitlines()
        return lines[_index(lines, "# Collective test: all_reduce"):_index(lines, "only an in-place broadcast") + 1]
    assert tables(live.stdout) == tables(shown.stdout)


def test_collective_rows_follow_nccl_tests_definitions(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    db, n = str(tmp_path / "coll.db"), 3
    # 7, 35 and 175 bytes: odd sizes, not multiples of the rank count nor of a half's 2 bytes;
    # 175 B leaves the ops that split per rank whole 16-byte units to move (nccl-tests' trim)
    code, out, err = cli_bench_cpu(capsys, "coll", "all", "-b", "7", "-e", "175", "-f", "5", "-n", "1", "-w", "0",
                         "-d", "half,int8", "--np", str(n), "--json", "--db", db)
    assert code == 0, err
    live = measurements(out)
    rows: dict[tuple, dict[str, Any]] = {}
    for m in live:
        p = m["params"]
        if "placement" in p and "stat" not in p:
            key = (m["benchmark"], p["dtype"], p["bytes"], p["placement"])
            rows.setdefault(key, {"params": p})[m["metric"]] = m["value"]
    assert {k[0] for k in rows} == set(FACTORS)
    seen: dict[str, set[tuple[str, int, int]]] = {}
    for (op, dtype, _, placement), row in rows.items():
        p, w = row["params"], WIDTH[dtype]
        assert p["ranks"] == n
        seen.setdefault(op, set()).add((dtype, p["count"], p["bytes"]))
        assert math.isclose(row["algbw"], p["bytes"] / (row["time_us"] * 1e-6) / 1e9, rel_tol=1e-12)
        assert math.isclose(row["busbw"], row["algbw"] * FACTORS[op](n), rel_tol=1e-12)
        # the check is on by default and found nothing wrong; nccl-tests leaves in-place alltoall
        # and sendrecv unchecked
        unchecked = placement == "in" and op in ("alltoall", "sendrecv")
        assert ("wrong" not in row) if unchecked else row["wrong"] == 0
        assert p["bytes"] == p["count"] * w * (n if op in PER_RANK else 1)
    for op in FACTORS:
        want = set()
        for dtype, w in WIDTH.items():
            if dtype == "float":
                continue
            for size in (7, 35, 175):
                count = size // w // n & ~(16 // w - 1) if op in PER_RANK else size // w
                if count:   # less than one element per rank: skipped, with a note
                    want.add((dtype, count, count * w * (n if op in PER_RANK else 1)))
        assert seen[op] == want, op
    # what --json printed is what was stored
    assert sorted(map(_key, live)) == sorted(map(_key, stored_bench_cpu(capsys, db, 1)))
    assert {_key(m): m["value"] for m in live} == {_key(m): m["value"] for m in stored_bench_cpu(capsys, db, 1)}


def test_all_gather_on_three_ranks_prints_the_trimmed_size(db):
    config = build_config("all_gather,alltoall", minbytes="32", maxbytes="512", stepfactor=4, iters=1,
                          warmup_iters=0)
    result, text = _run(config, 3, db)
    assert result.exit_code == 0, text
    rows = {(m.benchmark, m.params["placement"], m.params["bytes"], m.params["count"])
            for m in result.measurements if m.metric == "busbw"}
    # 32 B is 8 floats: 2 per rank, below one 16 B unit -> skipped; 128 B -> 8 per rank (96 B);
    # 512 B -> 40 per rank (480 B)
    for op in ("all_gather", "alltoall"):
        assert {(b, c) for o, _, b, c in rows if o == op} == {(96, 8), (480, 40)}
    assert any("size(s) 32 B hold less than 16 B per rank for 3 ranks" in n["text"]
               for n in result.run.meta["notes"])
    assert all(m.value == 0 for m in result.measurements if m.metric == "wrong")


def test_one_wrong_value_on_one_rank_is_counted_in_every_op(db):
    """One element off on rank 1, after each op: #wrong 1 in every checked result, the run fails."""
    config = build_config("all", minbytes="64", maxbytes="256", stepfactor=4, iters=1, warmup_iters=0,
                          root=1)
    result, text = _run(config, 2, db, target=one_wrong_value_on_rank1)
    assert result.exit_code == 1 and result.run.status == FAILED
    wrong = [m for m in result.measurements if m.metric == "wrong"]
    checked = {(op, p) for op in OPS for p in ("out", "in") if p == "out" or SPECS[op].in_place_checked}
    assert {(m.benchmark, m.params["placement"]) for m in wrong} == checked
    assert all(m.value == 1 for m in wrong), [(m.benchmark, m.params, m.value) for m in wrong]
    for op in OPS:
        oob = [m.value for m in result.measurements if m.benchmark == op and m.metric == "out_of_bounds"]
        assert oob == [float(sum(1 for m in wrong if m.benchmark == op))]
        assert any(op in e and "wrong elements" in e for e in result.run.errors)
    assert text.count("FAILED") == len(OPS)


def test_out_of_bounds_counts_each_rank_that_saw_wrong_values_as_nccl_tests(db):
    """nccl-tests' CheckData adds one to the error count per rank whose own result is wrong
    (summed over ranks), so one wrong row on 2 ranks is 2 out-of-bounds values, not 1."""
    config = build_config("all_gather,all_reduce", minbytes="64", maxbytes="256", stepfactor=4, iters=1,
                          warmup_iters=0)
    result, text = _run(config, 2, db, target=one_wrong_value_on_every_rank)
    assert result.exit_code == 1 and result.run.status == FAILED
    oob = {m.benchmark: m.value for m in result.measurements if m.metric == "out_of_bounds"}
    # each: 2 sizes x 2 placements x 2 ranks
    assert oob == {"all_gather": 8.0, "all_reduce": 8.0}
    assert all(m.value == 2 for m in result.measurements if m.metric == "wrong")
    assert text.count("# Out of bounds values : 8 FAILED") == 2


def test_run_cycles_repeat_the_sizes_of_each_type_before_the_next(db):
    config = build_config("reduce_scatter", minbytes="64", maxbytes="128", iters=1, warmup_iters=0,
                          datatype="float,int32", cycles=2)
    result, text = _run(config, 2, db)
    assert result.exit_code == 0 and result.run.status == COMPLETE, text
    order = [(m.params["dtype"], m.params["cycle"], m.params["bytes"])
             for m in result.measurements if m.metric == "time_us" and m.params["placement"] == "out"]
    assert order == [("float", 0, 64), ("float", 0, 128), ("float", 1, 64), ("float", 1, 128),
                     ("int32", 0, 64), ("int32", 0, 128), ("int32", 1, 64), ("int32", 1, 128)]


def test_table_lines_and_footer_are_the_records(db):
    config = build_config("reduce_scatter,broadcast", minbytes="96", maxbytes="384", stepfactor=2, iters=1,
                          warmup_iters=0, root=2, cycles=2)
    result, text = _run(config, 3, db)
    assert result.exit_code == 0, text
    for op in ("reduce_scatter", "broadcast"):
        ms = [m for m in result.measurements if m.benchmark == op]
        block = text[text.index(f"# Collective test: {op}"):text.index(f"# Collective test concluded: {op}")]
        lines = [line for line in block.splitlines() if line and not line.startswith("#")]
        rows = [m for m in ms if m.metric == "time_us" and m.params["placement"] == "in"]
        assert len(lines) == len(rows) == 3 * 2           # 3 sizes x 2 cycles, each one line
        for line, m in zip(lines, rows):
            cols = line.split()
            p = m.params
            assert cols[:5] == [str(p["bytes"]), str(p["count"]), "float", p["redop"], str(p["root"])]
            assert len(line) == len(lines[0])             # fixed-width columns
            bus = {q: x.value for x in ms for q in ("out", "in")
                   if x.metric == "busbw" and x.params == {**p, "placement": q}}
            assert cols[11] == f"{bus['in']:.2f}"
            assert cols[7] == f"{bus['out']:.2f}" and len(cols) == 13
        busbw = [m.value for m in ms if m.metric == "busbw"]
        assert f"# Avg bus bandwidth    : {sum(busbw) / len(busbw):g} " in block.splitlines()
        assert "# Out of bounds values : 0 OK" in block
    # the root is printed for broadcast, -1 for reduce_scatter; reduce_scatter on 3 ranks trims to
    # 16 B per rank: 96 B -> 8 floats per rank (96 B), 192 B -> 16, 384 B -> 32
    counts = sorted({(m.params["bytes"], m.params["count"]) for m in result.measurements
                     if m.benchmark == "reduce_scatter" and m.metric == "busbw"})
    assert counts == [(96, 8), (192, 16), (384, 32)]


def test_ctrl_c_while_the_fork_server_imports_torch_is_one_line(started, tmp_path):
    """Ctrl-C goes to the whole process group: the fork server, still importing PyTorch before it
    ignores SIGINT itself, printed a KeyboardInterrupt traceback under the command's line."""
    argv = [sys.executable, "-m", "clusterbench", "coll", "all_reduce", "-e", "1K", "-n", "1", "--np", "2",
            "--device", "cpu", "--telemetry-interval", "0", "--timeout", "3", "--db", str(tmp_path / "c.db")]
    proc = started(argv)
    found: list[psutil.Process] = []

    def fork_server_started() -> bool:
        found[:] = [c for c in _family(proc.pid) if "forkserver" in _cmdline(c)]
        return bool(found) or proc.poll() is not None

    wait_until(fork_server_started, 60, "the fork server started", every=0.02)
    assert found, "the command ended before its fork server started"
    server = found[0]
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert [e for e in err.splitlines() if e.startswith("clusterbench: error:")] == [
        "clusterbench: error: interrupted by SIGINT (Ctrl-C)"], err
    assert_all_gone([server.pid])


@pytest.mark.parametrize("leave_kib", [8, 64], ids=["open-fails", "migration-fails"])
def test_a_benchmark_refused_on_a_full_disk_leaves_no_database(tiny_fs_leftovers, leave_kib):
    st = os.statvfs(tiny_fs_leftovers)
    with open(tiny_fs_leftovers / "filler", "wb") as f:
        f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - leave_kib * 1024))
    db = tiny_fs_leftovers / "x.db"
    p = subprocess.run([sys.executable, "-m", "clusterbench", "coll", "all_reduce", "-b", "8", "-e", "8", "--np", "2",
                        "--device", "cpu", "--db", str(db)], capture_output=True, text=True, timeout=240,
                       stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert p.returncode == 2 and "no space left" in p.stderr, p.stderr
    assert sorted(os.listdir(tiny_fs_leftovers)) == ["filler"]


@pytest.mark.parametrize("name", list(BIG))
def test_a_reader_that_leaves_after_one_line_gets_a_quiet_exit(big_db, name):
    """``| head -1``: no message, no "Exception ignored ... BrokenPipeError", exit 74 (see
    clusterbench.cli: the pipe's reader left; 0 only where everything fit in the pipe before)."""
    proc = subprocess.Popen([sys.executable, "-m", "clusterbench", *BIG[name], "--db", big_db], env=_stdio_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == OUTPUT_FAILED and err == b"", err


@pytest.mark.slow
def test_collective_sweep_shows_its_size_on_a_terminal_only(tmp_path):
    db = ["--db", str(tmp_path / "r.db")]
    rc, out_tty, err_tty = _progress_run(COLL_progress + db, tty_stderr=True)
    assert rc == 0, err_tty
    assert b"all_reduce float: " in err_tty and b"bytes done" in err_tty  # the size reached
    rc, out_pipe, err_pipe = _progress_run(COLL_progress + db, tty_stderr=False)
    assert rc == 0
    assert not ESCAPE.search(out_pipe) and not ESCAPE.search(err_pipe)
    assert err_pipe.decode().splitlines()[-1].startswith("# run 2 (complete) stored in ")
    assert len(err_pipe.decode().splitlines()) == 1
    # stdout is the same table whether or not stderr is a terminal
    assert _skeleton(out_tty) == _skeleton(out_pipe) and not ESCAPE.search(out_tty)


@pytest.mark.parametrize("argv", [
    ("coll", "all_reduce", "-b", "8", "-e", "8", "--np", "2", "--device", "cpu"),
    ("coll", "all_reduce", "-b", "8", "-e", "8", "--np", "2", "--device", "cpu", "--repeat", "3"),
    ("stream", "-s", "1K", "-n", "2", "--device", "cpu"),
    ("sweep", "--hosts", "n1,n2", "--agent", "false", "--", "net"),
    ("qualify", "--profile", "cpu-smoke"),
], ids=lambda a: " ".join(a[:2]) + (" --repeat" if "--repeat" in a else ""))
def test_benchmark_commands_refuse_before_running(tmp_path, argv):
    db = str(tmp_path / "newer.db")
    _make_newer(db)
    p = _store_versions_cb(argv[0], "--db", db, *argv[1:])
    assert p.returncode == 2, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("clusterbench: error: results database"), p.stderr
    assert FUTURE in lines[0] and MIGRATIONS[-1].name in lines[0]
    assert p.stdout == ""  # no table header, no step, no node: nothing ran
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.gpu
@pytest.mark.skipif(_gpus() == 0, reason="needs a CUDA or ROCm GPU")
@pytest.mark.parametrize("graph", [0, 2], ids=["stream", "graph"])
def test_engine_nccl_measures_every_op_in_both_placements_on_gpus(db, graph):
    """--engine nccl on every GPU of the node: the library torch loaded, called directly; every
    op, both placements, checked (uint32 and avg too, which the library has)."""
    config = build_config("all", minbytes="8", maxbytes="16M", stepfactor=64, iters=5, warmup_iters=1,
                          datatype="float,bfloat16,uint32", redop="sum,avg", engine="nccl", graph=graph)
    result, text = _run_gpu(config, db)
    assert result.exit_code == 0, text
    assert result.run.meta["coll_engine"]["engine"] == "nccl"
    assert "# Engine: nccl (NCCL " in text or "# Engine: nccl (RCCL " in text
    places = {(m.benchmark, m.params["placement"]) for m in result.measurements if m.metric == "busbw"
              and "placement" in m.params}
    assert places == {(op, p) for op in OPS for p in ("out", "in")}
    wrong = [m for m in result.measurements if m.metric == "wrong"]
    assert wrong and all(m.value == 0 for m in wrong)
    assert {m.params["dtype"] for m in result.measurements if m.metric == "busbw"} >= {"float", "uint32"}
    assert "N/A     N/A" not in text   # every time, algbw and busbw a number


@pytest.mark.gpu
@pytest.mark.skipif(_gpus() == 0, reason="needs a CUDA or ROCm GPU")
def test_both_engines_agree_on_the_rows_they_print(db):
    """The same sweep through torch.distributed and through the library: the same rows (sizes,
    counts, placements), every one checked right."""
    rows = {}
    for engine in ("torch", "nccl"):
        config = build_config("all_reduce,all_gather,sendrecv", minbytes="1K", maxbytes="1M", stepfactor=32,
                              iters=5, warmup_iters=1, engine=engine)
        result, text = _run_gpu(config, db)
        assert result.exit_code == 0, text
        rows[engine] = {(m.benchmark, m.params["bytes"], m.params["count"], m.params["placement"])
                        for m in result.measurements if m.metric == "busbw" and "placement" in m.params}
    assert rows["torch"] == rows["nccl"]


def _run_gpu(config, db):
    out = io.StringIO()
    job = Job(rank.main, config, RankOptions(device="cuda", timeout=300), np=_gpus())
    result = run_job(job, "coll", ["test"], TablePrinter(out=out), db=db, announce=lambda _t: None)
    return result, out.getvalue()


@pytest.mark.parametrize("argv", [["coll", "all_reduce", "-b", "1K", "-e", "1K", "--np", "2", "--device", "cpu"],
                                  ["import", str(TESTS / "data" / "nccl-tests" / "superbench-nccl_broadcast.log")]])
def test_a_db_in_a_directory_that_does_not_exist_is_refused_before_any_rank(tmp_path, argv):
    """``--db /nonexistent/dir/x.db``: a typo, never directories made for it."""
    missing = tmp_path / "nonexistent" / "dir"
    p = subprocess.run([sys.executable, "-m", "clusterbench", *argv, "--db", str(missing / "x.db")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr == (f"clusterbench: error: Invalid value for '--db': the directory of database {missing}/x.db "
                        f"does not exist ({missing}): create it first, or check the path (only the default "
                        "database's directory is created)\n")
    assert p.stdout == ""   # no rank started: not even the table's header
    assert not (tmp_path / "nonexistent").exists()
