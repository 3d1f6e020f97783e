"""A real cgroup with a CPU quota for tests: a cgroup v2 child with ``cpu.max`` where this
machine's v2 tree has the cpu controller, else a v1 ``cpu`` child with ``cpu.cfs_quota_us``
(a machine whose cpu controller is bound to v1, as this one's is), else a skip saying why.
``quota_cgroup_or_skip`` is a fixture body: it yields a ``QuotaCgroup`` (its ``cgroup.procs``,
and what the inventory should read as ``cpu_max``), and removes the cgroup afterwards, once the
processes put there have gone.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

QUOTA_US, PERIOD_US = 50000, 100000   # half a CPU


@dataclass(frozen=True)
class QuotaCgroup:
    path: Path
    version: int

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    @property
    def cpu_max(self) -> str:
        return f"{QUOTA_US} {PERIOD_US}"

    def enter(self) -> None:
        """Move the calling process in (a ``preexec_fn``: the child, before it runs the command)."""
        with open(self.procs, "w") as f:
            f.write(str(os.getpid()))


def _mounts() -> list[tuple[str, str, set[str]]]:
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) > 4 and len(tail) > 2 and tail[0] in ("cgroup", "cgroup2"):
                out.append((tail[0], fields[4], set(tail[2].split(","))))
    return out


def _v2(point: str) -> QuotaCgroup | str:
    base = Path(point)
    if "cpu" not in (base / "cgroup.controllers").read_text().split():
        return f"the cgroup v2 tree at {point} has no cpu controller (it is bound to cgroup v1 here)"
    if "cpu" not in (base / "cgroup.subtree_control").read_text().split():
        (base / "cgroup.subtree_control").write_text("+cpu")
    child = base / f"cbtest-{uuid.uuid4().hex[:8]}"
    child.mkdir()
    (child / "cpu.max").write_text(f"{QUOTA_US} {PERIOD_US}")
    return QuotaCgroup(child, 2)


def _v1(point: str) -> QuotaCgroup:
    child = Path(point) / f"cbtest-{uuid.uuid4().hex[:8]}"
    child.mkdir()
    (child / "cpu.cfs_period_us").write_text(str(PERIOD_US))
    (child / "cpu.cfs_quota_us").write_text(str(QUOTA_US))
    return QuotaCgroup(child, 1)


def _make() -> QuotaCgroup | str:
    if os.geteuid() != 0:
        return "needs root to create a cgroup"
    reasons = []
    mounts = _mounts()
    for kind, point, _opts in mounts:
        if kind == "cgroup2":
            try:
                got = _v2(point)
            except OSError as e:
                got = f"cannot create a cgroup v2 child under {point}: {e.strerror or e}"
            if isinstance(got, QuotaCgroup):
                return got
            reasons.append(got)
    for kind, point, opts in mounts:
        if kind == "cgroup" and "cpu" in opts:
            try:
                return _v1(point)
            except OSError as e:
                reasons.append(f"cannot create a cgroup v1 cpu child under {point}: {e.strerror or e}")
    return "; ".join(reasons) or "no cgroup file system with the cpu controller is mounted"


def quota_cgroup_or_skip():
    got = _make()
    if isinstance(got, str):
        pytest.skip(got)
    try:
        yield got
    finally:
        deadline = time.monotonic() + 30   # the kernel lists a process until it has been reaped
        while time.monotonic() < deadline:
            try:
                got.path.rmdir()
                break
            except OSError:
                time.sleep(0.1)
