"""Is a path on a shared (network or cluster) file system?

SQLite's WAL mode keeps its index in shared memory (``-shm``), which processes on different
hosts do not share: on NFS, Lustre, GPFS, BeeGFS, CIFS/SMB or CephFS two hosts writing one
WAL database can corrupt it. The store uses the rollback journal there instead.

The file system type comes from ``statfs(2)``'s ``f_type`` magic number; where statfs cannot
be called, from the type column of ``/proc/self/mountinfo`` for the longest mount point
above the path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from collections.abc import Callable
from pathlib import Path

# f_type magic numbers, from the kernel's include/uapi/linux/magic.h and each file system's
# own client source (Lustre, GPFS, BeeGFS are out of tree).
SHARED_MAGIC: dict[int, str] = {
    0x6969: "nfs",
    0x0BD00BD0: "lustre",
    0x47504653: "gpfs",        # "GPFS": IBM Spectrum Scale
    0x19830326: "beegfs",
    0xFF534D42: "cifs",
    0xFE534D42: "smb2",
    0x517B: "smb",
    0x00C36400: "ceph",
}

# mountinfo type names of the same file systems (fhgfs: BeeGFS's old name).
SHARED_TYPES: dict[str, str] = {
    "nfs": "nfs", "nfs4": "nfs", "lustre": "lustre", "gpfs": "gpfs", "beegfs": "beegfs",
    "fhgfs": "beegfs", "cifs": "cifs", "smb3": "cifs", "smbfs": "smb", "ceph": "ceph",
}

StatfsFn = Callable[[str], int]


class _Statfs(ctypes.Structure):
    # f_type is the first member on every Linux ABI; the padding covers the rest of the struct
    # (120 bytes on x86-64) with room to spare.
    _fields_ = [("f_type", ctypes.c_long), ("_rest", ctypes.c_byte * 256)]


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def statfs_magic(path: str) -> int:
    """``statfs(path).f_type``; OSError when the call fails."""
    libc = _libc()
    buf = _Statfs()
    if libc.statfs(os.fsencode(path), ctypes.byref(buf)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return buf.f_type & 0xFFFFFFFF  # the magic numbers are 32-bit; c_long may sign-extend them


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash in paths as octal escapes (\040)
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mountinfo_type(path: str, mountinfo: str) -> str | None:
    """The fs type of the mount holding ``path`` (absolute), from mountinfo's text."""
    best, best_type = "", None
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right.split():
            continue
        mount = _unescape(fields[4])
        inside = path == mount or path.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):  # later lines stack on earlier ones: >=
            best, best_type = mount, right.split()[0]
    return best_type


def _existing(path: Path) -> Path:
    """The path itself or its nearest existing parent (a new database has no file yet)."""
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def shared_fs(path: str | os.PathLike[str], statfs: StatfsFn | None = None,
              mountinfo: str | None = None) -> str | None:
    """The shared file system ``path`` is on (``nfs``, ``lustre``, ...), or None for a local one.
    ``statfs`` and ``mountinfo`` are injectable for tests."""
    try:
        return SHARED_MAGIC.get((statfs or statfs_magic)(str(_existing(Path(path)))))
    except (OSError, AttributeError):  # AttributeError: a libc without statfs
        pass
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text()
        except OSError:
            return None
    # realpath resolves the symlinks of the part that exists and keeps the rest as written
    fstype = mountinfo_type(os.path.realpath(os.path.abspath(path)), mountinfo)
    return SHARED_TYPES.get(fstype or "")
