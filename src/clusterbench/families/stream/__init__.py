"""Memory bandwidth: the ``stream`` benchmark (BabelStream's Copy, Mul, Add, Triad, Dot, Nstream)."""

from __future__ import annotations

from clusterbench.families.base import Family, Figure, HeadlineRows
from clusterbench.families.stream.spec import BANDWIDTH, BENCHMARK, METRICS
from clusterbench.families.stream.table import StreamTable

FAMILY = Family(
    name="stream",
    title="Memory bandwidth (stream)",
    benchmarks=(BENCHMARK,),
    metrics=METRICS,
    row_params=("kernel", "array_size", "dtype", "device", "host"),
    renderer=lambda _benchmark: StreamTable(),
    commands=("stream",),
    figure=Figure("bars", (BANDWIDTH.name,), x="array_size", x_label="array size (elements)",
                  title="stream bandwidth"),
    describe=lambda p: str(p.get("kernel")),
    # Triad (BabelStream's and STREAM's summary figure) per device, at the largest array
    headline_rows=HeadlineRows(largest=("array_size",), prefer=(("kernel", ("Triad",)),)),
)
