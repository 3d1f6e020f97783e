"""A thin ctypes binding of the NCCL/RCCL library PyTorch itself loaded (``--engine nccl``).

No library of its own: the one torch's CUDA or ROCm build mapped into the process (libnccl.so.2
from the nvidia-nccl wheel or the system, librccl.so on ROCm), found in ``/proc/self/maps`` and
checked against the version torch reports, so the communicator, the ops and torch's process
group share one library. Only the calls nccl-tests makes: ncclGetVersion, ncclGetUniqueId,
ncclCommInitRank (several devices of one process inside ncclGroupStart/End, as nccl-tests
does), ncclCommDestroy (ncclCommAbort after a failure), the seven ops, ncclSend/ncclRecv and ncclGroupStart/End; every result
is checked, a failure is one line with ncclGetErrorString and ncclGetLastError.

The type and operator enumerations are NCCL's (nccl.h; rccl.h has the same values): a wrong
value would run a different op, so tests/bench/collectives/test_nccl.py pins them against
nccl-tests' own name tables. Pure ctypes: nothing here needs a GPU until a communicator is made.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from clusterbench.errors import ClusterbenchError

# ncclDataType_t, in nccl.h's order (nccl-tests' ``-d all`` order too); rccl.h agrees.
TYPES: dict[str, int] = {"int8": 0, "uint8": 1, "int32": 2, "uint32": 3, "int64": 4, "uint64": 5, "half": 6,
                         "float": 7, "double": 8, "bfloat16": 9}
# ncclRedOp_t: ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg (NCCL 2.10 and later)
REDOPS: dict[str, int] = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}
UNIQUE_ID_BYTES = 128    # NCCL_UNIQUE_ID_BYTES
LIBRARY_NAMES = ("libnccl.so", "librccl.so")   # file name prefixes of what torch may have loaded

_ptr, _size, _int = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


# name -> argument types (the result is ncclResult_t, an int, unless said otherwise)
SIGNATURES: dict[str, list[Any]] = {
    "ncclGetVersion": [ctypes.POINTER(_int)],
    "ncclGetUniqueId": [ctypes.POINTER(UniqueId)],
    "ncclCommInitRank": [ctypes.POINTER(_ptr), _int, UniqueId, _int],
    "ncclCommDestroy": [_ptr],
    "ncclGroupStart": [],
    "ncclGroupEnd": [],
    # (sendbuff, recvbuff, count, datatype, [op], [root], comm, stream)
    "ncclAllReduce": [_ptr, _ptr, _size, _int, _int, _ptr, _ptr],
    "ncclAllGather": [_ptr, _ptr, _size, _int, _ptr, _ptr],
    "ncclReduceScatter": [_ptr, _ptr, _size, _int, _int, _ptr, _ptr],
    "ncclBroadcast": [_ptr, _ptr, _size, _int, _int, _ptr, _ptr],
    "ncclReduce": [_ptr, _ptr, _size, _int, _int, _int, _ptr, _ptr],
    # (buff, count, datatype, peer, comm, stream)
    "ncclSend": [_ptr, _size, _int, _int, _ptr, _ptr],
    "ncclRecv": [_ptr, _size, _int, _int, _ptr, _ptr],
}
# Present in some versions only: NCCL 2.28's ncclAlltoAll, RCCL's ncclAllToAll (without either,
# alltoall is grouped ncclSend/ncclRecv, as nccl-tests falls back to), the last-error text.
OPTIONAL: dict[str, list[Any]] = {
    "ncclCommAbort": [_ptr],
    "ncclAlltoAll": [_ptr, _ptr, _size, _int, _ptr, _ptr],
    "ncclAllToAll": [_ptr, _ptr, _size, _int, _ptr, _ptr],
}
STRINGS: dict[str, list[Any]] = {"ncclGetErrorString": [_int], "ncclGetLastError": [_ptr]}


class NcclError(ClusterbenchError):
    """A call of the library returned an error (or the library is not there)."""


def loaded_libraries(maps: str = "/proc/self/maps") -> list[str]:
    """The NCCL/RCCL shared objects mapped into this process, in the order first mapped."""
    try:
        with open(maps, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    found: list[str] = []
    for line in lines:
        path = line.split(maxsplit=5)[5].strip() if len(line.split(maxsplit=5)) == 6 else ""
        if path.startswith("/") and os.path.basename(path).startswith(LIBRARY_NAMES) and path not in found:
            found.append(path)
    return found


def version_code(major: int, minor: int, patch: int) -> int:
    """NCCL_VERSION(major, minor, patch) as ncclGetVersion reports it (nccl.h: x1000 before 2.9)."""
    if (major, minor) >= (2, 9):
        return major * 10000 + minor * 100 + patch
    return major * 1000 + minor * 100 + patch


def split_version(code: int) -> tuple[int, int, int]:
    if code >= 20900:
        return code // 10000, code // 100 % 100, code % 100
    return code // 1000, code // 100 % 10, code % 100


class Nccl:
    """The library's calls, each checked. ``lib`` is a ``ctypes.CDLL`` (or, in tests, an object
    that stands in for one: attributes named as the C functions, each with ``argtypes`` and
    ``restype`` set here)."""

    def __init__(self, lib: Any, path: str) -> None:
        self.lib, self.path = lib, path
        for name, args in SIGNATURES.items():
            self._declare(name, args, _int)
        self.optional = {name for name, args in OPTIONAL.items() if self._declare(name, args, _int, needed=False)}
        self.strings = {name for name, args in STRINGS.items()
                        if self._declare(name, args, ctypes.c_char_p, needed=False)}
        code = _int()
        self.check(self.lib.ncclGetVersion(ctypes.byref(code)), "ncclGetVersion")
        self.version = split_version(code.value)
        # the library's own all-to-all where it has one (nccl-tests: NCCL 2.28 and later)
        self.alltoall = next((n for n in ("ncclAlltoAll", "ncclAllToAll") if n in self.optional), None)

    def _declare(self, name: str, args: list[Any], restype: Any, needed: bool = True) -> bool:
        fn = getattr(self.lib, name, None)   # a CDLL raises AttributeError for a missing symbol
        if fn is None:
            if needed:
                raise NcclError(f"{self.path} has no {name}: not an NCCL/RCCL library this binding knows")
            return False
        fn.argtypes, fn.restype = args, restype
        return True

    @property
    def label(self) -> str:
        kind = "RCCL" if "rccl" in os.path.basename(self.path) else "NCCL"
        return f"{kind} {'.'.join(map(str, self.version))}"

    def error_text(self, result: int, comm: Any = None) -> str:
        text = ""
        if "ncclGetErrorString" in self.strings:
            text = (self.lib.ncclGetErrorString(result) or b"").decode(errors="replace")
        last = ""
        if "ncclGetLastError" in self.strings:
            last = (self.lib.ncclGetLastError(comm) or b"").decode(errors="replace").strip()
        return f"{text or f'error {result}'}{f': {last}' if last else ''}"

    def check(self, result: int, what: str, comm: Any = None) -> None:
        if result != 0:
            raise NcclError(f"{what}: {self.error_text(result, comm)} ({self.path})")

    def call(self, name: str, *args: Any) -> None:
        self.check(getattr(self.lib, name)(*args), name)

    def unique_id(self) -> bytes:
        uid = UniqueId()
        self.check(self.lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        return bytes(bytearray(uid))

    def init_ranks(self, nranks: int, uid: bytes, ranks: Sequence[int], on_device: Callable[[int], Any],
                   ) -> list[int]:
        """One communicator per rank of this process; ``on_device(i)`` is a context manager that
        makes the i-th of them current (cudaSetDevice). Several ranks in one process are made
        inside one group, as nccl-tests does (each ncclCommInitRank would wait for the others)."""
        if len(uid) != UNIQUE_ID_BYTES:
            raise NcclError(f"ncclUniqueId: got {len(uid)} bytes, expected {UNIQUE_ID_BYTES}")
        key = UniqueId.from_buffer_copy(uid)
        comms = [ctypes.c_void_p() for _ in ranks]

        def make() -> None:
            for i, (comm, rank) in enumerate(zip(comms, ranks)):
                with on_device(i):
                    self.check(self.lib.ncclCommInitRank(ctypes.byref(comm), nranks, key, rank),
                               f"ncclCommInitRank (rank {rank} of {nranks})")

        self.grouped([make], len(ranks) > 1)
        return [int(c.value or 0) for c in comms]

    def destroy(self, comm: int, abort: bool = False) -> None:
        if abort and "ncclCommAbort" in self.optional:
            self.check(self.lib.ncclCommAbort(comm), "ncclCommAbort")
        else:
            self.check(self.lib.ncclCommDestroy(comm), "ncclCommDestroy")

    def grouped(self, calls: Iterable[Callable[[], Any]], group: bool = True) -> None:
        """``calls`` inside ncclGroupStart/End (when ``group``): one launch for all of them."""
        if group:
            self.check(self.lib.ncclGroupStart(), "ncclGroupStart")
        try:
            for c in calls:
                c()
        finally:
            if group:
                self.check(self.lib.ncclGroupEnd(), "ncclGroupEnd")


def torch_nccl_version() -> tuple[int, ...] | None:
    """The NCCL/RCCL version torch was built with and loaded (None where it has none)."""
    try:
        import torch

        v = torch.cuda.nccl.version()
    except Exception:  # noqa: BLE001 - a torch without NCCL support raises several kinds
        return None
    return tuple(v) if isinstance(v, (tuple, list)) else split_version(int(v))


def load(maps: str = "/proc/self/maps", opener: Callable[[str], Any] = ctypes.CDLL,
         expected: tuple[int, ...] | None = None) -> Nccl:
    """The NCCL/RCCL library this process already loaded (torch's), opened again (dlopen shares
    the loaded copy) and checked against the version torch reports (``expected``)."""
    paths = loaded_libraries(maps)
    if not paths:
        raise NcclError("--engine nccl: no NCCL/RCCL library is loaded in this process (looked for "
                        f"{' or '.join(n + '*' for n in LIBRARY_NAMES)} in {maps}, where PyTorch's "
                        "CUDA/ROCm build maps it); use --engine torch")
    libs = []
    for path in paths:
        try:
            libs.append(Nccl(opener(path), path))
        except (OSError, NcclError) as e:
            raise NcclError(f"--engine nccl: cannot use {path}: {e}") from None
    if expected is not None:
        for lib in libs:
            if lib.version[:len(expected)] == tuple(expected):
                return lib
        raise NcclError(f"--engine nccl: PyTorch reports NCCL {'.'.join(map(str, expected))} but the library "
                        f"loaded is {', '.join(f'{lib.path} {lib.label}' for lib in libs)}")
    return libs[0]
