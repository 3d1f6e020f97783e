"""The collective spec table: per op, how a size becomes element counts, the bus-bandwidth
factor, and what in-place means. Pure functions, no torch.

Definitions follow nccl-tests (``src/*.cu`` and doc/PERFORMANCE.md):

* a requested size ``B`` becomes ``count = B // sizeof(dtype)`` elements; gather-type ops then
  round that down to a multiple of the rank count (``count // n`` per rank), as nccl-tests does;
* the ``size`` column is ``max(send, recv)`` bytes and the ``count`` column the per-rank count
  nccl-tests passes to the library (``paramcount``);
* ``algbw = size / time / 1e9`` (GB/s) and ``busbw = algbw * factor(n)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# nccl-tests' type names -> (torch dtype attribute, bytes per element), in nccl-tests' order
# for ``-d all``.
DTYPES: dict[str, tuple[str, int]] = {
    "int8": ("int8", 1),
    "uint8": ("uint8", 1),
    "int32": ("int32", 4),
    "int64": ("int64", 8),
    "half": ("float16", 2),
    "float": ("float32", 4),
    "double": ("float64", 8),
    "bfloat16": ("bfloat16", 2),
}
DTYPE_ALIASES = {"char": "int8", "int": "int32", "float16": "half", "fp16": "half", "float32": "float",
                 "fp32": "float", "float64": "double", "fp64": "double", "bf16": "bfloat16"}

# Reduction operators in nccl-tests' order for ``-o all``.
REDOPS = ("sum", "prod", "max", "min", "avg")

FLOAT_DTYPES = frozenset({"half", "float", "double", "bfloat16"})


@dataclass(frozen=True)
class Counts:
    """Element counts of one row on every rank, from nccl-tests' GetCollByteCount."""

    send: int    # elements in the send buffer
    recv: int    # elements in the receive buffer
    param: int   # the count passed to the collective: nccl-tests' ``count`` column


def _same(count: int, n: int) -> Counts:
    return Counts(count, count, count)


def _gather(count: int, n: int) -> Counts:       # all_gather: each rank sends count/n
    per = count // n
    return Counts(per, per * n, per)


def _scatter(count: int, n: int) -> Counts:      # reduce_scatter: each rank receives count/n
    per = count // n
    return Counts(per * n, per, per)


def _alltoall(count: int, n: int) -> Counts:     # n chunks of count/n each way
    per = count // n
    return Counts(per * n, per * n, per)


def _factor_allreduce(n: int) -> float:
    return 2.0 * (n - 1) / n


def _factor_gather(n: int) -> float:
    return (n - 1) / n


def _factor_one(n: int) -> float:
    return 1.0


# busbw / algbw for every collective nccl-tests measures, including those clusterbench only
# imports (gather, scatter, hypercube): the one table importers and theory also use.
BUSBW_FACTORS: dict[str, Callable[[int], float]] = {
    "all_reduce": _factor_allreduce,
    "all_gather": _factor_gather,
    "reduce_scatter": _factor_gather,
    "alltoall": _factor_gather,
    "gather": _factor_gather,
    "scatter": _factor_gather,
    "hypercube": _factor_gather,
    "broadcast": _factor_one,
    "reduce": _factor_one,
    "sendrecv": _factor_one,
}


@dataclass(frozen=True)
class OpSpec:
    name: str
    counts: Callable[[int, int], Counts]      # (count from size, ranks) -> Counts
    busbw_factor: Callable[[int], float]      # ranks -> factor
    reduces: bool                             # takes a reduction operator (-o)
    has_root: bool                            # takes a root (-r)
    # PyTorch offers only an in-place form (``dist.all_reduce(t)``): there is no out-of-place
    # call to time, so those columns print N/A rather than a copy-inflated number.
    out_of_place: bool = True
    # nccl-tests does not check in-place alltoall and sendrecv (#wrong prints N/A).
    in_place_checked: bool = True


SPECS: dict[str, OpSpec] = {
    "all_reduce": OpSpec("all_reduce", _same, _factor_allreduce, reduces=True, has_root=False,
                         out_of_place=False),
    "all_gather": OpSpec("all_gather", _gather, _factor_gather, reduces=False, has_root=False),
    "reduce_scatter": OpSpec("reduce_scatter", _scatter, _factor_gather, reduces=True, has_root=False),
    "broadcast": OpSpec("broadcast", _same, _factor_one, reduces=False, has_root=True,
                        out_of_place=False),
    "reduce": OpSpec("reduce", _same, _factor_one, reduces=True, has_root=True, out_of_place=False),
    "alltoall": OpSpec("alltoall", _alltoall, _factor_gather, reduces=False, has_root=False,
                       in_place_checked=False),
    "sendrecv": OpSpec("sendrecv", _same, _factor_one, reduces=False, has_root=False,
                       in_place_checked=False),
}
OPS = tuple(SPECS)


def element_size(dtype: str) -> int:
    return DTYPES[dtype][1]


def row_counts(op: str, size: int, dtype: str, ranks: int) -> Counts:
    """Counts for a requested size in bytes (rounded down as nccl-tests does)."""
    return SPECS[op].counts(size // element_size(dtype), ranks)


def row_bytes(op: str, counts: Counts, dtype: str) -> int:
    """The ``size`` column: max(send, recv) bytes."""
    return max(counts.send, counts.recv) * element_size(dtype)


def algbw(size_bytes: int, seconds: float) -> float:
    """GB/s (1e9 bytes per second)."""
    return size_bytes / seconds / 1e9 if seconds > 0 else 0.0


def busbw(op: str, algbw_gbs: float, ranks: int) -> float:
    return algbw_gbs * SPECS[op].busbw_factor(ranks)


def placements(op: str) -> tuple[str, ...]:
    """Placements timed for ``op``: ``out`` (separate buffers) and ``in`` (one buffer)."""
    return ("out", "in") if SPECS[op].out_of_place else ("in",)


def sweep_sizes(minbytes: int, maxbytes: int, stepfactor: int, stepbytes: int) -> list[int]:
    """nccl-tests' size loop: multiply by ``stepfactor`` when it is > 1, else add ``stepbytes``."""
    sizes = []
    size = minbytes
    while size <= maxbytes:
        sizes.append(size)
        size = size * stepfactor if stepfactor > 1 else size + stepbytes
    return sizes
