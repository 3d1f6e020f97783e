"""System tests (preflight): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from json_schema import check_lines
from judge_helpers import cli
from paths import DATA
from slurm_fixtures import _node

from clusterbench.preflight import checks as c

H100 = DATA / "sysfs" / "h100-node"


def test_slurm_preflight_drains_and_resumes_its_node(slurm, capsys, monkeypatch, tmp_path):
    for k, v in slurm.items():
        monkeypatch.setenv(k, v)
    root = str(tmp_path)   # an empty host: nothing to check fails, unless GPUs are expected
    rc, out, err = cli(capsys, "preflight", "--root", root, "--expect-gpus", "4", "--node", "n1",
                       "--on-fail", "drain", "--apply")
    assert rc == 1, err
    n1 = _node(slurm, "n1")
    assert n1.drained and n1.reason.startswith("clusterbench: preflight gpu_count: ")
    rc, out, err = cli(capsys, "preflight", "--root", root, "--node", "n1", "--on-fail", "drain", "--apply",
                       "--undrain")
    assert rc == 0, err
    assert not _node(slurm, "n1").drained


def test_a_named_pipe_as_kernel_log_is_read_not_waited_on_forever(tmp_path):
    """`mkfifo k; journalctl -k > k & clusterbench preflight --kernel-log k`: the pipe was opened
    once to look at it (taking the writer's data) and again to read it, waiting for a writer that
    never came."""
    fifo = tmp_path / "kmsg.fifo"
    os.mkfifo(fifo)

    def writer() -> None:
        try:
            with open(fifo, "w") as f:   # waits for the reader
                f.write("[ 9.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus.\n")
        except OSError:   # the reader went away before the write (as the bug did)
            pass

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        done = subprocess.run([sys.executable, "-m", "clusterbench", "preflight", "--root", str(H100),
                               "--kernel-log", str(fifo), "--json"],
                              capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "w"):   # let the waiting reader go
            pass
        pytest.fail("preflight waited forever on a named pipe given as --kernel-log")
    kl = next(d for d in check_lines(done.stdout) if d["kind"] == "check" and d["check"] == "kernel_log")
    assert kl["status"] == c.FAIL and "Xid 79" in " ".join(kl["evidence"]), done.stderr
