"""GEMM throughput: the metrics native runs and imported rocblas/hipblaslt logs record."""

from __future__ import annotations

from clusterbench.families.base import Metric

BENCHMARK = "gemm"
TFLOPS = Metric("tflops", "TFLOP/s", headline=True, peak="dense_tflops", about="2*m*n*k*batch / time")
TIME = Metric("time_us", "us", higher_is_better=False, spread="stat",
              about="time per call, with stat best/median (and max/stddev/mad/first over the samples)")
BANDWIDTH = Metric("bandwidth", "GB/s", about="bytes of A, B, C, D / time (hipblaslt-bench's GB/s)")
METRICS = (TFLOPS, TIME, BANDWIDTH)
