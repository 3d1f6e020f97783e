"""Per-rank targets for collective tests (imported by the ranks by module path)."""

from __future__ import annotations

import dataclasses

from clusterbench.bench.collectives import calls, rank


def corrupt_rank1(ctx, config):
    """The real collective benchmark, with rank 1's input off by one everywhere."""
    if ctx.rank == 1:
        def off_by_one(honest):
            return lambda *args: honest(*args) + 1

        calls.CALLS = {op: dataclasses.replace(c, inputs=off_by_one(c.inputs)) for op, c in calls.CALLS.items()}
    rank.main(ctx, config)


TARGET = rank.main
