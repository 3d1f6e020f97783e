"""Operands and the timed call for one GEMM shape and dtype, plus the result check.

``op(A) @ op(B)`` with op = transpose when transA/transB is T: a transposed operand is stored
k x m (or n x k) and used through a transposed view, so the BLAS sees the same layout as
rocblas-bench's column-major T/N arguments. Batched shapes use strided batched calls
(baddbmm); int8 uses ``torch._int_mm`` (int32 accumulate) and fp8 ``torch._scaled_mm``, the
only PyTorch entry points to those GEMMs, one call per batch entry; both run A row-major and B
column-major (``spec.FAST_LAYOUT``), and on a GPU their per-entry loop is replayed from a
CUDA/HIP graph (``graphed``), so a batch costs one launch, not one Python call per matrix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from clusterbench.families.gemm.spec import DTYPES, input_dtypes


@dataclass
class Operands:
    a: Any   # (batch, m, k) view
    b: Any   # (batch, k, n) view
    c: Any   # (batch, m, n) or None when beta == 0
    d: Any   # (batch, m, n) output


def _operand(rows: int, cols: int, batch: int, trans: str, torch_dtype: str, device: Any,
             gen: torch.Generator) -> Any:
    shape = (batch, cols, rows) if trans == "T" else (batch, rows, cols)
    if torch_dtype == "int8":
        x = torch.randint(-4, 5, shape, generator=gen, dtype=torch.int8).to(device)
    else:
        x = torch.randn(shape, generator=gen, dtype=torch.float32).to(device)
        x = x.to(getattr(torch, torch_dtype))
    return x.transpose(1, 2) if trans == "T" else x


def make_operands(m: int, n: int, k: int, batch: int, dtype: str, trans_a: str, trans_b: str,
                  beta: float, device: Any, seed: int = 1234, arch: str | None = None) -> Operands:
    """A, B (in the formats of ``spec.input_dtypes`` for the device's GCN ``arch``), C, D."""
    gen = torch.Generator().manual_seed(seed)
    spec = DTYPES[dtype]
    out_dtype = getattr(torch, spec.output)
    a_type, b_type = input_dtypes(dtype, arch)
    a = _operand(m, k, batch, trans_a, a_type, device, gen)
    b = _operand(k, n, batch, trans_b, b_type, device, gen)
    c = None
    if beta != 0 and spec.path == "matmul":
        c = torch.randn((batch, m, n), generator=gen).to(device=device, dtype=out_dtype)
    d = torch.empty((batch, m, n), dtype=out_dtype, device=device)
    return Operands(a, b, c, d)


def gemm_call(ops: Operands, dtype: str, alpha: float, beta: float) -> Callable[[], None]:
    """The call to time: writes D = alpha * op(A) @ op(B) + beta * C."""
    path = DTYPES[dtype].path
    a, b, c, d = ops.a, ops.b, ops.c, ops.d
    batch = a.shape[0]
    if path == "matmul":
        if batch == 1:  # plain gemm: (m, k) @ (k, n)
            a, b, d = a[0], b[0], d[0]
            c = c[0] if c is not None else None
        mm, addmm = (torch.mm, torch.addmm) if batch == 1 else (torch.bmm, torch.baddbmm)

        def matmul() -> None:
            if c is not None:
                addmm(c, a, b, beta=beta, alpha=alpha, out=d)
            elif alpha == 1.0:
                mm(a, b, out=d)
            else:
                addmm(d, a, b, beta=0.0, alpha=alpha, out=d)
        return matmul
    if path == "int_mm":
        def int_mm() -> None:
            for i in range(batch):
                torch._int_mm(a[i], b[i], out=d[i])
        return int_mm
    scale_a = torch.tensor(float(alpha), device=a.device)
    scale_b = torch.tensor(1.0, device=a.device)

    def scaled_mm() -> None:
        for i in range(batch):
            torch._scaled_mm(a[i], b[i], scale_a=scale_a, scale_b=scale_b, out_dtype=d.dtype,
                             out=d[i])
    return scaled_mm


def check(ops: Operands, dtype: str, alpha: float, beta: float, seed: int = 99) -> str | None:
    """Freivalds' check: D @ x against alpha * A @ (B @ x) + beta * C @ x in float64.

    Costs O(mn + mk + kn) instead of a second GEMM. Each entry may differ by ``tol`` times the
    same product taken over absolute values (the rounding error bound). Returns an error
    message, or None when D is right.
    """
    spec = DTYPES[dtype]
    eff_alpha = alpha if spec.path != "int_mm" else 1.0
    eff_beta = beta if ops.c is not None else 0.0
    n = ops.d.shape[2]
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand((ops.d.shape[0], n, 1), generator=gen, dtype=torch.float64).to(ops.d.device) + 0.5
    a, b = ops.a.to(torch.float64), ops.b.to(torch.float64)
    lhs = torch.bmm(ops.d.to(torch.float64), x)
    rhs = eff_alpha * torch.bmm(a, torch.bmm(b, x))
    bound = abs(eff_alpha) * torch.bmm(a.abs(), torch.bmm(b.abs(), x))
    if eff_beta:
        c = ops.c.to(torch.float64)
        rhs = rhs + eff_beta * torch.bmm(c, x)
        bound = bound + abs(eff_beta) * torch.bmm(c.abs(), x)
    err = (lhs - rhs).abs()
    limit = spec.tol * bound + 1e-12
    bad = int((err > limit).sum().item())
    if not torch.isfinite(lhs).all():
        return "result holds non-finite values"
    if bad:
        worst = float((err / limit).max().item())
        return f"{bad} of {lhs.numel()} row checks exceed the {dtype} tolerance (worst {worst:.3g}x)"
    return None


def graphed(call: Callable[[], None], device: Any) -> Callable[[], None]:
    """``call`` captured once in a CUDA/HIP graph: the returned function replays it (one launch
    for a whole batch loop). Warm-up on a side stream first, as PyTorch's graph notes advise, so
    lazily created BLAS handles and workspaces exist before capture. Raises what capture raises."""
    side = torch.cuda.Stream(device=device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        call()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    return graph.replay


class TorchGemm:
    """The GEMM the benchmark times, as one object a config can carry (tests substitute one that
    computes the wrong thing, so the check must catch it)."""

    make_operands = staticmethod(make_operands)
    gemm_call = staticmethod(gemm_call)
    check = staticmethod(check)
    graphed = staticmethod(graphed)
