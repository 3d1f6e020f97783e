"""Tests of clusterbench.store.packs: how measurements are packed and read back."""

from __future__ import annotations

from clusterbench.store.packs import measurements_of, pack_rows


def test_int8_gemm_rows_stored_in_tflop_s_read_as_top_s():
    """Before TOP/s, clusterbench stored an int8 GEMM's integer operations as TFLOP/s: such a run
    reads in TOP/s (the same scale), every other row as stored."""
    rows = [("gemm", "tflops", 162.7, "TFLOP/s", {"dtype": "int8", "m": 1024}),
            ("gemm", "tflops", 130.6, "TFLOP/s", {"dtype": "fp16", "m": 1024}),
            ("gemm", "time_us", 12.0, "us", {"dtype": "int8", "m": 1024}),
            ("all_reduce", "busbw", 1.0, "GB/s", {"dtype": "int32"})]
    pack = pack_rows(rows)
    got = [(m.benchmark, m.metric, m.value, m.unit) for m in measurements_of(pack.format, pack.body)]
    assert got == [("gemm", "tflops", 162.7, "TOP/s"), ("gemm", "tflops", 130.6, "TFLOP/s"),
                   ("gemm", "time_us", 12.0, "us"), ("all_reduce", "busbw", 1.0, "GB/s")]
