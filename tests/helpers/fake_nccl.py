"""A stand-in for the NCCL library behind ``ctypes.CDLL``: every C function the binding declares,
checked as ctypes and NCCL would check its call, recorded, and (for a one-rank communicator on
host memory) carried out, so the direct engine's whole sweep runs and checks its data on a CPU.

Each function refuses to be called before the binding declared its ``argtypes`` and ``restype``,
converts every argument with its declared type's ``from_param`` (a ``TypeError`` as ctypes would
raise), and checks what NCCL checks: a known datatype and operator, a root or peer that is a
rank, the communicator it made and the engine's stream, non-null buffers, a count that is a whole
number. Calls between ncclGroupStart and ncclGroupEnd are recorded with their group's number.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

SIZES = {0: 1, 1: 1, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2}   # ncclDataType_t -> bytes
COMM = 0x5EED
STREAM = 0xC0FFEE

# name -> (argument names) of every function nccl.h declares that the binding may use
FUNCTIONS: dict[str, tuple[str, ...]] = {
    "ncclGetVersion": ("version",),
    "ncclGetUniqueId": ("uid",),
    "ncclCommInitRank": ("comm", "nranks", "uid", "rank"),
    "ncclCommDestroy": ("comm",),
    "ncclCommAbort": ("comm",),
    "ncclGroupStart": (),
    "ncclGroupEnd": (),
    "ncclAllReduce": ("send", "recv", "count", "datatype", "op", "comm", "stream"),
    "ncclAllGather": ("send", "recv", "count", "datatype", "comm", "stream"),
    "ncclReduceScatter": ("send", "recv", "count", "datatype", "op", "comm", "stream"),
    "ncclBroadcast": ("send", "recv", "count", "datatype", "root", "comm", "stream"),
    "ncclReduce": ("send", "recv", "count", "datatype", "op", "root", "comm", "stream"),
    "ncclAlltoAll": ("send", "recv", "count", "datatype", "comm", "stream"),
    "ncclAllToAll": ("send", "recv", "count", "datatype", "comm", "stream"),   # RCCL's spelling
    "ncclSend": ("send", "count", "datatype", "peer", "comm", "stream"),
    "ncclRecv": ("recv", "count", "datatype", "peer", "comm", "stream"),
    "ncclGetErrorString": ("result",),
    "ncclGetLastError": ("comm",),
}


@dataclass
class Call:
    name: str
    args: dict[str, Any]
    group: int | None      # the ncclGroupStart/End pair it was issued in


@dataclass
class FakeFunction:
    lib: FakeNccl
    name: str
    argtypes: list[Any] | None = None
    restype: Any = "undeclared"

    def __call__(self, *args: Any) -> Any:
        assert self.argtypes is not None and self.restype != "undeclared", f"{self.name}: called undeclared"
        assert len(args) == len(self.argtypes), f"{self.name}: {len(args)} arguments, declared {len(self.argtypes)}"
        for t, a in zip(self.argtypes, args):
            t.from_param(a)                       # what ctypes does: TypeError on a wrong type
        named = dict(zip(FUNCTIONS[self.name], args))
        self.lib.check(self.name, named)
        self.lib.calls.append(Call(self.name, named, self.lib.group))
        return self.lib.run(self.name, named)


@dataclass
class FakeNccl:
    version: int = 23007          # 2.30.7
    nranks: int = 1
    # symbols this build lacks: NCCL has no ncclAllToAll (RCCL's), nor ncclAlltoAll before 2.28
    missing: tuple[str, ...] = ("ncclAllToAll",)
    fail: dict[str, int] = field(default_factory=dict)   # function -> ncclResult_t it returns
    execute: bool = True          # carry out the ops of a one-rank communicator in host memory
    calls: list[Call] = field(default_factory=list)
    group: int | None = None
    groups: int = 0
    made: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.functions = {n: FakeFunction(self, n) for n in FUNCTIONS if n not in self.missing}

    def __getattr__(self, name: str) -> FakeFunction:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(name)              # as a CDLL says for a missing symbol

    def named(self, *names: str) -> list[Call]:
        return [c for c in self.calls if c.name in names]

    # -- what NCCL would refuse ----------------------------------------------------------------

    def check(self, name: str, a: dict[str, Any]) -> None:
        if "datatype" in a:
            assert a["datatype"] in SIZES, f"{name}: datatype {a['datatype']}"
        if "op" in a:
            assert a["op"] in range(5), f"{name}: op {a['op']}"
        for k in ("root", "peer"):
            if k in a:
                assert isinstance(a[k], int) and 0 <= a[k] < self.nranks, f"{name}: {k} {a[k]} of {self.nranks}"
        if "count" in a:
            assert isinstance(a["count"], int) and a["count"] >= 0, f"{name}: count {a['count']}"
        for k in ("send", "recv"):
            if k in a:
                assert isinstance(a[k], int) and a[k] > 0, f"{name}: {k} buffer {a[k]!r}"
        if "stream" in a:
            assert a["stream"] == STREAM, f"{name}: stream {a['stream']!r}, not the engine's"
        if "comm" in a and name not in ("ncclCommInitRank", "ncclGetLastError"):
            assert a["comm"] in self.made, f"{name}: communicator {a['comm']!r} was never made"
        if name == "ncclGroupStart":
            assert self.group is None, "ncclGroupStart inside a group"
        if name == "ncclGroupEnd":
            assert self.group is not None, "ncclGroupEnd without ncclGroupStart"
        if name in ("ncclSend", "ncclRecv"):   # nccl-tests groups them: alone, a ring would deadlock
            assert self.group is not None, f"{name} outside ncclGroupStart/End"

    # -- what it does ----------------------------------------------------------------------------

    def run(self, name: str, a: dict[str, Any]) -> Any:
        if name == "ncclGetErrorString":
            return b"invalid usage" if a["result"] else b"no error"
        if name == "ncclGetLastError":
            return b"the fake refused it"
        if name in self.fail:
            return self.fail[name]
        if name == "ncclGetVersion":
            a["version"]._obj.value = self.version
        elif name == "ncclGetUniqueId":
            a["uid"]._obj.internal = b"\x7f" * 16
        elif name == "ncclCommInitRank":
            a["comm"]._obj.value = COMM + a["rank"]
            self.made.add(COMM + a["rank"])
        elif name in ("ncclCommDestroy", "ncclCommAbort"):
            self.made.discard(a["comm"])
        elif name == "ncclGroupStart":
            self.groups += 1
            self.group = self.groups
        elif name == "ncclGroupEnd":
            self._pair_sends(self.group)
            self.group = None
        elif self.execute and self.nranks == 1 and "send" in a and "recv" in a:
            # one rank: every op's result is its input (a sum, product, min, max or average of
            # one value; a gather, scatter or exchange with itself)
            ctypes.memmove(a["recv"], a["send"], a["count"] * SIZES[a["datatype"]])
        return 0

    def _pair_sends(self, group: int | None) -> None:
        """A one-rank send to itself lands in its receive of the same group."""
        if not self.execute or self.nranks != 1:
            return
        mine = [c for c in self.calls if c.group == group and c.name in ("ncclSend", "ncclRecv")]
        sends = [c for c in mine if c.name == "ncclSend"]
        recvs = [c for c in mine if c.name == "ncclRecv"]
        for s, r in zip(sends, recvs):
            ctypes.memmove(r.args["recv"], s.args["send"], s.args["count"] * SIZES[s.args["datatype"]])
