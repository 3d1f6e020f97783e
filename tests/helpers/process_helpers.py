"""Processes a test started: its command, the forkserver and the ranks under it."""

from __future__ import annotations

import subprocess
import time

import psutil


def process_family(proc: subprocess.Popen) -> list[int]:
    """The command, its forkserver and its ranks: every process that must be gone at the end."""
    return [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]


def assert_all_gone(pids: list[int], within: float = 15.0) -> None:
    """Every one of ``pids`` exits (or is a zombie awaiting its parent) within ``within`` s."""
    deadline = time.monotonic() + within
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
        time.sleep(0.2)
    assert not alive, f"left running: {alive}"
