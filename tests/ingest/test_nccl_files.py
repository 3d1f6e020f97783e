"""The count column of an rccl-tests result file (which leaves it out) comes from the collective
spec table: each dtype's size, and for gather-type ops the share of one rank."""

from __future__ import annotations

import pytest

from clusterbench.families.collectives.spec import DTYPE_SIZES, SPECS
from clusterbench.ingest.nccl_files import parse_rccl_results

HEAD = "numCycle,collective,nodes,ranks,ranksPerNode,gpusPerRank,size,type,redop,inplace,time,algbw,busbw,#wrong"
NAMES = {"all_reduce": "AllReduce", "all_gather": "AllGather", "reduce_scatter": "ReduceScatter",
         "alltoall": "AllToAll", "gather": "Gather", "scatter": "Scatter", "broadcast": "Broadcast"}


def _row(op: str, dtype: str, size: int = 1 << 20, ranks: int = 8) -> str:
    """A result line as rccl-tests writes it for ``op``: its redop, busbw = algbw x its factor
    (the importer checks the op's name against both)."""
    redop = "sum" if SPECS[op].reduces else "none"
    return f"0,{NAMES[op]},1,{ranks},{ranks},1,{size},{dtype},{redop},0,10.0,100.0,{100.0 * SPECS[op].busbw_factor(ranks)!r},0"


@pytest.mark.parametrize("op", sorted(NAMES))
@pytest.mark.parametrize("dtype", sorted(DTYPE_SIZES))
def test_rccl_count_column_is_elements_per_rank_buffer(op: str, dtype: str) -> None:
    size, ranks = 1 << 20, 8
    csv = f"{HEAD}\n{_row(op, dtype, size, ranks)}\n"
    [run] = parse_rccl_results(csv, name="rccl.csv")
    counts = {m.params["count"] for m in run.measurements}
    expected = size // DTYPE_SIZES[dtype] // (ranks if SPECS[op].splits_count else 1)
    assert counts == {expected}


def test_a_dtype_no_table_knows_has_no_count() -> None:
    # an element size no table gives: the count is unknown (null), never a made-up 0
    csv = f"{HEAD}\n{_row('all_reduce', 'mystery', 1024)}\n"
    [run] = parse_rccl_results(csv, name="rccl.csv")
    assert {m.params["count"] for m in run.measurements} == {None}


@pytest.mark.parametrize(("op", "dtype", "count"), [
    ("all_gather", "float", 32768),     # 1 MiB of 4-byte elements over 8 ranks
    ("all_reduce", "uint64", 131072),   # the whole buffer on every rank
    ("gather", "fp8_e4m3", 131072),
    ("broadcast", "half", 524288),
])
def test_rccl_count_column_as_nccl_tests_prints_it(op: str, dtype: str, count: int) -> None:
    csv = f"{HEAD}\n{_row(op, dtype)}\n"
    [run] = parse_rccl_results(csv, name="rccl.csv")
    assert {m.params["count"] for m in run.measurements} == {count}
