"""System tests (store conc): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from pg_fixtures import SRC
from store_raw import _ms, _runs

from clusterbench.records import Run
from clusterbench.store import Store

_KILLED_WRITER = """
import os, signal, sys
from clusterbench.records import Measurement, Run
from clusterbench.store import Store

def rows():
    for i in range(5000):
        if i == 4000:   # the run's row and 4000 of its measurements are in the transaction
            os.kill(os.getpid(), signal.SIGKILL)
        yield ("all_reduce", "busbw", float(i), "GB/s", '{"bytes": %d}' % i)

with Store.open(sys.argv[1]) as s:
    s.save_run(Run(benchmark="all_reduce"), [Measurement("all_reduce", "busbw", 1.0, "GB/s", {})])
    if sys.argv[2] == "batch":
        with s.transaction():
            for _ in range(3):
                s.save_run(Run(benchmark="all_reduce"), [Measurement("all_reduce", "busbw", 1.0, "GB/s", {})])
            s._batch.flush()   # three runs written, not committed
            s.save_run_rows(Run(benchmark="all_reduce"), rows())
    else:
        s.save_run_rows(Run(benchmark="all_reduce"), rows())
"""


@pytest.mark.parametrize("how", ["one run", "batch"])
def test_a_writer_killed_mid_run_leaves_no_part_of_it(tmp_path, how):
    db = tmp_path / "k.db"
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(db), how], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SRC}, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert _runs(db) == [(1, 1)]
    with Store.open(db) as s:   # the next writer goes on where the first stopped
        s.save_run(Run(benchmark="all_reduce"), _ms(2))
    assert [n for _, n in _runs(db)] == [1, 2]
