"""System tests (launch injection): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

PAYLOADS = {
    "newline": "x\ntouch {m}",
    "subst": "$(touch {m})",
    "backquote": "`touch {m}`",
    "squote": "x'; touch {m}; '",
    "dquote": 'x"; touch {m}; "',
    "semicolon": "x; touch {m}",
    "hash": "x #; touch {m}",
    "nul": "x\x00touch {m}",
}


RECORDER = """#!/bin/sh
echo "$0" >> "$CB_RAN"
printf '%s\\n' "$@" >> "$CB_ARGS"
printf 'NCCL_X=%s\\n' "${NCCL_X:-}" >> "$CB_ARGS"
"""


FAKE_SSH = """#!/bin/sh
# like ssh: options, the host, then the rest joined into one line for the remote shell
while [ "$1" = "-o" ]; do shift 2; done
shift
exec sh -c "$*"
"""


@pytest.fixture
def fakes(tmp_path: Path) -> dict[str, str]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("srun", "mpirun", "torchrun", "pip", "scontrol", "clusterbench"):
        (bindir / tool).write_text(RECORDER)
    (bindir / "ssh").write_text(FAKE_SSH)
    for f in bindir.iterdir():
        f.chmod(0o755)
    return {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path), "CB_RAN": str(tmp_path / "ran"),
            "CB_ARGS": str(tmp_path / "args"), "SLURM_JOB_NODELIST": "n1",
            "DSTACK_GPUS_PER_NODE": "8", "DSTACK_NODE_RANK": "0", "DSTACK_MASTER_NODE_IP": "10.0.0.1"}


def _bash(text: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    syntax = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=10)
    assert syntax.returncode == 0, f"bash -n rejects:\n{text}\n{syntax.stderr}"
    return subprocess.run(["bash", "-c", text], capture_output=True, text=True, timeout=20, env=env, cwd=cwd)


def test_no_marker_left():
    assert not os.path.exists("/tmp/cb6-evil")


def test_the_harness_sees_an_injection(tmp_path: Path, fakes: dict[str, str]) -> None:
    """The checks above can fail: unquoted text with a payload does touch the marker."""
    marker = tmp_path / "P"
    naive = {"subst": "t={}", "backquote": "t={}", "semicolon": "t={}",
             "squote": "'t={}'", "dquote": '"t={}"'}   # how a string-formatting generator would write it
    for name, form in naive.items():
        _bash("srun clusterbench coll --tag " + form.format(PAYLOADS[name].format(m=marker)), fakes, tmp_path)
        assert marker.exists(), name
        marker.unlink()
