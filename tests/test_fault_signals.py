"""Issue 18: a measuring command stopped by a real signal, or whose standard output is really
closed or full, keeps what it measured.

Each test starts a real ``python -m clusterbench coll`` with local ranks, waits for its first
finished rows on standard output, then sends a real SIGTERM to the command, or a real SIGINT to
its whole process group (what Ctrl-C in a terminal does, once and then again), or closes the
pipe it prints to, or points it at /dev/full. The rows it printed must be the rows stored, in a
run marked ``interrupted`` (or ``complete`` when only the output failed), with exit code 143,
130 or 74, one error line, and no rank left running.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
import torch.distributed as dist
from json_schema import check_lines
from process_helpers import assert_all_gone, free_port, listens_on, process_family, wait_until

from clusterbench.output import OUTPUT_FAILED
from clusterbench.records import COMPLETE, INTERRUPTED
from clusterbench.store import Store

# long enough that the signal lands mid-sweep, short enough for two cores
LONG = ["coll", "all_reduce", "-b", "8", "-e", "256M", "-f", "2", "-n", "20", "-w", "1", "--np", "2",
        "--device", "cpu", "--telemetry-interval", "0", "--timeout", "120"]


def _default_sighup() -> None:
    # under nohup (or a CI runner that ignores SIGHUP) the command would inherit SIG_IGN
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _start(db: str, *extra: str, stdout=subprocess.PIPE, preexec_fn=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "clusterbench", *LONG, *extra, "--db", db],
                            stdout=stdout, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=preexec_fn)


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


def _stored(db: str):
    with Store.open(db) as store:
        runs = store.list_runs(oldest_first=True)
        return runs, {r.id: store.measurements(int(r.id or 0)) for r in runs}


def _finish(proc: subprocess.Popen) -> tuple[str, str]:
    killer = threading.Timer(150, proc.kill)  # never let a test hang
    killer.start()
    try:
        return proc.communicate(timeout=160)
    finally:
        killer.cancel()


def _assert_printed_is_stored(printed: list[str], run, ms) -> None:
    stored = sorted({int(m.params["bytes"]) for m in ms if m.metric == "busbw"})
    assert printed and set(_sizes(printed)) <= set(stored), (printed, stored)


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


def test_sigterm_in_a_repetition_keeps_the_finished_ones(tmp_path):
    db = str(tmp_path / "rep.db")
    proc = _start(db, "--repeat", "3", "-e", "1M")
    assert proc.stdout is not None
    concluded = 0
    for line in proc.stdout:  # the first repetition's table, then a row of the second
        concluded += line.startswith("# Collective test concluded")
        if concluded == 1 and line.strip() and not line.startswith("#"):
            break
    family = process_family(proc)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = _finish(proc)
    assert proc.returncode == 143, err
    runs, _ = _stored(db)
    assert [r.status for r in runs] == [COMPLETE, INTERRUPTED]   # no third repetition started
    assert runs[0].tags["repeat_group"] == runs[1].tags["repeat_group"]
    assert_all_gone(family)
    shown = subprocess.run([sys.executable, "-m", "clusterbench", "results", "show", "1-2", "--json", "--db", db],
                           capture_output=True, text=True, timeout=60)
    objs = check_lines(shown.stdout)  # the interrupted run's JSON follows the published schema
    assert [o["status"] for o in objs if o["kind"] == "run"] == [COMPLETE, INTERRUPTED]


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


@pytest.mark.parametrize("argv", [["results", "show", "1-300"], ["results", "export", "1-300"]])
def test_other_commands_with_a_full_or_closed_stdout(tmp_path, argv):
    db = str(tmp_path / "few.db")
    from clusterbench.records import Measurement, Run

    with Store.open(db) as store:
        for i in range(300):  # more than a pipe's buffer of output
            store.save_run(Run(benchmark="coll", tags={"i": str(i)}),
                           [Measurement("all_reduce", "busbw", float(j), "GB/s", {"bytes": j}) for j in range(40)])
    cmd = [sys.executable, "-m", "clusterbench", *argv, "--db", db]
    with open("/dev/full", "w") as full:
        p = subprocess.run(cmd, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == OUTPUT_FAILED
    assert p.stderr == "clusterbench: error: cannot write to standard output (/dev/full): No space left on device\n"
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()
    _, err = _finish(proc)
    assert proc.returncode == OUTPUT_FAILED and err == "", err  # `| head`: no message, as other tools


def _import_under_way(tmp_path: Path, lines: int, nohup: bool = False) -> subprocess.Popen:
    """An import of 3,000 runs, far more than are read before the signal, once it has printed
    ``lines`` lines."""
    data = Path(__file__).parent / "data" / "nccl-tests" / "seed-tensorwave-mi355x-4node-all_reduce.txt"
    big = tmp_path / "big.log"
    big.write_text(data.read_text() * 3000)
    argv = [sys.executable, "-m", "clusterbench", "import", str(big), "--db", str(tmp_path / "i.db")]
    proc = subprocess.Popen(["nohup", *argv] if nohup else argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    for n, _line in enumerate(proc.stdout, 1):
        if n == lines:
            break
    return proc


def test_sigterm_ends_other_commands_with_one_line(tmp_path):
    """An import in progress: rolled back, one line, exit 143 (tests/test_fault_import.py checks
    what is stored)."""
    proc = _import_under_way(tmp_path, lines=100)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = _finish(proc)
    assert proc.returncode == 143
    assert err.splitlines()[-1] == "clusterbench: error: interrupted by SIGTERM", err
    assert re.search(r"Traceback", err) is None


@pytest.mark.parametrize("nohup", [False, True])
def test_a_hangup_outside_a_run_is_one_line_or_ignored_under_nohup(tmp_path, nohup):
    """A closed terminal while an import runs (no run of ranks with its own handlers): it ended
    silently, killed by SIGHUP. Now one line and exit 129, as SIGTERM gives 143; a command started
    under nohup (SIGHUP ignored) keeps ignoring it and completes."""
    proc = _import_under_way(tmp_path, lines=10, nohup=nohup)
    os.kill(proc.pid, signal.SIGHUP)
    _, err = _finish(proc)
    if nohup:
        assert proc.returncode == 0, err
        return
    assert proc.returncode == 129, err
    assert err.splitlines()[-1] == "clusterbench: error: interrupted by SIGHUP", err
    assert "Traceback" not in err


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
