"""The collective spec table's facts agree with each other: the ops marked gather-type are the
ones whose per-rank count is the row's count split over the ranks, and every runnable dtype has
its size in the table of every dtype a log may name."""

from __future__ import annotations

import pytest

from clusterbench.families.collectives.spec import (
    ALIGN,
    DTYPE_SIZES,
    DTYPES,
    OPS,
    SPECS,
    per_rank_unit,
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
