"""The PyTorch call behind each op and placement, bound once per row so the timed loop is
just ``for _ in range(iters): call()`` (no lookups, no allocation).

Only public ``torch.distributed`` APIs, which map to NCCL on NVIDIA, RCCL on AMD and gloo on CPU.
In-place follows nccl-tests: all_gather's input is this rank's slot of the output buffer,
reduce_scatter's output is this rank's slot of the input buffer, the others share one buffer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Tensor = Any


@dataclass
class Bound:
    call: Callable[[], Any]
    input: Tensor            # where this rank's input lives for this placement
    output: Tensor | None    # what this rank must check (None: nothing on this rank)


def torch_dtype(name: str) -> Any:
    import torch

    from clusterbench.bench.collectives.spec import DTYPES

    return getattr(torch, DTYPES[name][0])


def reduce_op(name: str) -> Any:
    import torch.distributed as dist

    return {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
            "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.AVG, "none": None}[name]


def _sendrecv(send: Tensor, recv: Tensor, rank: int, n: int) -> Callable[[], None]:
    import torch.distributed as dist

    # One batch, as nccl-tests groups ncclSend/ncclRecv: a ring where nobody waits first.
    ops = [dist.P2POp(dist.isend, send, (rank + 1) % n), dist.P2POp(dist.irecv, recv, (rank - 1) % n)]
    batch = dist.batch_isend_irecv

    def call() -> None:
        for work in batch(ops):
            work.wait()

    return call


def bind(op: str, placement: str, send_buf: Tensor, recv_buf: Tensor, per: int, rank: int, n: int,
         root: int, redop: str) -> Bound:
    """Views of the preallocated buffers for one row and the bound call.

    ``per`` is nccl-tests' count: elements per rank for gather-type ops, all elements otherwise.
    """
    import torch.distributed as dist

    rop = reduce_op(redop)
    inplace = placement == "in"
    if op == "all_reduce":
        buf = recv_buf[:per]
        return Bound(functools.partial(dist.all_reduce, buf, rop), buf, buf)
    if op == "broadcast":
        buf = recv_buf[:per]
        return Bound(functools.partial(dist.broadcast, buf, root), buf, buf)
    if op == "reduce":
        buf = recv_buf[:per]
        return Bound(functools.partial(dist.reduce, buf, root, rop), buf, buf if rank == root else None)
    if op == "all_gather":
        out = recv_buf[:per * n]
        inp = out[rank * per:(rank + 1) * per] if inplace else send_buf[:per]
        return Bound(functools.partial(dist.all_gather_into_tensor, out, inp), inp, out)
    if op == "reduce_scatter":
        inp = send_buf[:per * n]
        out = inp[rank * per:(rank + 1) * per] if inplace else recv_buf[:per]
        return Bound(functools.partial(dist.reduce_scatter_tensor, out, inp, rop), inp, out)
    if op == "alltoall":
        out = recv_buf[:per * n]
        inp = out if inplace else send_buf[:per * n]
        return Bound(functools.partial(dist.all_to_all_single, out, inp), inp, out)
    if op == "sendrecv":
        out = recv_buf[:per]
        inp = out if inplace else send_buf[:per]
        return Bound(_sendrecv(inp, out, rank, n), inp, out)
    raise ValueError(f"unknown collective {op!r}")


def buffer_elements(op: str, per_max: int, n: int) -> tuple[int, int]:
    """Send and receive buffer sizes (elements) that hold every row up to ``per_max``."""
    if op in ("all_gather",):
        return per_max, per_max * n
    if op in ("reduce_scatter",):
        return per_max * n, per_max
    if op == "alltoall":
        return per_max * n, per_max * n
    if op in ("all_reduce", "broadcast", "reduce"):
        return 0, per_max   # one buffer: in-place only
    return per_max, per_max
