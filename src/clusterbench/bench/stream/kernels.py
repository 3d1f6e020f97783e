"""The PyTorch implementation of the stream kernels (one backend; tests substitute others).

Every kernel writes into preallocated arrays (``out=``, in-place ops) so no timed call allocates.
On CPU, ``torch.add(b, c, alpha=s, out=a)`` is a single fused pass, and ``torch.dot`` reduces
without the temporary that ``(a * b).sum()`` would allocate.
"""

from __future__ import annotations

from typing import Any

import torch

from clusterbench.bench.stream.spec import SCALAR, START_A, START_B, START_C

TORCH_DTYPES = {"float": torch.float32, "double": torch.float64}


class TorchStream:
    def __init__(self, array_size: int, dtype: str, device: Any) -> None:
        t = TORCH_DTYPES[dtype]
        self.scalar = SCALAR
        self.a = torch.empty(array_size, dtype=t, device=device)
        self.b = torch.empty(array_size, dtype=t, device=device)
        self.c = torch.empty(array_size, dtype=t, device=device)

    def init_arrays(self) -> None:
        self.a.fill_(START_A)
        self.b.fill_(START_B)
        self.c.fill_(START_C)

    def copy(self) -> None:
        self.c.copy_(self.a)

    def mul(self) -> None:
        torch.mul(self.c, self.scalar, out=self.b)

    def add(self) -> None:
        torch.add(self.a, self.b, out=self.c)

    def triad(self) -> None:
        torch.add(self.b, self.c, alpha=self.scalar, out=self.a)

    def nstream(self) -> None:
        # a += b + s*c, as two fused passes over a (the extra write is not counted, as BabelStream
        # counts 4 arrays for this kernel regardless of how a backend schedules it).
        self.a.add_(self.b).add_(self.c, alpha=self.scalar)

    def dot(self) -> Any:
        return torch.dot(self.a, self.b)

    def mean_abs_errors(self, a: float, b: float, c: float) -> tuple[float, float, float]:
        """Mean |x - expected| of each array, reduced in float64 on the device."""
        return tuple(float((x.double() - v).abs().mean().item())  # type: ignore[return-value]
                     for x, v in ((self.a, a), (self.b, b), (self.c, c)))

    def release(self) -> None:
        del self.a, self.b, self.c
