"""Collective names and bus-bandwidth factors as nccl-tests defines them (doc/PERFORMANCE.md).

busbw = algbw * factor(n) for n ranks. Imported logs are checked against these, and a log that
does not name its collective (a table copied without its command line) is identified with them.
"""

from __future__ import annotations

import re

from clusterbench.bench.collectives.spec import BUSBW_FACTORS

# Spellings seen in program names (all_reduce_perf_mpi), rccl-tests CSV (AllReduce), file names.
# Longest first, so "allreduce" wins over "reduce" and "allgather" over "gather".
_ALIASES = [
    ("allreduce", "all_reduce"), ("allgather", "all_gather"), ("reducescatter", "reduce_scatter"),
    ("alltoallv", "alltoallv"), ("alltoall", "alltoall"), ("broadcast", "broadcast"),
    ("sendrecv", "sendrecv"), ("hypercube", "hypercube"), ("gather", "gather"),
    ("scatter", "scatter"), ("reduce", "reduce"), ("bcast", "broadcast"),
]


def normalize_op(text: str) -> str | None:
    """``all_reduce_perf_mpi``, ``AllReduce``, ``/opt/bin/all_reduce_perf`` -> ``all_reduce``."""
    name = text.strip().rsplit("/", 1)[-1].lower()
    name = re.sub(r"_perf.*$", "", name)
    key = name.replace("_", "").replace("-", "")
    for alias, op in _ALIASES:
        if key == alias:
            return op
    return None


def op_from_filename(name: str) -> str | None:
    """A collective named inside a file name (``nccl_allreduce.log``), or None."""
    key = name.rsplit("/", 1)[-1].lower().replace("_", "").replace("-", "")
    for alias, op in _ALIASES:
        if alias in key:
            return op
    return None


def ranks_from_ratio(op: str, algbw: float, busbw: float) -> int | None:
    """Solve busbw/algbw = factor(n) for n from two values printed with two decimals.

    None where the factor does not depend on n, or where the rounding of the printed values
    leaves n uncertain by more than a third of a rank (large n needs large bandwidths).
    """
    ratio = busbw / algbw
    dratio = ratio * (0.005 / algbw + 0.005 / busbw)
    if op == "all_reduce" and ratio < 2:
        n, dn = 2 / (2 - ratio), 2 / (2 - ratio) ** 2 * dratio
    elif op in BUSBW_FACTORS and BUSBW_FACTORS[op](4) != 1.0 and ratio < 1:
        n, dn = 1 / (1 - ratio), 1 / (1 - ratio) ** 2 * dratio
    else:
        return None
    rounded = round(n)
    return rounded if rounded >= 2 and dn < 0.3 and abs(n - rounded) < 0.3 else None


def infer_op(has_redop: bool, root: int, ratio: float | None, ranks: int | None) -> str | None:
    """Which collective a table shows, from its redop and root columns and busbw/algbw.

    Ambiguous cases (all_gather vs alltoall, gather vs scatter) return None: a wrong name would
    put the run in the wrong family.
    """
    if ratio is None:
        return None

    def closest(candidates: list[str]) -> str:
        if ranks:
            return min(candidates, key=lambda op: abs(BUSBW_FACTORS[op](ranks) - ratio))
        return candidates[0] if ratio >= 0.99 else candidates[1]

    if has_redop and root < 0:
        return closest(["all_reduce", "reduce_scatter"])
    if has_redop:
        return "reduce"
    if root >= 0:
        return "broadcast" if abs(ratio - 1.0) < 0.02 else None
    return "sendrecv" if abs(ratio - 1.0) < 0.02 and (ranks or 2) > 1 else None
