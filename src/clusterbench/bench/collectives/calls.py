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

A new op is its row in ``families/collectives/spec.py`` and one ``OpCall`` in ``CALLS``.
"""

from __future__ import annotations

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


# (redop, dtype, rank, n, root, per, idx) -> int64 values
Values = Callable[[str, str, int, int, int, int, Tensor], Tensor]


@dataclass(frozen=True)
class OpCall:
    bind: Callable[[RowBuffers], Bound]
    buffers: Callable[[int, int], tuple[int, int]]   # (per_max, n) -> send, recv elements
    inputs: Values                                   # this rank's input at idx
    expected: Values                                 # what this rank's output must hold at idx


def torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, DTYPES[name][0])


def reduce_op(name: str) -> Any:
    import torch.distributed as dist

    return {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
            "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.AVG, "none": None}[name]


# -- buffers --------------------------------------------------------------------------------------

def _one_buffer(per_max: int, n: int) -> tuple[int, int]:
    return 0, per_max   # in-place only: the op works on the receive buffer


def _same_size(per_max: int, n: int) -> tuple[int, int]:
    return per_max, per_max


def _gathered(per_max: int, n: int) -> tuple[int, int]:
    return per_max, per_max * n


def _scattered(per_max: int, n: int) -> tuple[int, int]:
    return per_max * n, per_max


def _exchanged(per_max: int, n: int) -> tuple[int, int]:
    return per_max * n, per_max * n


# -- calls ----------------------------------------------------------------------------------------

def _all_reduce(r: RowBuffers) -> Bound:
    import torch.distributed as dist

    buf = r.recv[:r.per]
    return Bound(functools.partial(dist.all_reduce, buf, reduce_op(r.redop), async_op=r.async_op), buf, buf)


def _broadcast(r: RowBuffers) -> Bound:
    import torch.distributed as dist

    buf = r.recv[:r.per]
    return Bound(functools.partial(dist.broadcast, buf, r.root, async_op=r.async_op), buf, buf)


def _reduce(r: RowBuffers) -> Bound:
    import torch.distributed as dist

    buf = r.recv[:r.per]
    return Bound(functools.partial(dist.reduce, buf, r.root, reduce_op(r.redop), async_op=r.async_op), buf,
                 buf if r.rank == r.root else None)


def _all_gather(r: RowBuffers) -> Bound:
    import torch.distributed as dist

    out = r.recv[:r.per * r.n]
    inp = out[r.rank * r.per:(r.rank + 1) * r.per] if r.inplace else r.send[:r.per]
    return Bound(functools.partial(dist.all_gather_into_tensor, out, inp, async_op=r.async_op), inp, out)


def _reduce_scatter(r: RowBuffers) -> Bound:
    import torch.distributed as dist

    inp = r.send[:r.per * r.n]
    out = inp[r.rank * r.per:(r.rank + 1) * r.per] if r.inplace else r.recv[:r.per]
    return Bound(functools.partial(dist.reduce_scatter_tensor, out, inp, reduce_op(r.redop), async_op=r.async_op),
                 inp, out)


def _alltoall(r: RowBuffers) -> Bound:
    import torch.distributed as dist

    out = r.recv[:r.per * r.n]
    inp = out if r.inplace else r.send[:r.per * r.n]
    return Bound(functools.partial(dist.all_to_all_single, out, inp, async_op=r.async_op), inp, out)


def _sendrecv(r: RowBuffers) -> Bound:
    import torch.distributed as dist

    out = r.recv[:r.per]
    inp = out if r.inplace else r.send[:r.per]
    # One batch, as nccl-tests groups ncclSend/ncclRecv: a ring where nobody waits first. The
    # P2POp list is built once per row (and offset); each issue is one coalesced group.
    ops = [dist.P2POp(dist.isend, inp, (r.rank + 1) % r.n), dist.P2POp(dist.irecv, out, (r.rank - 1) % r.n)]
    return Bound(functools.partial(dist.batch_isend_irecv, ops), inp, out)


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
    "all_reduce": OpCall(_all_reduce, _one_buffer, _reduce_in, _reduce_out),
    "all_gather": OpCall(_all_gather, _gathered, _own_tag, _gathered_tags),
    "reduce_scatter": OpCall(_reduce_scatter, _scattered, _reduce_in, _scatter_out),
    "broadcast": OpCall(_broadcast, _one_buffer, _own_tag, _root_tag),
    "reduce": OpCall(_reduce, _one_buffer, _reduce_in, _reduce_out),
    "alltoall": OpCall(_alltoall, _exchanged, _own_tag, _exchanged_tags),
    "sendrecv": OpCall(_sendrecv, _same_size, _own_tag, _left_tag),
}


def bind(op: str, placement: str, send_buf: Tensor, recv_buf: Tensor, per: int, rank: int, n: int,
         root: int, redop: str, dtype: str = "float", async_op: bool = True) -> Bound:
    """Views of the preallocated buffers for one row and the bound call."""
    return CALLS[op].bind(RowBuffers(send_buf, recv_buf, per, rank, n, root, redop, placement == "in", dtype,
                                     async_op))


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
