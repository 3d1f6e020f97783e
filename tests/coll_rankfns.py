"""Per-rank targets for collective tests (imported by the ranks by module path)."""

from __future__ import annotations

from clusterbench.bench.collectives import data, rank


def corrupt_rank1(ctx, config):
    """The real collective benchmark, with rank 1's input off by one everywhere."""
    if ctx.rank == 1:
        honest = data.input_values

        def off_by_one(*args):
            return honest(*args) + 1

        data.input_values = off_by_one
    rank.main(ctx, config)
