"""What BabelStream's kernels move, written out here rather than read from the kernel table, so
tests check the table (and the bandwidth of native runs) against an independent copy."""

from __future__ import annotations

# Arrays read + written per element: BabelStream's counts (src/main.cpp), but Nstream, which
# PyTorch runs as two passes (a += b, then a += s*c) that move 6 arrays, not the fused kernel's 4.
ARRAYS = {"Copy": 2, "Mul": 2, "Add": 3, "Triad": 3, "Dot": 2, "Nstream": 6}
