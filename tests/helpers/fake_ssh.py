"""An ssh and a recorder standing in for remote hosts, and the payloads a launch script must never
run."""

from __future__ import annotations

import subprocess
from pathlib import Path

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


def _bash(text: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    syntax = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=10)
    assert syntax.returncode == 0, f"bash -n rejects:\n{text}\n{syntax.stderr}"
    return subprocess.run(["bash", "-c", text], capture_output=True, text=True, timeout=20, env=env, cwd=cwd)
