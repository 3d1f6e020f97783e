"""System tests (hangs): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import os
import signal
import sys

import pytest
import rankfns
from process_helpers import _family, assert_all_gone
from rankfns import run_rows

from clusterbench.ranks import driver


def _ranks(pid: int) -> list[int]:
    """Ranks are the fork server's children (the command's grandchildren)."""
    return sorted(c.pid for c in _family(pid) if c.ppid() != pid)


@pytest.mark.parametrize("timeout", [1e10, 1e300])
def test_a_huge_timeout_runs_instead_of_overflowing(timeout):
    # 1e10 s: the store's first connect "timed out after 10000000000000ms" at once, with a page
    # of C++ frames; 1e300 s: OverflowError in the rank
    outcome, rows = run_rows(rankfns.sum_ranks, {"steps": 1}, timeout=timeout)
    assert outcome.status == "complete", outcome.errors
    assert len(rows) == 1


def test_a_stopped_rank_takes_sigterm_not_the_kill_seconds_later():
    """A rank stopped with SIGSTOP holds SIGTERM pending: the stop used to wait out its 3 s grace
    and SIGKILL it, on top of --timeout."""
    mp = driver._context()
    ready = mp.Event()
    p = mp.Process(target=rankfns.sleep_handling_sigterm, args=(ready,), daemon=True)
    p.start()
    try:
        assert ready.wait(60)
        os.kill(p.pid, signal.SIGSTOP)
        driver._stop([p])
        assert p.exitcode == 143   # its own handler ran: not SIGKILL (-9) after the grace
    finally:
        if p.is_alive():
            p.kill()
            p.join(5)


@pytest.mark.parametrize("how", ["sigstop", "gil"])
def test_a_stuck_rank_is_named_and_the_run_kept(how, started, tmp_path):
    """A rank stopped with SIGSTOP mid-run, or one looping inside one C call: named as the rank
    that made no progress, the rows before kept (``incomplete``), exit 1, nothing left."""
    db = str(tmp_path / "r.db")
    code = ("import sys, rankfns\n"
            "from clusterbench.ranks.context import RankOptions\n"
            "from clusterbench.ranks.driver import Job\n"
            "from clusterbench.runner import run_job\n"
            "class P:\n"
            "    def on_event(self, e):\n"
            "        print('EVENT', type(e).__name__, flush=True)\n"
            "    def finish(self, run, ms):\n"
            "        pass\n"
            f"fn = rankfns.steady_rows if {how!r} == 'sigstop' else rankfns.spin_holding_the_gil\n"
            "res = run_job(Job(fn, {'rank': 1}, RankOptions(device='cpu', timeout=2, telemetry_interval=0), np=2),"
            f" 'selftest', ['t'], P(), db={db!r})\n"
            "sys.exit(res.exit_code)\n")
    proc = started([sys.executable, "-c", code])
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("EVENT Rows"):
            break
    family = [proc.pid] + [c.pid for c in _family(proc.pid)]
    if how == "sigstop":
        os.kill(_ranks(proc.pid)[-1], signal.SIGSTOP)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    errors = [e for e in err.splitlines() if e.startswith("clusterbench: error:")]
    assert len(errors) == 1 and "rank 1 on " in errors[0] and "--timeout" in errors[0], err
    assert "Traceback" not in err
    from clusterbench.store import Store

    with Store.open(db) as store:
        (run,) = store.list_runs()
        assert run.status == "incomplete" and store.measurements(int(run.id or 0))
    assert_all_gone(family)


def test_ranks_that_called_different_collectives_end_at_the_timeout():
    outcome, rows = run_rows(rankfns.mismatched_collectives, {}, timeout=2.0)
    assert outcome.status == "incomplete" and outcome.exit_code == 1
    assert len(outcome.errors) == 1 and outcome.errors[0].startswith("rank ")
    assert [m.params["step"] for r in rows for m in r.measurements] == [0]


def test_a_rank_that_never_reaches_the_first_barrier_is_named():
    outcome, rows = run_rows(rankfns.never_reach_barrier, {"rank": 1}, timeout=2.0)
    assert outcome.status == "incomplete" and outcome.exit_code == 1   # the runner stores it failed
    assert outcome.errors == [outcome.errors[0]] and outcome.errors[0].startswith("rank 1 on ")
    assert "no progress for 2 s" in outcome.errors[0]
    assert rows == []


@pytest.mark.parametrize("how", ["sigstop", "gil"])
def test_a_command_killed_with_sigkill_leaves_no_rank(how, started):
    """SIGKILL leaves the command no chance to stop its ranks. A rank's companion thread ends it
    when the command is gone, but not a rank that is stopped or inside a C call holding the GIL:
    those ran on for ever, and kept the fork server and the resource tracker alive too."""
    fn = "steady_rows" if how == "sigstop" else "spin_holding_the_gil"
    code = ("import rankfns\n"
            "from clusterbench.ranks.context import RankOptions\n"
            "from clusterbench.ranks.driver import Job, execute\n"
            "from clusterbench.records import Rows\n"
            "def sink(e):\n"
            "    if isinstance(e, Rows):\n"
            "        print('ROWS', flush=True)\n"
            f"execute(Job(rankfns.{fn}, {{'rank': 1}}, RankOptions(device='cpu', timeout=600, "
            "telemetry_interval=0), np=2), sink)\n")
    proc = started([sys.executable, "-c", code])
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("ROWS")
    family = [c.pid for c in _family(proc.pid)]
    assert len(family) >= 3   # the fork server and two ranks (and the resource tracker)
    if how == "sigstop":
        os.kill(_ranks(proc.pid)[-1], signal.SIGSTOP)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert_all_gone(family)


def test_a_signal_inside_a_ranks_start_leaves_no_rank(started):
    """SIGTERM that lands just as a rank has been forked (its start not yet returned): the rank
    was not among those the driver stops, and ran on after the command had stored its run."""
    code = ("import os, signal, psutil, rankfns\n"
            "from clusterbench.ranks import driver\n"
            "from clusterbench.ranks.context import RankOptions\n"
            "from clusterbench.ranks.driver import Job, execute\n"
            "from clusterbench.ranks.signals import stop_on_signals\n"
            "mp = driver._context()\n"
            "real = mp.Process.start\n"
            "started = []\n"
            "def start(self):\n"
            "    real(self)\n"
            "    started.append(self.pid)\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "mp.Process.start = start\n"
            "with stop_on_signals():\n"
            "    o = execute(Job(rankfns.sum_ranks, {}, RankOptions(device='cpu', timeout=600, "
            "telemetry_interval=0), np=2), lambda e: None)\n"
            "alive = [p for p in started if psutil.pid_exists(p) and psutil.Process(p).status() != 'zombie']\n"
            "print(o.status, o.exit_code, o.errors, 'ALIVE', alive, flush=True)\n")
    proc = started([sys.executable, "-c", code])
    out, err = proc.communicate(timeout=60)
    assert "interrupted 143 ['interrupted by SIGTERM'] ALIVE []" in out, (out, err)
