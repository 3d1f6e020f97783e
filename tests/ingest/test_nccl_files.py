"""The count column of an rccl-tests result file (which leaves it out) comes from the collective
spec table: each dtype's size, and for gather-type ops the share of one rank."""

from __future__ import annotations

import pytest

from clusterbench.families.collectives.spec import DTYPE_SIZES, SPECS
from clusterbench.ingest.nccl_files import parse_rccl_results

HEAD = "numCycle,collective,nodes,ranks,ranksPerNode,gpusPerRank,size,type,redop,inplace,time,algbw,busbw,#wrong"
NAMES = {"all_reduce": "AllReduce", "all_gather": "AllGather", "reduce_scatter": "ReduceScatter",
         "alltoall": "AllToAll", "gather": "Gather", "scatter": "Scatter", "broadcast": "Broadcast"}


@pytest.mark.parametrize("op", sorted(NAMES))
@pytest.mark.parametrize("dtype", sorted(DTYPE_SIZES))
def test_rccl_count_column_is_elements_per_rank_buffer(op: str, dtype: str) -> None:
    size, ranks = 1 << 20, 8
    csv = f"{HEAD}\n0,{NAMES[op]},1,{ranks},{ranks},1,{size},{dtype},sum,0,10.0,100.0,87.5,0\n"
    [run] = parse_rccl_results(csv, name="rccl.csv")
    counts = {m.params["count"] for m in run.measurements}
    expected = size // DTYPE_SIZES[dtype] // (ranks if SPECS[op].splits_count else 1)
    assert counts == {expected}


def test_a_dtype_no_table_knows_has_no_count() -> None:
    csv = f"{HEAD}\n0,AllReduce,1,8,8,1,1024,mystery,sum,0,10.0,100.0,87.5,0\n"
    [run] = parse_rccl_results(csv, name="rccl.csv")
    assert {m.params["count"] for m in run.measurements} == {0}


@pytest.mark.parametrize(("op", "dtype", "count"), [
    ("all_gather", "float", 32768),     # 1 MiB of 4-byte elements over 8 ranks
    ("all_reduce", "uint64", 131072),   # the whole buffer on every rank
    ("gather", "fp8_e4m3", 131072),
    ("broadcast", "half", 524288),
])
def test_rccl_count_column_as_nccl_tests_prints_it(op: str, dtype: str, count: int) -> None:
    csv = f"{HEAD}\n0,{NAMES[op]},1,8,8,1,{1 << 20},{dtype},sum,0,10.0,100.0,87.5,0\n"
    [run] = parse_rccl_results(csv, name="rccl.csv")
    assert {m.params["count"] for m in run.measurements} == {count}
