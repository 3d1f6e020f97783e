"""The PyTorch implementation of the stream kernels (one backend; tests substitute others).

Every kernel writes into preallocated arrays (``out=``, in-place ops) so no timed call allocates.
``torch.add(b, c, alpha=s, out=a)`` is a single fused pass, and ``torch.dot`` reduces without the
temporary that ``(a * b).sum()`` would allocate. PyTorch has no single op for Nstream's
``a += b + s*c``: it runs as two passes, and ``KERNELS`` (``families/stream/spec.py``) counts the
6 arrays they move.

``torch.dot`` takes at most 2^31 - 1 elements on a GPU (cuBLAS/hipBLAS take an int count), and
the check's float64 temporaries would need several times the arrays' memory: both work in chunks.
"""

from __future__ import annotations

from typing import Any

import torch

from clusterbench.families.stream.spec import SCALAR, START_A, START_B, START_C

TORCH_DTYPES = {"float": torch.float32, "double": torch.float64}
DOT_CHUNK = 1 << 30      # elements per torch.dot call: below the BLAS int limit 2^31 - 1
CHECK_CHUNK = 1 << 24    # elements per step of the check: 16 Mi float64 temporaries (128 MiB)


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
        # a += b + s*c as two passes (a += b; a += s*c): 6 arrays of traffic, counted as such
        self.a.add_(self.b).add_(self.c, alpha=self.scalar)

    def dot(self) -> Any:
        n = self.a.numel()
        if n <= DOT_CHUNK:
            return torch.dot(self.a, self.b)
        parts = [torch.dot(self.a[i:i + DOT_CHUNK], self.b[i:i + DOT_CHUNK]) for i in range(0, n, DOT_CHUNK)]
        return torch.stack(parts).sum()

    def mean_abs_errors(self, a: float, b: float, c: float) -> tuple[float, float, float]:
        """Mean |x - expected| of each array, reduced in float64 on the device, a chunk at a time
        (the fit check counts the three arrays only)."""
        def mean_abs(x: Any, v: float) -> float:
            total = torch.zeros((), dtype=torch.float64, device=x.device)
            for i in range(0, x.numel(), CHECK_CHUNK):
                total += (x[i:i + CHECK_CHUNK].double() - v).abs().sum()
            return float(total.item()) / max(1, x.numel())

        return mean_abs(self.a, a), mean_abs(self.b, b), mean_abs(self.c, c)

    def release(self) -> None:
        del self.a, self.b, self.c
