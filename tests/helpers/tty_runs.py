"""clusterbench run as a child with its standard error on a pseudo-terminal (or piped), as a user
sees it: what is drawn on a terminal and what must not depend on one."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time

ESCAPE = re.compile(rb"\x1b\[|\r")


def _skeleton(text: bytes) -> list[str]:
    """The output with numbers masked: what must not depend on a terminal (noise warnings depend
    on this run's timings, not on the terminal: left out)."""
    kept, in_warning = [], False
    for line in text.decode().splitlines():
        # a warning's block: its first line, then its lines indented under it
        in_warning = line.startswith("# warning:") or (in_warning and line.startswith("#   "))
        if not in_warning:
            kept.append(" ".join(re.sub(r"[0-9.e+-]+", "#", w) for w in line.split()))
    return kept


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
