"""launch.process.run_argv on real processes: the exit code comes back; at the time limit the
launcher's whole process group (a child it started included) is killed."""

import os
import sys
import time

import pytest

from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.launch.process import run_argv


def test_exit_code_and_environment_reach_the_caller(tmp_path):
    out = tmp_path / "env"
    code = run_argv([sys.executable, "-c",
                     f"import os, sys; open({str(out)!r}, 'w').write(os.environ['CB_X']); sys.exit(3)"],
                    30, "python", env={"CB_X": "yes"})
    assert code == 3 and out.read_text() == "yes"


def test_a_missing_program_is_one_line():
    with pytest.raises(UsageError, match="cannot run /nonexistent/mpirun: No such file"):
        run_argv(["/nonexistent/mpirun"], 5, "mpirun")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of init is gone for our purpose
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return False


def test_timeout_kills_the_whole_group(tmp_path):
    pidfile = tmp_path / "child"
    # the "launcher" starts a child in its group (as mpirun starts ranks) and both sleep
    script = ("import subprocess, sys, time\n"
              "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
              f"open({str(pidfile)!r}, 'w').write(str(c.pid))\n"
              "time.sleep(600)\n")
    with pytest.raises(ClusterbenchError, match=r"^mpirun did not finish within 3 s \(--wall-timeout\): ended$"):
        run_argv([sys.executable, "-c", script], 3, "mpirun")
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)
