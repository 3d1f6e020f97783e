"""The analytic check of a stream run: the check replays the same scalar recurrence the kernels
apply to every element, from BabelStream's start values (``families/stream/spec.py``), and
compares the arrays (and the Dot sum) with it."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from clusterbench.families.stream.spec import SCALAR, START_A, START_B, START_C


@dataclass(frozen=True)
class Gold:
    a: float
    b: float
    c: float
    dot: float | None


def gold(kernels: list[str], numtimes: int, array_size: int, dtype: str) -> Gold:
    """The values every element must hold after ``numtimes`` iterations of ``kernels``.

    Computed in the benchmark's precision (numpy float32/float64), as the device computes it.
    """
    t = np.float32 if dtype == "float" else np.float64
    a, b, c, s = t(START_A), t(START_B), t(START_C), t(SCALAR)
    run = set(kernels)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(numtimes):
            if "Copy" in run:
                c = a
            if "Mul" in run:
                b = s * c
            if "Add" in run:
                c = a + b
            if "Nstream" in run:
                a = a + (b + s * c)
            if "Triad" in run:
                a = b + s * c
    dot = float(a) * float(b) * array_size if "Dot" in run else None
    return Gold(float(a), float(b), float(c), dot)


def tolerances(dtype: str) -> tuple[float, float]:
    """(relative tolerance of the mean array error, relative tolerance of the Dot sum).

    Arrays: 100 machine epsilons, as BabelStream. Dot: 1e-8 in double; in float a sum of
    millions of equal terms loses about 0.3% to rounding in any accumulation order, so 5%.
    """
    eps = float(np.finfo(np.float32 if dtype == "float" else np.float64).eps)
    return eps * 100.0, (1e-8 if dtype == "double" else 5e-2)


def check(g: Gold, mean_abs_err: tuple[float, float, float], dot: float | None,
          dtype: str) -> list[str]:
    """Compare measured mean absolute errors of a, b, c and the Dot sum with the gold values.

    Returns one message per failed comparison (empty when all pass).
    """
    rel, dot_rel = tolerances(dtype)
    errors = []
    for name, gv, err in zip("abc", (g.a, g.b, g.c), mean_abs_err):
        if not math.isfinite(gv):
            errors.append(f"array {name}: expected value overflows {dtype}; lower --numtimes")
            continue
        scale = abs(gv) if gv != 0 else 1.0
        if not math.isfinite(err) or err / scale > rel:
            errors.append(f"array {name}: mean error {err:.3g} vs expected {gv:.6g} "
                          f"(relative {err / scale:.3g} > {rel:.3g})")
    if g.dot is not None and dot is not None:
        scale = abs(g.dot) if g.dot != 0 else 1.0
        err = abs(dot - g.dot) / scale
        if not math.isfinite(err) or err > dot_rel:
            errors.append(f"Dot: sum {dot:.9g} vs expected {g.dot:.9g} (relative {err:.3g} > {dot_rel:.3g})")
    return errors
