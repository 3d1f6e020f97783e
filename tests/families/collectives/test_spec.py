"""The collective spec table's facts agree with each other: the ops marked gather-type are the
ones whose per-rank count is the row's count split over the ranks, and every runnable dtype has
its size in the table of every dtype a log may name."""

from __future__ import annotations

import pytest
from nccl_facts import FACTORS as PUBLISHED_FACTOR
from nccl_facts import PER_RANK as PUBLISHED_PER_RANK

from clusterbench.families.collectives.spec import (
    ALIGN,
    DTYPE_SIZES,
    DTYPES,
    OPS,
    SPECS,
    Counts,
    algbw,
    busbw,
    error_tolerance,
    optimal_algbw,
    per_rank_unit,
    placements,
    row_bytes,
    row_counts,
    sweep_sizes,
)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("ranks", [2, 3, 8])
def test_splits_count_marks_the_ops_whose_count_is_split_over_the_ranks(op: str, ranks: int) -> None:
    spec = SPECS[op]
    assert spec.counts is not None
    count = 1 << 20   # elements: a multiple of every ALIGN unit, split or not
    assert (spec.counts(count, ranks, 4).param < count) is spec.splits_count
    assert per_rank_unit(op, "int8") == (ALIGN if spec.splits_count else 1)


def test_every_runnable_dtype_has_its_size_among_all_sizes() -> None:
    assert {name: size for name, (_, size) in DTYPES.items()} == {n: DTYPE_SIZES[n] for n in DTYPES}


def _nccl_tests_per_rank(count: int, n: int, elt: int) -> int:
    """nccl-tests' ``(count/nranks) & ~(16/eltSize - 1)`` of all_gather, reduce_scatter, alltoall."""
    return (count // n) & ~(16 // elt - 1)


# (op, requested bytes, dtype, ranks) -> (send, recv, count column, size column), per nccl-tests.
@pytest.mark.parametrize("op,size,dtype,n,send,recv,param,nbytes", [
    ("all_reduce", 1024, "float", 4, 256, 256, 256, 1024),
    ("all_reduce", 10, "float", 4, 2, 2, 2, 8),                 # rounded down to whole elements
    ("broadcast", 1024, "double", 3, 128, 128, 128, 1024),
    ("reduce", 1024, "half", 8, 512, 512, 512, 1024),
    ("sendrecv", 64, "int8", 2, 64, 64, 64, 64),
    ("all_gather", 1024, "float", 4, 64, 256, 64, 1024),        # count column is per rank
    ("all_gather", 1000, "float", 3, 80, 240, 80, 960),         # per rank: whole 16 B (nccl-tests)
    ("reduce_scatter", 1024, "float", 4, 256, 64, 64, 1024),
    ("reduce_scatter", 100, "int32", 8, 0, 0, 0, 0),            # 12 B per rank: below 16 B
    ("reduce_scatter", 200, "int32", 3, 48, 16, 16, 192),       # 66 -> 64 B per rank
    ("alltoall", 1024, "float", 4, 256, 256, 64, 1024),
    ("alltoall", 8, "float", 4, 0, 0, 0, 0),                     # below one element per rank
])
def test_counts_and_size_column(op, size, dtype, n, send, recv, param, nbytes):
    c = row_counts(op, size, dtype, n)
    assert c == Counts(send, recv, param)
    assert row_bytes(op, c, dtype) == nbytes


@pytest.mark.parametrize("op,n,factor", [
    ("all_reduce", 2, 1.0), ("all_reduce", 4, 1.5), ("all_reduce", 8, 1.75),
    ("all_gather", 4, 0.75), ("reduce_scatter", 8, 0.875), ("alltoall", 2, 0.5),
    ("broadcast", 8, 1.0), ("reduce", 8, 1.0), ("sendrecv", 8, 1.0),
])
def test_busbw_factors(op, n, factor):
    assert busbw(op, 10.0, n) == pytest.approx(10.0 * factor)


def test_algbw_is_bytes_per_second_in_gb():
    assert algbw(1_000_000_000, 0.5) == pytest.approx(2.0)
    assert algbw(1024, 0.0) == 0.0


def test_every_op_has_a_spec_and_placements():
    # every op clusterbench runs is one nccl-tests defines a bus factor for
    assert OPS and set(OPS) <= set(PUBLISHED_FACTOR) and all(SPECS[op].runnable for op in OPS)
    # nccl-tests times both placements of every op (out-of-place first): so does every engine
    assert all(placements(op) == ("out", "in") for op in OPS)
    assert not SPECS["alltoall"].in_place_checked and not SPECS["sendrecv"].in_place_checked


def test_sweep_sizes_factor_and_step():
    assert sweep_sizes(8, 128, 2, 0) == [8, 16, 32, 64, 128]
    assert sweep_sizes(8, 100, 4, 0) == [8, 32]
    assert sweep_sizes(1024, 4096, 1, 1024) == [1024, 2048, 3072, 4096]


def test_tolerance_is_nccl_tests_delta_max_times_ranks_minus_one():
    assert error_tolerance("float", 16) == pytest.approx(1.5e-4)
    assert error_tolerance("half", 2) == 1e-2 and error_tolerance("double", 3) == 2e-12
    assert error_tolerance("int32", 8) == pytest.approx(7e-200)   # integers: any error fails
    assert error_tolerance("float", 1) == 0 and error_tolerance("float", 0) is None


def test_other_collectives():
    assert optimal_algbw("all_gather", 12.5e9, 4) == pytest.approx(12.5 * 4 / 3)
    assert optimal_algbw("broadcast", 12.5e9, 4) == pytest.approx(12.5)
    assert optimal_algbw("gemm", 12.5e9, 4) is None


@pytest.mark.parametrize("op,size,dtype,n,want", [
    ("all_gather", 1000, "float", 3, Counts(80, 240, 80)),       # 83 floats per rank -> 80
    ("all_gather", 128, "float", 3, Counts(8, 24, 8)),           # 10 -> 8: the size column is 96
    ("reduce_scatter", 100, "int32", 8, Counts(0, 0, 0)),        # 3 int32 per rank: not one 16 B unit
    ("reduce_scatter", 512, "float", 3, Counts(120, 40, 40)),
    ("alltoall", 96, "int8", 4, Counts(64, 64, 16)),             # 24 bytes per rank -> 16
    ("alltoall", 48, "double", 3, Counts(6, 6, 2)),              # 2 doubles: one 16 B unit
    ("alltoall", 40, "double", 4, Counts(0, 0, 0)),              # 1 double per rank -> 0
    ("all_gather", 96, "bfloat16", 2, Counts(24, 48, 24)),
    ("all_gather", 92, "bfloat16", 2, Counts(16, 32, 16)),       # 23 -> 16 (8 per 16 B)
])
def test_gather_type_counts_trim_to_16_bytes_as_nccl_tests(op, size, dtype, n, want):
    counts = row_counts(op, size, dtype, n)
    assert counts == want
    elt = {"float": 4, "int32": 4, "int8": 1, "double": 8, "bfloat16": 2}[dtype]
    assert counts.param == _nccl_tests_per_rank(size // elt, n, elt)
    assert row_bytes(op, counts, dtype) == max(counts.send, counts.recv) * elt


@pytest.mark.parametrize("op", [op for op in OPS if op not in PUBLISHED_PER_RANK])
def test_whole_buffer_ops_keep_every_element(op):
    # all_reduce, broadcast, reduce and sendrecv pass the whole count: no trimming
    assert row_counts(op, 1000, "float", 3) == Counts(250, 250, 250)
    assert row_counts(op, 7, "int8", 4) == Counts(7, 7, 7)


@pytest.mark.parametrize("op", sorted(PUBLISHED_FACTOR))
def test_bus_factors_are_the_published_ones(op):
    for n in (2, 3, 4, 8, 16, 1000, 1000000):
        assert SPECS[op].busbw_factor(n) == pytest.approx(PUBLISHED_FACTOR[op](n), rel=1e-12)
        opt = optimal_algbw(op, 12.5e9, n)
        assert opt == pytest.approx(12.5 / PUBLISHED_FACTOR[op](n), rel=1e-12)
        # at the optimum, busbw over the nodes is the link speed itself
        assert busbw(op, opt, n) == pytest.approx(12.5, rel=1e-12)
