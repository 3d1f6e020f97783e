"""GEMM throughput per dtype: the ``gemm`` benchmark."""

from __future__ import annotations

from clusterbench.families.base import Family, Figure, HeadlineRows
from clusterbench.families.gemm.spec import BENCHMARK, METRICS, TFLOPS
from clusterbench.families.gemm.table import GemmTable

FAMILY = Family(
    name="gemm",
    title="GEMM",
    benchmarks=(BENCHMARK,),
    metrics=METRICS,
    row_params=("dtype", "m", "n", "k", "batch", "transA", "transB", "device"),
    renderer=lambda _benchmark: GemmTable(),
    commands=("gemm",),
    figure=Figure("bars", (TFLOPS.name,), title="GEMM throughput by dtype"),
    # the stat too: a run records tflops both "best" and "median", and a trend or a bar chart of
    # the two under one label showed two different series as one row twice
    describe=lambda p: f"{p.get('dtype')} {p.get('m')}x{p.get('n')}x{p.get('k')}"
                       + (f" b{p.get('batch')}" if p.get("batch") not in (None, 1) else "")
                       + (f" {p.get('stat')}" if p.get("stat") is not None else ""),
    # one precision per device, the one training runs at where measured, and the best sample
    headline_rows=HeadlineRows(prefer=(("dtype", ("bf16", "fp16", "tf32", "fp32", "fp8_e4m3", "fp8_e5m2", "int8",
                                                   "fp64")),
                                       ("stat", ("best",)))),
)
