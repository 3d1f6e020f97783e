"""Long work is visible on a terminal and invisible otherwise: progress on stderr only when it is
a terminal (a pty here), nothing with --quiet, and piped output exactly as without progress."""

from __future__ import annotations

import os
import pty
import re
import select
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusterbench.launch import slurm

ESCAPE = re.compile(rb"\x1b\[|\r")


def _env() -> dict[str, str]:
    return {**os.environ, "TERM": "xterm", "COLUMNS": "120", "PYTHONUNBUFFERED": "1"}


def _run(args: list[str], tty_stderr: bool, timeout: float = 300) -> tuple[int, bytes, bytes]:
    """Run clusterbench with stdout piped and stderr on a pty (or piped); (rc, stdout, stderr)."""
    cmd = [sys.executable, "-m", "clusterbench", *args]
    if not tty_stderr:
        r = subprocess.run(cmd, capture_output=True, timeout=timeout, env=_env())
        return r.returncode, r.stdout, r.stderr
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, env=_env())
    os.close(slave)
    got = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the pty
                break
            if not chunk:
                break
            got += chunk
        elif p.poll() is not None:
            break
    os.close(master)
    out = p.stdout.read()
    return p.wait(30), out, got


def _skeleton(text: bytes) -> list[str]:
    """The output with numbers masked: what must not depend on a terminal (noise warnings depend
    on this run's timings, not on the terminal: left out)."""
    return [" ".join(re.sub(r"[0-9.e+-]+", "#", w) for w in line.split()) for line in text.decode().splitlines()
            if not line.startswith("# warning:")]


COLL = ["coll", "all_reduce", "--np", "2", "--device", "cpu", "-b", "8", "-e", "64K", "-f", "8", "-n", "2",
        "-w", "1", "--telemetry-interval", "0"]


@pytest.mark.slow
def test_collective_sweep_shows_its_size_on_a_terminal_only(tmp_path):
    db = ["--db", str(tmp_path / "r.db")]
    rc, out_tty, err_tty = _run(COLL + db, tty_stderr=True)
    assert rc == 0, err_tty
    assert b"all_reduce float: " in err_tty and b"bytes done" in err_tty  # the size reached
    rc, out_pipe, err_pipe = _run(COLL + db, tty_stderr=False)
    assert rc == 0
    assert not ESCAPE.search(out_pipe) and not ESCAPE.search(err_pipe)
    assert err_pipe.decode().splitlines()[-1].startswith("# run 2 (complete) stored in ")
    assert len(err_pipe.decode().splitlines()) == 1
    # stdout is the same table whether or not stderr is a terminal
    assert _skeleton(out_tty) == _skeleton(out_pipe) and not ESCAPE.search(out_tty)


def test_quiet_leaves_stderr_empty_even_on_a_terminal(tmp_path):
    rc, out, err = _run(["stream", "--device", "cpu", "-s", "64K", "-n", "3", "--telemetry-interval", "0",
                         "--db", str(tmp_path / "r.db"), "--quiet"], tty_stderr=True)
    assert rc == 0 and err == b""
    assert b"Copy" in out


def _fake_agent(tmp_path: Path) -> str:
    """An ssh-like agent that runs nothing: it prints the record a test run on HOST would."""
    agent = tmp_path / "agent"
    agent.write_text("#!" + sys.executable + "\n"
                     "import json, sys, time\n"
                     "host = sys.argv[1]\n"
                     "time.sleep(0.3)\n"
                     "print(json.dumps({'kind': 'measurement', 'benchmark': 'all_reduce', 'metric': 'busbw',\n"
                     "                  'value': 5.0 if host == 'c' else 10.0, 'unit': 'GB/s',\n"
                     "                  'params': {'bytes': 1 << 25}}))\n")
    agent.chmod(agent.stat().st_mode | stat.S_IEXEC)
    return str(agent)


@pytest.mark.slow
def test_sweep_says_subset_k_of_n_with_an_eta(tmp_path):
    args = ["sweep", "--hosts", "a,b,c", "--agent", _fake_agent(tmp_path), "--db", str(tmp_path / "s.db"),
            "--", "coll", "all_reduce"]
    rc, out_tty, err_tty = _run(args, tty_stderr=True, timeout=120)
    assert rc in (0, 1), err_tty
    assert b"subset 1/6: single a" in err_tty and b"ETA" in err_tty and b"subset 6/6: pair" in err_tty
    rc, out_pipe, err_pipe = _run(args, tty_stderr=False, timeout=120)
    lines = err_pipe.decode().splitlines()
    assert not ESCAPE.search(err_pipe) and len(lines) == 7 and lines[0].startswith("# single a ")
    assert lines[-1].startswith("# run ") and not any("subset" in line for line in lines)
    assert _skeleton(out_tty) == _skeleton(out_pipe)
    rc, _, err_quiet = _run([*args[:-3], "--quiet", *args[-3:]], tty_stderr=True, timeout=120)
    assert err_quiet == b""


# -- Slurm: state, queue time apart from run time, backing off --------------------------------

SCONTROL = """#!/bin/sh
# a scontrol that answers from a script of states, one per call
n=$(cat "{d}/calls" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "{d}/calls"
sed -n "${{n}}p" "{d}/states" | grep . || tail -n 1 "{d}/states"
"""


def test_slurm_wait_reports_states_and_backs_off(tmp_path, monkeypatch):
    job = "JobId=7 JobName=cb"
    states = ([f"{job} JobState=PENDING Reason=Resources SubmitTime=2024-05-01T10:00:00 StartTime=Unknown "
               "RunTime=00:00:00 ExitCode=0:0"] * 4
              + [f"{job} JobState=RUNNING Reason=None SubmitTime=2024-05-01T10:00:00 "
                 f"StartTime=2024-05-01T10:00:42 RunTime=00:00:{s:02d} ExitCode=0:0" for s in (1, 3, 7)]
              + [f"{job} JobState=COMPLETED Reason=None SubmitTime=2024-05-01T10:00:00 "
                 "StartTime=2024-05-01T10:00:42 RunTime=00:01:10 ExitCode=0:0"])
    (tmp_path / "states").write_text("\n".join(states) + "\n")
    exe = tmp_path / "scontrol"
    exe.write_text(SCONTROL.format(d=tmp_path))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    seen, slept = [], []
    info = slurm.wait("7", 3600, on_state=lambda i: seen.append(i.describe()), sleep=slept.append)
    assert info.state == "COMPLETED" and info.queued_s == 42 and info.run_s == 70
    assert seen[0].startswith("PENDING (Resources) ") and seen[4] == "RUNNING 0:00:01 (queued 0:00:42)"
    assert seen[-1] == "COMPLETED 0:01:10 (queued 0:00:42)"
    # 1 s, then longer and longer; back to 1 s when the job starts running
    assert slept == [1.0, 1.5, 2.25, 3.375, 1.0, 1.5, 2.25]
    assert max(slurm.poll_intervals().__next__() for _ in range(1)) == 1.0
    gen = slurm.poll_intervals()
    assert [next(gen) for _ in range(12)][-1] == 30.0  # never more often than every 30 s later on


def test_slurm_job_line_parsing():
    info = slurm.parse_job("JobId=1 JobState=PENDING Reason=Priority SubmitTime=2024-05-01T10:00:00 "
                           "StartTime=Unknown RunTime=00:00:00", now=time.mktime((2024, 5, 1, 10, 5, 0, 0, 0, -1)))
    assert info.describe() == "PENDING (Priority) 0:05:00" and not info.done
    assert slurm.parse_job("JobState=TIMEOUT RunTime=1-00:00:01 ExitCode=0:15").run_s == 86401
    assert slurm.JobInfo("").done


@pytest.mark.parametrize("quiet", [False, True])
def test_launch_slurm_print_is_unchanged_by_quiet(quiet):
    args = ["launch", "slurm", "--nodes", "2", "--print", *(["--quiet"] if quiet else []), "--", "net"]
    rc, out, err = _run(args, tty_stderr=False, timeout=60)
    assert rc == 0 and out.startswith(b"#!/bin/bash") and err == b""
