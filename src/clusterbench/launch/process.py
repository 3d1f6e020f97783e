"""Running a launcher (mpirun, torchrun) on this node until it ends: in its own process group,
so that a timeout or Ctrl-C ends every process it started (its ranks, its ssh agents), not only
the launcher itself."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence

from clusterbench.errors import ClusterbenchError, UsageError


def run_argv(argv: Sequence[str], timeout: float, what: str,
             env: Mapping[str, str] | None = None) -> int:
    """Run ``argv`` (``env`` added to this process's environment) and return its exit code.
    After ``timeout`` seconds its whole process group is killed and ClusterbenchError names
    ``what`` and the limit; a KeyboardInterrupt kills the group too, then goes on."""
    try:
        p = subprocess.Popen(list(argv), start_new_session=True,
                             env={**os.environ, **env} if env else None)
    except OSError as e:
        raise UsageError(f"cannot run {argv[0]}: {e.strerror}") from None
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(10)
        raise ClusterbenchError(f"{what} did not finish within {timeout:g} s (--wall-timeout): ended") from None
    except KeyboardInterrupt:
        os.killpg(p.pid, signal.SIGKILL)
        raise
