"""The execution context of this process: what a container or a job gives it, which bare metal
does not limit. Its cgroup's CPU and memory limits and cpuset (cgroup v2 ``cpu.max``,
``memory.max``, ``cpuset.cpus.effective``; their v1 equivalents), the CPUs it may run on, its
resource limits (``memlock``, which RDMA needs, ``nofile``, ...), the size of ``/dev/shm``, huge
pages, and its network namespace.

Everything is read from files under ``root`` (``/proc/self/...``, ``/sys/fs/cgroup/...``), so a
fake tree stands for a container in the tests; only the size of the live ``/dev/shm`` is asked
of the kernel (``statvfs``) where its mount states none. A file that cannot be read is unknown
(None), never an error.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterbench.envinfo.sysfs import listdir, read_int, read_text

# v1 reports "no limit" as the largest page-aligned signed 64-bit value; anything this large is none.
_V1_UNLIMITED = 1 << 62
# /proc/self/limits rows kept, by the name getrlimit(2) gives them (RLIMIT_MEMLOCK is memlock).
RLIMITS = {"Max locked memory": "memlock", "Max open files": "nofile", "Max processes": "nproc",
           "Max stack size": "stack", "Max core file size": "core"}


def cpu_list(cpus: set[int] | list[int]) -> str:
    """``{0, 1, 2, 5}`` -> ``"0-2,5"``: the kernel's cpulist format (cpuset.cpus, taskset -c)."""
    out: list[str] = []
    for c in sorted(set(cpus)):
        if out and "-" in out[-1] and int(out[-1].split("-")[1]) == c - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        elif out and "-" not in out[-1] and int(out[-1]) == c - 1:
            out[-1] = f"{out[-1]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)


def cpu_count(cpulist: str | None) -> int | None:
    """How many CPUs a cpulist (``0-3,8``) names; None when it is not one."""
    if not cpulist or not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", cpulist):
        return None
    n = 0
    for part in cpulist.split(","):
        a, _, b = part.partition("-")
        n += (int(b) - int(a) + 1) if b else 1
    return n if n > 0 else None


# -- cgroups ------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Mount:
    root: str          # the part of the hierarchy the mount shows (a container's own cgroup)
    point: str         # where it is mounted
    fstype: str        # cgroup2 or cgroup
    controllers: frozenset[str]


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal (\040)
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounts(root: Path) -> list[tuple[str, str, str, str]]:
    """``(mount root, mount point, fstype, options)`` of each line of /proc/self/mountinfo."""
    out = []
    for line in (read_text(root / "proc/self/mountinfo") or "").splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 2:
            continue
        out.append((_unescape(fields[3]), _unescape(fields[4]), tail[0],
                    ",".join(x for x in (fields[5] if len(fields) > 5 else "", tail[2] if len(tail) > 2 else "") if x)))
    return out


# v1 controllers (a mount's options also hold rw, nosuid, name=systemd, ...)
_V1_CONTROLLERS = frozenset(("cpu", "cpuacct", "cpuset", "memory", "pids", "blkio", "devices", "freezer",
                             "net_cls", "net_prio", "perf_event", "hugetlb", "rdma", "misc"))


def _cgroup_mounts(root: Path) -> list[_Mount]:
    found = [_Mount(r, p, t, frozenset(o.split(",")) & _V1_CONTROLLERS)
             for r, p, t, o in mounts(root) if t in ("cgroup", "cgroup2")]
    if found:
        return found
    # no mountinfo (a tree that holds only /sys): the layout every distribution uses
    base = root / "sys/fs/cgroup"
    if os.path.isfile(base / "cgroup.controllers"):
        return [_Mount("/", "/sys/fs/cgroup", "cgroup2", frozenset())]
    return [_Mount("/", f"/sys/fs/cgroup/{d}", "cgroup", frozenset(d.split(",")) & _V1_CONTROLLERS)
            for d in listdir(base) if os.path.isdir(base / d)]


def _memberships(root: Path) -> dict[str, str]:
    """Controller (``cpu``, ``memory``, ...; ``""`` for the v2 hierarchy) -> this process's
    cgroup path, from /proc/self/cgroup (``0::/path`` for v2, ``4:cpu,cpuacct:/path`` for v1)."""
    out: dict[str, str] = {}
    for line in (read_text(root / "proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for c in parts[1].split(",") if parts[1] else [""]:
            out[c] = parts[2]
    return out


def _dir_of(root: Path, mount: _Mount, path: str) -> Path:
    """The directory of cgroup ``path`` under its mount: the mount shows the hierarchy from its
    own root down (a container sees its cgroup as ``/``)."""
    rel = os.path.relpath(path, mount.root) if path.startswith(mount.root) else "."
    if rel.startswith(".."):
        rel = "."
    return root / mount.point.lstrip("/") / rel


def _levels(start: Path, top: Path) -> list[Path]:
    """``start`` and each parent up to the mount point: limits are hierarchical, the tightest wins."""
    out = [start]
    while out[-1] != top and top in out[-1].parents:
        out.append(out[-1].parent)
    return out


def _v2_cpu(text: str | None) -> tuple[float | None, str] | None:
    """``"50000 100000"`` -> (0.5 CPUs, text); ``"max 100000"`` -> (None, text)."""
    words = (text or "").split()
    if len(words) != 2 or not words[1].isdigit() or int(words[1]) == 0:
        return None
    if words[0] == "max":
        return None, text or ""
    return (int(words[0]) / int(words[1]), f"{words[0]} {words[1]}") if words[0].isdigit() else None


def _tightest_cpu(levels: list[Path], v2: bool) -> tuple[str | None, Path | None]:
    """The tightest CPU quota of these levels as cpu.max text, and where it is set; ``max
    PERIOD`` when no level limits (None when no level could be read)."""
    best: tuple[float, str, Path] | None = None
    seen = None
    for d in levels:
        if v2:
            got = _v2_cpu(read_text(d / "cpu.max"))
        else:
            quota, period = read_int(d / "cpu.cfs_quota_us"), read_int(d / "cpu.cfs_period_us")
            got = None if quota is None or not period else \
                ((None, f"max {period}") if quota < 0 else (quota / period, f"{quota} {period}"))
        if got is None:
            continue
        seen = seen or got[1]
        if got[0] is not None and (best is None or got[0] < best[0]):
            best = (got[0], got[1], d)
    if best is not None:
        return best[1], best[2]
    return (f"max {seen.split()[1]}" if seen else None), None


def _tightest_memory(levels: list[Path], v2: bool) -> tuple[int | str | None, Path | None]:
    best: tuple[int, Path] | None = None
    seen = False
    for d in levels:
        text = read_text(d / ("memory.max" if v2 else "memory.limit_in_bytes"))
        if text is None:
            continue
        seen = True
        if text.isdigit() and int(text) < _V1_UNLIMITED and (best is None or int(text) < best[0]):
            best = (int(text), d)
    if best is not None:
        return best[0], best[1]
    return ("max" if seen else None), None


def _first(levels: list[Path], *names: str) -> str | None:
    """The first of ``names`` any level has (a v2 cgroup without the cpuset controller has no
    cpuset files; its parent, or the root, says what applies)."""
    for d in levels:
        for n in names:
            text = read_text(d / n)
            if text:
                return text
    return None


def _shown(root: Path, path: Path | None) -> str | None:
    return "/" + str(path.relative_to(root)) if path is not None else None


def cgroup(root: Path) -> dict[str, Any]:
    """This process's cgroup limits: ``cpu_max`` as cgroup v2 writes it (``"50000 100000"``:
    half a CPU; ``"max 100000"``: none; v1's quota and period in the same form), ``memory_max``
    (bytes, or ``"max"``), the effective cpuset, each with the cgroup file's directory that sets
    it (``*_at``), and the version (``mode``: ``v2``, ``v1``, or ``hybrid`` where v1 controllers
    sit beside a v2 tree)."""
    member = _memberships(root)
    mnts = _cgroup_mounts(root)
    v2 = next((m for m in mnts if m.fstype == "cgroup2"), None)
    v1 = {c: m for m in mnts if m.fstype == "cgroup" for c in m.controllers}   # named ones hold none
    out: dict[str, Any] = {"mode": None, "path": member.get(""), "cpu_max": None, "cpu_max_at": None,
                           "memory_max": None, "memory_max_at": None, "cpuset_cpus": None, "cpuset_mems": None}
    if not member and not mnts:
        return out
    v2_controllers = set((read_text(root / (v2.point.lstrip("/")) / "cgroup.controllers") or "").split()) \
        if v2 is not None else set()
    out["mode"] = "v2" if v2 is not None and not v1 else "v1" if v1 and v2 is None else \
        "hybrid" if v1 else None

    def levels(controller: str) -> tuple[list[Path], bool] | None:
        if v2 is not None and (controller in v2_controllers or not v1) and "" in member:
            top = root / v2.point.lstrip("/")
            return _levels(_dir_of(root, v2, member[""]), top), True
        m = v1.get(controller)
        if m is not None and controller in member:
            return _levels(_dir_of(root, m, member[controller]), root / m.point.lstrip("/")), False
        return None

    if (cpu := levels("cpu")) is not None:
        out["cpu_max"], at = _tightest_cpu(*cpu)
        out["cpu_max_at"] = _shown(root, at)
    if (mem := levels("memory")) is not None:
        out["memory_max"], at = _tightest_memory(*mem)
        out["memory_max_at"] = _shown(root, at)
    if (cs := levels("cpuset")) is not None:
        dirs, is_v2 = cs
        out["cpuset_cpus"] = _first(dirs, *(("cpuset.cpus.effective",) if is_v2 else
                                            ("cpuset.effective_cpus", "cpuset.cpus")))
        out["cpuset_mems"] = _first(dirs, *(("cpuset.mems.effective",) if is_v2 else
                                            ("cpuset.effective_mems", "cpuset.mems")))
    if out["path"] is None:   # v1 only: the cpu controller's path says where the process is
        out["path"] = member.get("cpu") or member.get("memory")
    return out


# -- this process -------------------------------------------------------------------------

def _status_field(text: str, key: str) -> str | None:
    m = re.search(rf"^{re.escape(key)}:\s*(\S+)", text, re.M)
    return m.group(1) if m else None


def _limit(word: str) -> int | str | None:
    return "unlimited" if word == "unlimited" else int(word) if word.isdigit() else None


def rlimits(root: Path) -> dict[str, dict[str, int | str | None]]:
    """The resource limits of RLIMITS from /proc/self/limits (what getrlimit(2) answers):
    ``{"memlock": {"soft": 65536, "hard": 65536}, ...}``, ``"unlimited"`` where there is none."""
    out: dict[str, dict[str, int | str | None]] = {}
    for line in (read_text(root / "proc/self/limits") or "").splitlines():
        for title, key in RLIMITS.items():
            if line.startswith(title):
                words = line[len(title):].split()
                if len(words) >= 2:
                    out[key] = {"soft": _limit(words[0]), "hard": _limit(words[1])}
    return out


def process(root: Path) -> dict[str, Any]:
    """The CPUs and memory nodes this process may use (its affinity: ``taskset``, a job's or a
    container's cpuset) and its resource limits."""
    status = read_text(root / "proc/self/status") or ""
    return {"cpus_allowed": _status_field(status, "Cpus_allowed_list"),
            "mems_allowed": _status_field(status, "Mems_allowed_list"),
            "rlimits": rlimits(root)}


def netns(root: Path) -> dict[str, Any]:
    """The network namespace (the inode ``/proc/self/ns/net`` names: two processes in one
    namespace see the same), and whether it is the one PID 1 is in (False under ``ip netns
    exec``; a container's PID 1 is its own init)."""
    def inode(path: Path) -> int | None:
        try:
            m = re.fullmatch(r"net:\[(\d+)\]", os.readlink(path))
        except OSError:
            return None
        return int(m.group(1)) if m else None

    mine, init = inode(root / "proc/self/ns/net"), inode(root / "proc/1/ns/net")
    return {"inode": mine, "same_as_pid1": (mine == init) if mine is not None and init is not None else None}


# -- shared memory and huge pages -----------------------------------------------------------

_SIZE_SUFFIX = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _mount_size(options: str) -> int | None:
    m = re.search(r"(?:^|,)size=(\d+)([kmgt]?)(?:,|$)", options, re.I)
    return int(m.group(1)) * _SIZE_SUFFIX[m.group(2).lower()] if m else None


def shm_bytes(root: Path) -> int | None:
    """The size of ``/dev/shm`` (NCCL's and gloo's shared-memory transport; Docker's default is
    64 MiB): the live file system's, else what its mount says (``size=65536k``)."""
    if str(root) == "/":
        try:
            st = os.statvfs("/dev/shm")
            return st.f_blocks * st.f_frsize
        except OSError:
            pass
    sizes = [_mount_size(o) for _r, point, fstype, o in mounts(root) if point == "/dev/shm" and fstype == "tmpfs"]
    return sizes[-1] if sizes else None   # the last mount over it is the one seen


def _meminfo_int(text: str, key: str) -> int | None:
    m = re.search(rf"^{re.escape(key)}:\s+(\d+)", text, re.M)
    return int(m.group(1)) if m else None


def _choice(text: str | None) -> str | None:
    """``"always [madvise] never"`` -> ``"madvise"``."""
    m = re.search(r"\[([^\]]+)\]", text or "")
    return m.group(1) if m else (text or None)


def hugepages(root: Path) -> dict[str, Any]:
    """Huge pages reserved (``HugePages_Total`` of ``Hugepagesize``) and free (a reading), and
    the transparent huge page settings."""
    text = read_text(root / "proc/meminfo") or ""
    size_kib = _meminfo_int(text, "Hugepagesize")
    thp = root / "sys/kernel/mm/transparent_hugepage"
    return {"hugepages_total": _meminfo_int(text, "HugePages_Total"),
            "hugepages_free": _meminfo_int(text, "HugePages_Free"),
            "hugepage_size_bytes": size_kib * 1024 if size_kib is not None else None,
            "thp_enabled": _choice(read_text(thp / "enabled")),
            "thp_defrag": _choice(read_text(thp / "defrag"))}


def affinity() -> str | None:
    """The CPUs this process may run on now, as a cpulist (each rank asks for itself)."""
    try:
        return cpu_list(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # not Linux
        return None
