"""Memory bandwidth (BabelStream's kernels) as data: what each kernel does, how many arrays it
moves, the element types, BabelStream's start values, and the metrics native runs and imported
logs record. Pure, no torch.

Bandwidth follows BabelStream: bytes = arrays moved x sizeof(element) x array size, divided by the
kernel's *minimum* time over the timed iterations (the first iteration is a warm-up and not timed).
The arrays are those the kernel as run here reads and writes: BabelStream's counts, except
Nstream (6, two passes; BabelStream's fused kernel moves 4). The analytic check of the arrays
is the benchmark's (``bench/stream/check.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterbench.families.base import Metric


@dataclass(frozen=True)
class Kernel:
    name: str
    arrays: int    # arrays read + written per element
    formula: str


# Run order within one iteration. Nstream runs before Triad so that Triad's overwrite of ``a``
# keeps the values bounded when both are selected.
KERNELS: tuple[Kernel, ...] = (
    Kernel("Copy", 2, "c = a"),
    Kernel("Mul", 2, "b = s * c"),
    Kernel("Add", 3, "c = a + b"),
    # BabelStream's fused Nstream moves 4 arrays; PyTorch has no one op for it and runs two
    # passes (a += b, then a += s*c): 6 arrays move, and 6 are counted (BabelStream's rule:
    # count what the kernel reads and writes).
    Kernel("Nstream", 6, "a += b; a += s * c"),
    Kernel("Triad", 3, "a = b + s * c"),
    Kernel("Dot", 2, "sum = a . b"),
)
BY_NAME = {k.name.lower(): k for k in KERNELS}
NAMES = tuple(k.name for k in KERNELS)

# BabelStream's start values and scalar.
START_A, START_B, START_C, SCALAR = 0.1, 0.2, 0.0, 0.4

DTYPES = {"float": 4, "double": 8}
ARRAYS_ALLOCATED = 3  # a, b, c


def kernel(name: str) -> Kernel:
    k = BY_NAME.get(name.lower())
    if k is None:
        raise KeyError(name)
    return k


def bytes_moved(kernel_name: str, array_size: int, elem_size: int) -> int:
    return kernel(kernel_name).arrays * elem_size * array_size


def bandwidth_gbs(kernel_name: str, array_size: int, elem_size: int, seconds: float) -> float:
    """GB/s (1e9 B/s) for one execution of ``kernel_name`` that took ``seconds``."""
    return bytes_moved(kernel_name, array_size, elem_size) / seconds / 1e9


def footprint(array_size: int, elem_size: int) -> int:
    """Device memory the three arrays take."""
    return ARRAYS_ALLOCATED * array_size * elem_size


def ordered(names: list[str] | tuple[str, ...]) -> list[str]:
    """Canonical spellings in run order; raises KeyError for an unknown kernel."""
    wanted = {kernel(n).name for n in names}
    return [k.name for k in KERNELS if k.name in wanted]


# -- how large the arrays must be to measure memory, not cache ----------------------------------
# BabelStream's default array size, and its rule: each array at least 4x the last-level cache
# (or the cache serves part of the traffic, and Copy on a 2-core VM read 47-80 GB/s from a 32 MiB
# L3 where its memory gives 22 GB/s).
BABELSTREAM_SIZE = 1 << 25
CACHE_FACTOR = 4
# What a size measured (row param ``memory``): every array at least CACHE_FACTOR x the LLC; the
# three arrays inside the LLC; or in between, where part of the traffic stays in the cache.
MAIN, CACHE, MIXED = "main", "cache", "mixed"


def default_array_size(llc_bytes: int | None, elem_size: int) -> int:
    """Elements per array when none is asked for: BabelStream's 2^25, or the power of two that
    makes each array at least 4x the last-level cache when that is larger (an EPYC with 384 MiB
    of L3 needs 2^28 doubles)."""
    need = -(-CACHE_FACTOR * (llc_bytes or 0) // elem_size)
    return max(BABELSTREAM_SIZE, 1 << max(0, need - 1).bit_length())


def memory_level(array_size: int, elem_size: int, llc_bytes: int | None) -> str | None:
    """Where a size's traffic lands: ``main`` memory, ``cache`` or ``mixed``; None when the
    last-level cache is unknown."""
    if not llc_bytes:
        return None
    if array_size * elem_size >= CACHE_FACTOR * llc_bytes:
        return MAIN
    return CACHE if footprint(array_size, elem_size) <= llc_bytes else MIXED


# -- metrics ------------------------------------------------------------------------------------
BENCHMARK = "stream"
BANDWIDTH = Metric("bandwidth", "GB/s", headline=True, peak="memory_bandwidth",
                   about="bytes moved / minimum time")
TIME = Metric("time_us", "us", higher_is_better=False, spread="stat",
              about="time per kernel call, with stat min/max/avg (and median/stddev/mad/first natively)")
METRICS = (BANDWIDTH, TIME)
