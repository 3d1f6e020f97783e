"""The collective family's facts: per op, its names, how a size becomes element counts, the
bus-bandwidth factor and what in-place means; the metrics every producer records. Pure, no torch.

A new op is one ``OpSpec`` row here and its PyTorch call in ``bench/collectives/calls.py``.

Definitions follow nccl-tests (``src/*.cu`` and doc/PERFORMANCE.md):

* a requested size ``B`` becomes ``count = B // sizeof(dtype)`` elements; gather-type ops
  (all_gather, reduce_scatter, alltoall) then take ``count // n`` per rank, trimmed down to whole
  16-byte units (``ALIGN``), as nccl-tests does since v2.13.12 (its ``GetCollByteCount``), so each
  rank's slot starts 16-byte aligned on any rank count;
* the ``size`` column is ``max(send, recv)`` bytes and the ``count`` column the per-rank count
  nccl-tests passes to the library (``paramcount``);
* ``algbw = size / time / 1e9`` (GB/s) and ``busbw = algbw * factor(n)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from clusterbench.families.base import Metric

# nccl-tests' type names -> (torch dtype attribute, bytes per element), in nccl-tests' order
# for ``-d all``.
DTYPES: dict[str, tuple[str, int]] = {
    "int8": ("int8", 1),
    "uint8": ("uint8", 1),
    "int32": ("int32", 4),
    "uint32": ("uint32", 4),
    "int64": ("int64", 8),
    "uint64": ("uint64", 8),
    "half": ("float16", 2),
    "float": ("float32", 4),
    "double": ("float64", 8),
    "bfloat16": ("bfloat16", 2),
}
DTYPE_ALIASES = {"char": "int8", "int": "int32", "float16": "half", "fp16": "half", "float32": "float",
                 "fp32": "float", "float64": "double", "fp64": "double", "bf16": "bfloat16"}
# Bytes per element of every type a nccl-tests or rccl-tests result names (src/common.cu
# test_typenames): the types above, the old names char/int, those only the tools run (unsigned
# 32/64-bit, nccl-tests' f8e4m3/f8e5m2, rccl-tests' fp8_e4m3/fp8_e5m2). An import reads a
# table's count column against it.
DTYPE_SIZES: dict[str, int] = {**{name: size for name, (_, size) in DTYPES.items()},
                               **{alias: DTYPES[name][1] for alias, name in DTYPE_ALIASES.items()},
                               "uint32": 4, "uint64": 8, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}

# Reduction operators in nccl-tests' order for ``-o all``.
REDOPS = ("sum", "prod", "max", "min", "avg")

FLOAT_DTYPES = frozenset({"half", "float", "double", "bfloat16"})


@dataclass(frozen=True)
class Counts:
    """Element counts of one row on every rank, from nccl-tests' GetCollByteCount."""

    send: int    # elements in the send buffer
    recv: int    # elements in the receive buffer
    param: int   # the count passed to the collective: nccl-tests' ``count`` column


ALIGN = 16  # bytes: gather-type ops' per-rank count is a whole number of these


def _per_rank(count: int, n: int, elt: int) -> int:
    """``count // n`` elements trimmed to whole ``ALIGN``-byte units (an element wider than the
    unit needs no trimming)."""
    unit = max(1, ALIGN // elt)
    return count // n // unit * unit


def _same(count: int, n: int, elt: int) -> Counts:
    return Counts(count, count, count)


def _gather(count: int, n: int, elt: int) -> Counts:       # all_gather: each rank sends count/n
    per = _per_rank(count, n, elt)
    return Counts(per, per * n, per)


def _scatter(count: int, n: int, elt: int) -> Counts:      # reduce_scatter: each rank receives count/n
    per = _per_rank(count, n, elt)
    return Counts(per * n, per, per)


def _alltoall(count: int, n: int, elt: int) -> Counts:     # n chunks of count/n each way
    per = _per_rank(count, n, elt)
    return Counts(per * n, per * n, per)


def _factor_allreduce(n: int) -> float:
    return 2.0 * (n - 1) / n


def _factor_gather(n: int) -> float:
    return (n - 1) / n


def _factor_one(n: int) -> float:
    return 1.0


@dataclass(frozen=True)
class OpSpec:
    name: str
    busbw_factor: Callable[[int], float]      # ranks -> busbw / algbw
    # (count from size, ranks, bytes per element) -> Counts; None for ops clusterbench only imports
    counts: Callable[[int, int, int], Counts] | None = None
    reduces: bool = False                     # takes a reduction operator (-o)
    has_root: bool = False                    # takes a root (-r)
    # nccl-tests does not check in-place alltoall and sendrecv (#wrong prints N/A).
    in_place_checked: bool = True
    aliases: tuple[str, ...] = ()             # other spellings: program names, rccl-tests CSV names
    # gather-type: each rank's count is the row's count split over the ranks (nccl-tests' count
    # column is that share: size = count x element size x ranks, where the other ops print size =
    # count x element size), trimmed to whole ``ALIGN`` units where clusterbench runs the op
    splits_count: bool = False

    @property
    def runnable(self) -> bool:
        return self.counts is not None


# Every collective nccl-tests measures, in nccl-tests' order; the runnable ones first.
TABLE: tuple[OpSpec, ...] = (
    OpSpec("all_reduce", _factor_allreduce, _same, reduces=True, aliases=("allreduce",)),
    OpSpec("all_gather", _factor_gather, _gather, splits_count=True, aliases=("allgather",)),
    OpSpec("reduce_scatter", _factor_gather, _scatter, reduces=True, splits_count=True, aliases=("reducescatter",)),
    OpSpec("broadcast", _factor_one, _same, has_root=True, aliases=("bcast",)),
    OpSpec("reduce", _factor_one, _same, reduces=True, has_root=True),
    OpSpec("alltoall", _factor_gather, _alltoall, in_place_checked=False, splits_count=True, aliases=("all_to_all",)),
    OpSpec("sendrecv", _factor_one, _same, in_place_checked=False, aliases=("send_recv",)),
    OpSpec("gather", _factor_gather, has_root=True, splits_count=True),
    OpSpec("scatter", _factor_gather, has_root=True, splits_count=True),
    # hypercube_perf's algbw is count x (n-1) elements per time, not size/time, and its busbw
    # equals it (src/hypercube.cu, HyperCubeGetBw: factor 1)
    OpSpec("hypercube", _factor_one, splits_count=True),
    # rccl-tests only; like alltoall, its in-place run is not checked (src/alltoallv.cu)
    OpSpec("alltoallv", _factor_gather, in_place_checked=False, splits_count=True),
)
SPECS: dict[str, OpSpec] = {op.name: op for op in TABLE}
OPS = tuple(op.name for op in TABLE if op.runnable)      # what clusterbench measures
ALL_OPS = tuple(SPECS)                                   # and what it imports

# Spellings -> op, keyed without underscores and dashes; matched longest first, so a file named
# ``allgather.log`` is all_gather, not gather.
_KEYS = sorted(((key.replace("_", "").replace("-", ""), op.name) for op in TABLE
                for key in (op.name, *op.aliases)), key=lambda kv: -len(kv[0]))
OP_SPELLINGS: tuple[tuple[str, str], ...] = tuple(_KEYS)   # (spelling, op), longest first


def op_name(text: str) -> str | None:
    """``all_reduce``, ``AllReduce``, ``all_reduce_perf_mpi``, ``/opt/bin/allreduce_perf`` -> op."""
    name = re.sub(r"_perf.*$", "", text.strip().rsplit("/", 1)[-1].lower())
    key = name.replace("_", "").replace("-", "")
    return next((op for k, op in _KEYS if key == k), None)


def op_in_text(text: str) -> str | None:
    """An op named anywhere inside ``text`` (a file name such as ``nccl_allreduce.log``)."""
    key = text.rsplit("/", 1)[-1].lower().replace("_", "").replace("-", "")
    return next((op for k, op in _KEYS if k in key), None)


# -- metrics ------------------------------------------------------------------------------------
BUSBW = Metric("busbw", "GB/s", headline=True, about="algbw x the op's bus factor")
# spread="stat": per-iteration statistics of a row as time_us rows with a stat param feed the noise
# check (judge/noise.py); the row's own time has no stat
TIME = Metric("time_us", "us", higher_is_better=False, redundant_with=BUSBW.name, spread="stat",
              about="time per op, combined over ranks per -a (default: mean)")
ALGBW = Metric("algbw", "GB/s", link_bound=True, redundant_with=BUSBW.name, about="size / time")
WRONG = Metric("wrong", "", higher_is_better=False, judged=False, fault_count=True,
               about="wrong elements, all ranks")
MAX_ERROR = Metric("max_error", "", higher_is_better=False, judged=False,
                   about="largest error (old nccl-tests' error column)")
AVG_BUSBW = Metric("avg_busbw", "GB/s", about="mean busbw over the run's rows")
OUT_OF_BOUNDS = Metric("out_of_bounds", "", higher_is_better=False, judged=False, fault_count=True,
                       about="results with #wrong > 0, one per rank that had wrong elements (nccl-tests)")
ITER_TIME = Metric("iter_time_us", "us", higher_is_better=False, spread="stat", noise_only=True,
                   about="per-iteration time statistics (nccl-tests' i_min/i_max/i_p99 columns)")
ITER_CV = Metric("iter_cv_pct", "%", higher_is_better=False, judged=False, spread="cv_pct", noise_only=True,
                 about="coefficient of variation of the iterations (nccl-tests' i_cv% column)")
OPTIMAL_ALGBW = Metric("optimal_algbw", "GB/s", about="best algbw over a link (theory)")
OPTIMAL_BUSBW = Metric("optimal_busbw", "GB/s", about="busbw at the optimum: the link speed")
EFFICIENCY = Metric("efficiency", "", about="measured algbw / optimal algbw")
METRICS = (TIME, ALGBW, BUSBW, WRONG, MAX_ERROR, AVG_BUSBW, OUT_OF_BOUNDS, ITER_TIME, ITER_CV,
           OPTIMAL_ALGBW, OPTIMAL_BUSBW, EFFICIENCY)
ROW_METRICS = (TIME, ALGBW, BUSBW, WRONG)     # per size and placement; the rest per run


# Old nccl-tests (v2.0 .. v2.11, src/common.cu: DeltaMaxValue and CheckData) print each row's
# largest absolute error and count the row as out of bounds when it exceeds
# DeltaMaxValue(type) x (nranks - 1): 1e-2 for half and bfloat16, 1e-5 for float, 1e-12 for
# double, and 1e-200 (any error at all) for the integer types.
DELTA_MAX = {"half": 1e-2, "bfloat16": 1e-2, "float": 1e-5, "double": 1e-12}


def error_tolerance(dtype: str, ranks: int) -> float | None:
    """The largest ``max_error`` nccl-tests accepts for a row; None when the rank count is unknown."""
    if ranks <= 0:
        return None
    return DELTA_MAX.get(dtype, 1e-200) * (ranks - 1)


def element_size(dtype: str) -> int:
    return DTYPES[dtype][1]


def row_counts(op: str, size: int, dtype: str, ranks: int) -> Counts:
    """Counts for a requested size in bytes (rounded down as nccl-tests does)."""
    counts = SPECS[op].counts
    assert counts is not None, f"{op} is imported only"
    elt = element_size(dtype)
    return counts(size // elt, ranks, elt)


def per_rank_unit(op: str, dtype: str) -> int:
    """The fewest bytes per rank that make a row: one element, or one 16-byte unit for the ops
    whose per-rank count nccl-tests trims to whole units."""
    elt = element_size(dtype)
    return max(elt, ALIGN) if SPECS[op].splits_count else elt


def row_bytes(op: str, counts: Counts, dtype: str) -> int:
    """The ``size`` column: max(send, recv) bytes."""
    return max(counts.send, counts.recv) * element_size(dtype)


def algbw(size_bytes: int, seconds: float) -> float:
    """GB/s (1e9 bytes per second)."""
    return size_bytes / seconds / 1e9 if seconds > 0 else 0.0


def busbw(op: str, algbw_gbs: float, ranks: int) -> float:
    return algbw_gbs * SPECS[op].busbw_factor(ranks)


def optimal_algbw(op: str, link_bytes_per_s: float, nodes: int) -> float | None:
    """Optimal algbw (GB/s) of ``op`` across ``nodes`` nodes: link speed / bus factor.

    busbw is defined so that a collective at full link speed shows busbw == B, hence the optimum
    algbw is B / factor(n); for all_reduce that is B*n/(2(n-1)). None for ops without a factor.
    """
    spec = SPECS.get(op)
    if spec is None or nodes < 2:
        return None
    return link_bytes_per_s / spec.busbw_factor(nodes) / 1e9


PLACEMENTS = ("out", "in")   # nccl-tests' order: out-of-place (separate buffers), then in-place


def placements(op: str) -> tuple[str, ...]:
    """Placements timed for ``op``: ``out`` (separate send and receive buffers) and ``in`` (the
    send buffer inside the receive buffer), both for every op, as nccl-tests times them."""
    return PLACEMENTS


def sweep_sizes(minbytes: int, maxbytes: int, stepfactor: int, stepbytes: int) -> list[int]:
    """nccl-tests' size loop: multiply by ``stepfactor`` when it is > 1, else add ``stepbytes``."""
    sizes = []
    size = minbytes
    while size <= maxbytes:
        sizes.append(size)
        size = size * stepfactor if stepfactor > 1 else size + stepbytes
    return sizes
