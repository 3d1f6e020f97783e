"""The PyTorch side of each collective: its buffers, its call bound once per row (so the timed
loop is just ``for _ in range(iters): issue()``, no lookups, no allocation), and the values each
rank puts in and must get back.

The timed loop queues ``iters`` ops and waits once at the end (``finish``), as nccl-tests
queues its ops on a stream and synchronizes once, instead of paying a blocking wait per op. On
gloo the calls are ``async_op=True`` (the Work is what ``finish`` waits for). On NCCL/RCCL they
are plain calls (``async_op=False``): they never block the host there (the op is ordered on the
device after the caller's stream) and cost less host time than an async call's Work, 3.5-7 us
per op (6 typical) on an H100 with torch 2.11 and NCCL 2.28 (BENCHMARKS.md), which is what a
launch-bound row measures. ``finish`` then has no Work to wait for, and the caller's device
synchronize covers every op.

Only public ``torch.distributed`` APIs, which map to NCCL on NVIDIA, RCCL on AMD and gloo on CPU.
In-place follows nccl-tests: all_gather's input is this rank's slot of the output buffer,
reduce_scatter's output is this rank's slot of the input buffer, the others share one buffer.

Out of place is real for every op: distinct send and receive buffers. torch.distributed has
only an in-place all_reduce, broadcast and reduce; there the out-of-place op is the input copied
into the receive buffer, then the in-place call on it (the result nccl-tests' out-of-place op
leaves, the copy timed with it; ``--engine nccl``, bench/collectives/direct.py, calls the
library's own). Each op's ``views`` are the buffers as nccl-tests passes them, shared by both
engines.

A new op is its row in ``families/collectives/spec.py`` and one ``OpCall`` in ``CALLS`` (and its
library call in ``direct.py``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clusterbench.bench.collectives import data
from clusterbench.families.collectives.spec import DTYPES

Tensor = Any


@dataclass
class Bound:
    issue: Callable[[], Any]  # starts the op, returns its Work (a list of them for sendrecv)
    input: Tensor            # where this rank's input lives for this placement
    output: Tensor | None    # what this rank must check (None: nothing on this rank)

    def run(self) -> None:
        """Issue the op and wait for it (untimed calls: warm-up, probe, check)."""
        finish([self.issue()], ordered=False)


def finish(issued: list[Any], ordered: bool) -> None:
    """Wait for issued ops. ``ordered``: the backend runs a rank's ops in issue order on one
    stream (NCCL/RCCL), so waiting for the last one covers all; gloo may run them on several
    threads at once, so every op is waited for."""
    works: list[Any] = []
    for item in (issued[-1:] if ordered else issued):
        works += item if isinstance(item, list) else [item]
    for w in (works[-1:] if ordered else works):
        if w is not None:
            w.wait()


@dataclass(frozen=True)
class RowBuffers:
    """What a bound call needs: the preallocated buffers and this row's geometry."""

    send: Tensor
    recv: Tensor
    per: int        # nccl-tests' count: elements per rank for gather-type ops, all elements otherwise
    rank: int
    n: int
    root: int
    redop: str
    inplace: bool
    dtype: str = "float"
    async_op: bool = True   # False: stream-ordered plain calls (NCCL/RCCL), see the module doc


@dataclass(frozen=True)
class Views:
    """One row's buffers as nccl-tests hands them to the library: ``send`` and ``recv`` are its
    ``sendbuff`` and ``recvbuff`` (distinct buffers out of place; in place the send buffer is
    ``recvbuff + sendInplaceOffset * rank`` or the receive buffer a window of the send buffer,
    as each op's ``GetCollByteCount`` says), ``input`` where this rank's data is written and
    ``output`` what it must hold afterwards (None: nothing to check on this rank)."""

    send: Tensor
    recv: Tensor
    input: Tensor
    output: Tensor | None


# (redop, dtype, rank, n, root, per, idx) -> int64 values
Values = Callable[[str, str, int, int, int, int, Tensor], Tensor]


@dataclass(frozen=True)
class OpCall:
    views: Callable[[RowBuffers], Views]
    torch: Callable[[RowBuffers, Views], Callable[[], Any]]   # the bound torch.distributed call
    buffers: Callable[[int, int], tuple[int, int]]   # (per_max, n) -> send, recv elements
    inputs: Values                                   # this rank's input at idx
    expected: Values                                 # what this rank's output must hold at idx
    # torch.distributed has only an in-place form of the op: out of place, the torch engine
    # copies the input into the receive buffer and runs the in-place call there (timed together)
    copies: bool = False


def torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, DTYPES[name][0])


def reduce_op(name: str) -> Any:
    import torch.distributed as dist

    return {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
            "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.AVG, "none": None}[name]


# -- buffers --------------------------------------------------------------------------------------

def _same_size(per_max: int, n: int) -> tuple[int, int]:
    return per_max, per_max


def _gathered(per_max: int, n: int) -> tuple[int, int]:
    return per_max, per_max * n


def _scattered(per_max: int, n: int) -> tuple[int, int]:
    return per_max * n, per_max


def _exchanged(per_max: int, n: int) -> tuple[int, int]:
    return per_max * n, per_max * n


# -- views ----------------------------------------------------------------------------------------

def _one_to_one(r: RowBuffers) -> Views:
    """all_reduce, broadcast, sendrecv: send and receive buffers of one row each; in place one."""
    recv = r.recv[:r.per]
    send = recv if r.inplace else r.send[:r.per]
    return Views(send, recv, send, recv)


def _to_root(r: RowBuffers) -> Views:
    v = _one_to_one(r)
    return Views(v.send, v.recv, v.input, v.recv if r.rank == r.root else None)


def _gather_views(r: RowBuffers) -> Views:
    recv = r.recv[:r.per * r.n]
    send = recv[r.rank * r.per:(r.rank + 1) * r.per] if r.inplace else r.send[:r.per]
    return Views(send, recv, send, recv)


def _scatter_views(r: RowBuffers) -> Views:
    send = r.send[:r.per * r.n]
    recv = send[r.rank * r.per:(r.rank + 1) * r.per] if r.inplace else r.recv[:r.per]
    return Views(send, recv, send, recv)


def _exchange_views(r: RowBuffers) -> Views:
    recv = r.recv[:r.per * r.n]
    send = recv if r.inplace else r.send[:r.per * r.n]
    return Views(send, recv, send, recv)


# -- the torch.distributed calls ------------------------------------------------------------------

def copied(dst: Tensor, src: Tensor, call: Callable[[], Any]) -> Any:
    """The input copied into the receive buffer, then the in-place ``call`` on it: the
    out-of-place op of a library that has only the in-place one (returns the call's Work)."""
    dst.copy_(src)
    return call()


def _out_of_place(r: RowBuffers, v: Views, call: Callable[[], Any], copy: bool = True) -> Callable[[], Any]:
    """``call`` (in place on ``v.recv``), preceded out of place by the copy of ``v.send``."""
    return call if r.inplace or not copy else functools.partial(copied, v.recv, v.send, call)


def _all_reduce(r: RowBuffers, v: Views) -> Callable[[], Any]:
    import torch.distributed as dist

    return _out_of_place(r, v, functools.partial(dist.all_reduce, v.recv, reduce_op(r.redop), async_op=r.async_op))


def _broadcast(r: RowBuffers, v: Views) -> Callable[[], Any]:
    import torch.distributed as dist

    # only the root's send buffer holds data: the others receive into theirs, nothing to copy
    return _out_of_place(r, v, functools.partial(dist.broadcast, v.recv, r.root, async_op=r.async_op),
                         copy=r.rank == r.root)


def _reduce(r: RowBuffers, v: Views) -> Callable[[], Any]:
    import torch.distributed as dist

    return _out_of_place(r, v, functools.partial(dist.reduce, v.recv, r.root, reduce_op(r.redop),
                                                 async_op=r.async_op))


def _all_gather(r: RowBuffers, v: Views) -> Callable[[], Any]:
    import torch.distributed as dist

    return functools.partial(dist.all_gather_into_tensor, v.recv, v.send, async_op=r.async_op)


def _reduce_scatter(r: RowBuffers, v: Views) -> Callable[[], Any]:
    import torch.distributed as dist

    return functools.partial(dist.reduce_scatter_tensor, v.recv, v.send, reduce_op(r.redop), async_op=r.async_op)


def _alltoall(r: RowBuffers, v: Views) -> Callable[[], Any]:
    import torch.distributed as dist

    return functools.partial(dist.all_to_all_single, v.recv, v.send, async_op=r.async_op)


def _sendrecv(r: RowBuffers, v: Views) -> Callable[[], Any]:
    import torch.distributed as dist

    # One batch, as nccl-tests groups ncclSend/ncclRecv: a ring where nobody waits first. The
    # P2POp list is built once per row (and offset); each issue is one coalesced group.
    ops = [dist.P2POp(dist.isend, v.send, (r.rank + 1) % r.n), dist.P2POp(dist.irecv, v.recv, (r.rank - 1) % r.n)]
    return functools.partial(dist.batch_isend_irecv, ops)


# -- values ---------------------------------------------------------------------------------------

def _reduce_in(redop: str, dtype: str, rank: int, n: int, root: int, per: int, idx: Tensor) -> Tensor:
    return data.reduce_input(redop, rank, n, idx, dtype)


def _reduce_out(redop: str, dtype: str, rank: int, n: int, root: int, per: int, idx: Tensor) -> Tensor:
    return data.reduce_expected(redop, n, idx, dtype)


def _scatter_out(redop: str, dtype: str, rank: int, n: int, root: int, per: int, idx: Tensor) -> Tensor:
    return data.reduce_expected(redop, n, idx + rank * per, dtype)


def _own_tag(redop: str, dtype: str, rank: int, n: int, root: int, per: int, idx: Tensor) -> Tensor:
    return data.tagged(rank, idx)


def _gathered_tags(redop: str, dtype: str, rank: int, n: int, root: int, per: int, idx: Tensor) -> Tensor:
    return data.tagged(idx // per, idx % per)


def _root_tag(redop: str, dtype: str, rank: int, n: int, root: int, per: int, idx: Tensor) -> Tensor:
    return data.tagged(root, idx)


def _exchanged_tags(redop: str, dtype: str, rank: int, n: int, root: int, per: int, idx: Tensor) -> Tensor:
    return data.tagged(idx // per, rank * per + idx % per)  # chunk j came from rank j: its chunk ``rank``


def _left_tag(redop: str, dtype: str, rank: int, n: int, root: int, per: int, idx: Tensor) -> Tensor:
    return data.tagged((rank - 1) % n, idx)


CALLS: dict[str, OpCall] = {
    "all_reduce": OpCall(_one_to_one, _all_reduce, _same_size, _reduce_in, _reduce_out, copies=True),
    "all_gather": OpCall(_gather_views, _all_gather, _gathered, _own_tag, _gathered_tags),
    "reduce_scatter": OpCall(_scatter_views, _reduce_scatter, _scattered, _reduce_in, _scatter_out),
    "broadcast": OpCall(_one_to_one, _broadcast, _same_size, _own_tag, _root_tag, copies=True),
    "reduce": OpCall(_to_root, _reduce, _same_size, _reduce_in, _reduce_out, copies=True),
    "alltoall": OpCall(_exchange_views, _alltoall, _exchanged, _own_tag, _exchanged_tags),
    "sendrecv": OpCall(_one_to_one, _sendrecv, _same_size, _own_tag, _left_tag),
}


def row_buffers(placement: str, send_buf: Tensor, recv_buf: Tensor, per: int, rank: int, n: int, root: int,
                redop: str, dtype: str = "float", async_op: bool = True) -> RowBuffers:
    return RowBuffers(send_buf, recv_buf, per, rank, n, root, redop, placement == "in", dtype, async_op)


def bind(op: str, placement: str, send_buf: Tensor, recv_buf: Tensor, per: int, rank: int, n: int,
         root: int, redop: str, dtype: str = "float", async_op: bool = True) -> Bound:
    """Views of the preallocated buffers for one row and the bound torch.distributed call."""
    r = row_buffers(placement, send_buf, recv_buf, per, rank, n, root, redop, dtype, async_op)
    v = CALLS[op].views(r)
    return Bound(CALLS[op].torch(r, v), v.input, v.output)


class TorchEngine:
    """The ops through ``torch.distributed`` (gloo, or NCCL/RCCL under PyTorch's process group)."""

    name = "torch"
    stream = None   # the process group's own streams; nothing to make current

    def __init__(self, backend: str) -> None:
        self.backend = backend
        # NCCL/RCCL run a rank's ops in issue order on one stream (finish waits for the last)
        self.ordered = backend == "nccl"

    def bind(self, op: str, placement: str, send_buf: Tensor, recv_buf: Tensor, per: int, rank: int, n: int,
             root: int, redop: str, dtype: str) -> Bound:
        return bind(op, placement, send_buf, recv_buf, per, rank, n, root, redop, dtype,
                    async_op=not self.ordered)

    def active(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def describe(self) -> dict[str, Any]:
        return {"engine": self.name, "backend": self.backend}

    def cannot(self) -> str:
        return f"the {self.backend} backend"

    def caveat(self, op: str) -> str | None:
        """The one line said after ``op``'s table about how this engine measured it."""
        if not CALLS[op].copies:
            return None
        return (f"{op} (engine torch): torch.distributed has only an in-place {op}; out of place, the input "
                f"is copied into the output buffer and the in-place {op} runs there (the copy timed with it); "
                "--engine nccl calls the library's own on GPU ranks")

    def close(self, abort: bool = False) -> None:
        pass  # the process group is torn down with the rank


def shifted(buf: Tensor, row_elements: int, step: int) -> Tensor:
    """``buf`` from the start of the ``step``-th row-sized window, as nccl-tests shifts each
    iteration's buffers by one row (``startColl``: ``shift = bytes * (iter % steps)``)."""
    return buf[row_elements * step:] if buf.numel() else buf


def offset_steps(per: int, per_max: int) -> int:
    """How many row-sized windows the buffers (allocated for ``per_max``) hold for a row of
    ``per``: every op's send and receive sizes scale with ``per``, so one count serves both."""
    return max(1, per_max // per) if per > 0 else 1


def buffer_elements(op: str, per_max: int, n: int) -> tuple[int, int]:
    """Send and receive buffer sizes (elements) that hold every row up to ``per_max``."""
    return CALLS[op].buffers(per_max, n)
