"""Output paths that are not regular files (a FIFO, a device), for the tests that refuse to write
over one."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest


def _special(path: Path, kind: str) -> None:
    if kind == "device":   # /dev/null's numbers, made in the test's directory
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:   # (never the real /dev/null: a failing test would replace it)
            pytest.skip("making a device node needs root (CAP_MKNOD)")
    else:
        os.mkfifo(path)


def _is(path: Path, kind: str) -> bool:
    mode = os.lstat(path).st_mode
    return stat.S_ISCHR(mode) if kind == "device" else stat.S_ISFIFO(mode)
