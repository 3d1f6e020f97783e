"""Deterministic per-rank inputs and the exact outputs every op must produce.

Values are small integers, exact in every dtype (int8 ... bfloat16), and the expected output has
a closed form, so checking costs O(count) however many ranks there are:

* sum: element ``g`` is ``1 + (g // n) % 4`` on rank ``g % n`` and 0 elsewhere, so the sum is
  that value exactly (a missing or doubled rank changes it) and never overflows, whatever ``n``;
* prod: 2 on rank ``g % n`` where ``(g // n)`` is odd, else 1: the product is 1 or 2;
* min / max: ``(g + rank) % 8``: closed forms below;
* avg: like sum, one owner per element, which holds ``n * e`` (the others 0), so the average is
  ``e``; see ``avg_value`` for why this is exact or provably within ``AVG_RTOL`` for any ``n``;
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

# Unit roundoff u = 2^-p of each floating type (p = significand bits including the hidden one).
UNIT_ROUNDOFF = {"half": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float": 2.0 ** -24, "double": 2.0 ** -53}
# avg on floating types: |result - e| <= 4 u e. The owner's value n*e is rounded once when written
# (u), NCCL/RCCL scale it by 1/n rounded to the element type (u) and round the product (u); or a
# library sums then divides (2 roundings): at most (1+u)^3 - 1 < 3.001 u relative either way. The
# n - 1 other terms are exact zeros (0 * s = 0, x + 0 = x in IEEE arithmetic), so neither n nor
# the order of the reduction (ring, tree) adds error. tests/bench/collectives/test_data.py emulates it for every
# n up to 4096.
AVG_RTOL = {name: 4.0 * u for name, u in UNIT_ROUNDOFF.items()}
# Largest value of each integer type: avg's integer inputs never overflow, in any partial sum.
INT_MAX = {"int8": 2 ** 7 - 1, "uint8": 2 ** 8 - 1, "int32": 2 ** 31 - 1, "uint32": 2 ** 32 - 1,
           "int64": 2 ** 63 - 1, "uint64": 2 ** 64 - 1}


def tagged(source: Any, idx: Tensor) -> Tensor:
    return (13 * source + idx) % 61


def avg_value(dtype: str, n: int, idx: Tensor) -> Tensor:
    """The average element ``idx`` must have: ``e`` in 1..4 (its owner holds ``n * e``).

    Integers are averaged by summing in the element type, then dividing (NCCL's SumPostDiv): with
    ``n * e`` on the owner and zeros elsewhere the sum is ``n * e`` exactly and the division
    exact, provided ``n * e`` fits the type. Where ``4 n`` does not (int8 from 32 ranks, uint8 from
    64), ``e`` runs over ``0 .. max // n`` instead, which is only 0 beyond 127 (int8) or 255
    (uint8) ranks: an average of such a narrow type cannot be more than 0 without overflowing."""
    if dtype in FLOAT_DTYPES:
        return 1 + (idx // n) % 4
    top = INT_MAX[dtype] // n
    if top >= 4:
        return 1 + (idx // n) % 4
    return (idx // n) % (top + 1)


def reduce_input(redop: str, rank: int, n: int, idx: Tensor, dtype: str = "float") -> Tensor:
    import torch

    owner = (idx % n) == rank
    if redop == "sum":
        return torch.where(owner, 1 + (idx // n) % 4, torch.zeros_like(idx))
    if redop == "prod":
        return torch.where(owner & ((idx // n) % 2 == 1), torch.full_like(idx, 2), torch.ones_like(idx))
    if redop in ("min", "max"):
        return (idx + rank) % 8
    if redop == "avg":
        return torch.where(owner, n * avg_value(dtype, n, idx), torch.zeros_like(idx))
    raise ValueError(f"unknown reduction {redop!r}")


def reduce_expected(redop: str, n: int, idx: Tensor, dtype: str = "float") -> Tensor:
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
        return avg_value(dtype, n, idx)
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
