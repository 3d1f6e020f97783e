"""System tests (rank waits for root): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import os
import subprocess
import sys

from paths import SRC


def test_a_rank_starts_without_the_private_attribute() -> None:
    """The whole step a local rank takes first, in a process of its own (it sets the parent-death
    signal): with the attribute gone it runs on, without a word."""
    code = ("import multiprocessing.forkserver as f; del f._forkserver\n"
            "from clusterbench.ranks import local\n"
            "local._die_with_the_command(); print('ran on')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (0, "ran on\n", "")
