"""Tests of clusterbench.families.gemm.table: the GEMM table."""

from __future__ import annotations

from clusterbench.families.gemm.table import GemmTable as GemmRenderer
from clusterbench.records import Measurement, Run
from clusterbench.report.terminal import renderer_for


def test_gemm_table_percent_per_dtype():
    assert isinstance(renderer_for("gemm"), GemmRenderer)
    r = GemmRenderer()
    r.header(Run("gemm", meta={"device_names": {"cuda:0": "AMD Instinct MI300X"}}))
    p = {"m": 4000, "n": 4000, "k": 4000, "batch": 1, "dtype": "fp32", "transA": "N", "transB": "T",
         "device": "cuda:0", "stat": "best"}
    (line,) = r.rows([Measurement("gemm", "tflops", 97.19, "TFLOP/s", p),
                      Measurement("gemm", "time_us", 1317.0, "us", p)])
    assert line.split()[9:] == ["97.190", "59.5%", "1317.0"]


def test_integer_gemm_rows_say_top_s_once():
    r = GemmRenderer()
    r.header(Run("gemm"))
    base = {"m": 1024, "n": 2048, "k": 512, "batch": 5, "transA": "N", "transB": "T", "device": "cuda:0"}
    rows = [Measurement("gemm", "tflops", 150.0 + i, "TOP/s", {**base, "dtype": "int8", "stat": s})
            for i, s in enumerate(("best", "median"))]
    lines = r.rows([Measurement("gemm", "tflops", 130.0, "TFLOP/s", {**base, "dtype": "fp16", "stat": "best"}),
                    *rows])
    assert lines[1] == "# int8: TOP/s (integer operations), in the TFLOP/s column" and len(lines) == 4
    assert not any("TOP/s" in x for x in r.rows(rows))   # said once per table
