"""Collectives as nccl-tests measures them: ``spec`` holds the op table and the metrics,
``table`` the nccl-tests table."""

from __future__ import annotations

from clusterbench.families.base import Family, Figure, HeadlineRows
from clusterbench.families.collectives.spec import ALGBW, ALL_OPS, BUSBW, METRICS, SPECS
from clusterbench.families.collectives.table import CollTable

FAMILY = Family(
    name="collectives",
    title="Collectives",
    benchmarks=ALL_OPS,
    metrics=METRICS,
    row_params=("bytes", "count", "dtype", "redop", "root", "placement", "ranks"),
    renderer=CollTable,
    commands=("coll",),
    aliases={alias: op.name for op in SPECS.values() for alias in op.aliases},
    figure=Figure("size_curve", (BUSBW.name, ALGBW.name), x="bytes", x_label="message size (bytes)",
                  split=("placement",)),
    # busbw at the largest size of the run, per op, placement, dtype and redop
    headline_rows=HeadlineRows(largest=("bytes",)),
)
