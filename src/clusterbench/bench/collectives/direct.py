"""``--engine nccl``: every op through the NCCL/RCCL library PyTorch loaded, called directly
(bench/collectives/nccl.py), as nccl-tests calls it.

The communicator comes from a unique id rank 0 makes and puts in the job's rendezvous store
(the one the process group was made from); each rank reads it there and joins with
ncclCommInitRank. The ops run on a stream of the engine's own (nccl-tests creates one per GPU),
which the sweep makes current, so filling, checking and the ops are ordered on it; a CUDA/HIP
graph (``-G``) captures on it. The buffers are the views both engines share (``calls.CALLS[op].views``):
out of place distinct send and receive buffers, in place the send buffer inside the receive
buffer (all_gather: ``recvbuff + rank * count``; reduce_scatter: the receive buffer at
``sendbuff + rank * count``), so every op's out-of-place columns are the library's own op.
sendrecv (and alltoall on a library without an all-to-all call) is one ncclGroupStart/End of
ncclSend/ncclRecv, as nccl-tests issues them; the ops of several devices of one process would be
grouped the same way (``Nccl.grouped``), though clusterbench runs one device per rank.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from clusterbench.bench.collectives import calls
from clusterbench.bench.collectives.nccl import (
    REDOPS,
    TYPES,
    Nccl,
    NcclError,
    load,
    torch_nccl_version,
)
from clusterbench.errors import UsageError
from clusterbench.families.collectives.spec import element_size

UID_KEY = "clusterbench/coll/nccl_unique_id"


def _checked(nccl: Nccl, name: str, fn: Any, args: tuple[Any, ...]) -> None:
    result = fn(*args)
    if result != 0:
        nccl.check(result, name)


class DirectEngine:
    """The ops of one rank through the library: one communicator, one stream."""

    name = "nccl"
    ordered = True   # one stream: the ops run in issue order, the device synchronize covers them

    def __init__(self, nccl: Nccl, comm: int, stream: Any, stream_handle: int) -> None:
        self.nccl, self.comm, self.stream, self.handle = nccl, comm, stream, stream_handle

    # -- the calls ---------------------------------------------------------------------------------

    def _fn(self, name: str, *args: Any) -> Callable[[], None]:
        """A bound library call: the timed loop pays the C call and one comparison."""
        return functools.partial(_checked, self.nccl, name, getattr(self.nccl.lib, name), args)

    def _group(self, calls_: list[Callable[[], None]]) -> Callable[[], None]:
        return functools.partial(self.nccl.grouped, calls_)

    def bind(self, op: str, placement: str, send_buf: Any, recv_buf: Any, per: int, rank: int, n: int,
             root: int, redop: str, dtype: str) -> calls.Bound:
        r = calls.row_buffers(placement, send_buf, recv_buf, per, rank, n, root, redop, dtype, async_op=False)
        v = calls.CALLS[op].views(r)
        return calls.Bound(self.issue(op, v.send.data_ptr(), v.recv.data_ptr(), r), v.input, v.output)

    def issue(self, op: str, send: int, recv: int, r: calls.RowBuffers) -> Callable[[], None]:
        """The library call of ``op`` on device addresses ``send`` and ``recv`` (nccl-tests'
        sendbuff and recvbuff), with the row's count, type, operator and root."""
        dt, comm, stream, per = TYPES[r.dtype], self.comm, self.handle, r.per
        red = REDOPS.get(r.redop, 0)
        if op == "all_reduce":
            return self._fn("ncclAllReduce", send, recv, per, dt, red, comm, stream)
        if op == "all_gather":
            return self._fn("ncclAllGather", send, recv, per, dt, comm, stream)
        if op == "reduce_scatter":
            return self._fn("ncclReduceScatter", send, recv, per, dt, red, comm, stream)
        if op == "broadcast":
            return self._fn("ncclBroadcast", send, recv, per, dt, r.root, comm, stream)
        if op == "reduce":
            return self._fn("ncclReduce", send, recv, per, dt, red, r.root, comm, stream)
        if op == "alltoall":
            if self.nccl.alltoall:
                return self._fn(self.nccl.alltoall, send, recv, per, dt, comm, stream)
            chunk = per * element_size(r.dtype)
            return self._group([c for peer in range(r.n) for c in (
                self._fn("ncclSend", send + peer * chunk, per, dt, peer, comm, stream),
                self._fn("ncclRecv", recv + peer * chunk, per, dt, peer, comm, stream))])
        if op == "sendrecv":
            return self._group([self._fn("ncclSend", send, per, dt, (r.rank + 1) % r.n, comm, stream),
                                self._fn("ncclRecv", recv, per, dt, (r.rank - 1) % r.n, comm, stream)])
        raise ValueError(f"no library call for {op!r}")

    # -- what the sweep asks of an engine ------------------------------------------------------------

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """The engine's stream current: fills, checks and ops ordered on it."""
        import torch

        with torch.cuda.stream(self.stream):
            yield

    def describe(self) -> dict[str, Any]:
        return {"engine": self.name, "library": self.nccl.path, "version": self.nccl.label,
                "alltoall": self.nccl.alltoall or "ncclSend/ncclRecv"}

    def cannot(self) -> str:
        return self.nccl.label

    def caveat(self, op: str) -> str | None:
        return None

    def close(self, abort: bool = False) -> None:
        """Destroy the communicator; ``abort`` after a failure (ncclCommAbort: a peer that is gone
        cannot make a graceful destroy wait)."""
        if self.comm:
            comm, self.comm = self.comm, 0
            self.nccl.destroy(comm, abort=abort)


def share_unique_id(store: Any, rank: int, make: Callable[[], bytes]) -> bytes:
    """Rank 0 makes the id and puts it in the store; every rank reads it back from there (the
    store's get waits, up to its timeout, for the key to be set)."""
    if rank == 0:
        store.set(UID_KEY, make())
    return bytes(store.get(UID_KEY))


def open_engine(ctx: Any, loader: Callable[[], Nccl] | None = None) -> DirectEngine:
    """The library engine for this rank: the library torch loaded, a communicator over all the
    job's ranks, a stream of its own on the rank's GPU."""
    import torch

    if ctx.device_type != "cuda":
        raise UsageError("--engine nccl calls the NCCL/RCCL library on GPU ranks; these ranks run on "
                         f"{ctx.device_type}: use --engine torch")
    if getattr(ctx, "store", None) is None:
        raise NcclError("--engine nccl: this rank has no rendezvous store to share the NCCL unique id")
    nccl = (loader or (lambda: load(expected=torch_nccl_version())))()
    uid = share_unique_id(ctx.store, ctx.rank, nccl.unique_id)
    comm = nccl.init_ranks(ctx.world_size, uid, [ctx.rank], lambda _: torch.cuda.device(ctx.device))[0]
    stream = torch.cuda.Stream(device=ctx.device)
    return DirectEngine(nccl, comm, stream, stream.cuda_stream)
