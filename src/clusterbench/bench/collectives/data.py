"""Deterministic per-rank inputs and the exact outputs every op must produce.

Values are small integers, exact in every dtype (int8 ... bfloat16), and the expected output has
a closed form, so checking costs O(count) however many ranks there are:

* sum: element ``g`` is ``1 + (g // n) % 4`` on rank ``g % n`` and 0 elsewhere, so the sum is
  that value exactly (a missing or doubled rank changes it) and never overflows, whatever ``n``;
* prod: 2 on rank ``g % n`` where ``(g // n)`` is odd, else 1: the product is 1 or 2;
* min / max: ``(g + rank) % 8``: closed forms below;
* avg: every rank holds ``1 + g % 4``, so the mean is that value (floats compared within a few
  ulps, since libraries may pre-scale by 1/n);
* data-moving ops carry ``(13 * source_rank + g) % 61``: each element names where it came from.

Functions take ``idx``, an int64 tensor of element indices, and return int64 tensors; callers
cast to the benchmark dtype. Which rule each op uses is in ``calls.CALLS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clusterbench.families.collectives.spec import FLOAT_DTYPES

Tensor = Any  # torch.Tensor; torch is imported lazily by the callers
CHUNK = 1 << 24  # elements generated or compared at a time, to bound temporary memory

# Relative tolerance for avg on floating types (sum then divide, or pre-scale then sum).
AVG_RTOL = {"half": 2e-3, "bfloat16": 1.6e-2, "float": 1e-6, "double": 1e-12}


def tagged(source: Any, idx: Tensor) -> Tensor:
    return (13 * source + idx) % 61


def reduce_input(redop: str, rank: int, n: int, idx: Tensor) -> Tensor:
    import torch

    owner = (idx % n) == rank
    if redop == "sum":
        return torch.where(owner, 1 + (idx // n) % 4, torch.zeros_like(idx))
    if redop == "prod":
        return torch.where(owner & ((idx // n) % 2 == 1), torch.full_like(idx, 2), torch.ones_like(idx))
    if redop in ("min", "max"):
        return (idx + rank) % 8
    if redop == "avg":
        return 1 + idx % 4
    raise ValueError(f"unknown reduction {redop!r}")


def reduce_expected(redop: str, n: int, idx: Tensor) -> Tensor:
    import torch

    if redop == "sum":
        return 1 + (idx // n) % 4
    if redop == "prod":
        return torch.where((idx // n) % 2 == 1, torch.full_like(idx, 2), torch.ones_like(idx))
    a = idx % 8
    if redop == "min":  # a, a+1, ... a+n-1 (mod 8) wraps through 0 once a+n-1 reaches 8
        return torch.where(a + n - 1 >= 8, torch.zeros_like(a), a)
    if redop == "max":  # ... and reaches 7 once a+n-1 reaches 7
        return torch.clamp(a + n - 1, max=7)
    if redop == "avg":
        return 1 + idx % 4
    raise ValueError(f"unknown reduction {redop!r}")


def write(t: Tensor, values: Callable[[Tensor], Tensor]) -> None:
    """Fill ``t`` (1-D) with ``values(idx)``, generated on its device in chunks."""
    import torch

    n = t.numel()
    for start in range(0, n, CHUNK):
        stop = min(n, start + CHUNK)
        idx = torch.arange(start, stop, dtype=torch.int64, device=t.device)
        t[start:stop].copy_(values(idx))


def count_wrong(t: Tensor, values: Callable[[Tensor], Tensor], dtype: str, redop: str) -> int:
    """Elements of ``t`` that differ from ``values(idx)`` cast to ``t``'s dtype."""
    import torch

    wrong = 0
    n = t.numel()
    for start in range(0, n, CHUNK):
        stop = min(n, start + CHUNK)
        idx = torch.arange(start, stop, dtype=torch.int64, device=t.device)
        want = values(idx).to(t.dtype)
        got = t[start:stop]
        if redop == "avg" and dtype in FLOAT_DTYPES:
            diff = (got.double() - want.double()).abs()
            bad = ~(diff <= AVG_RTOL[dtype] * want.double().abs())
        else:
            bad = got != want
        wrong += int(bad.sum().item())
    return wrong
