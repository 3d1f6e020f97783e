"""Tests of clusterbench.families.device_table: what the node-benchmark tables (stream, gemm, transfer) share."""

from __future__ import annotations

import pytest

from clusterbench import peaks
from clusterbench.families.device_table import percent_cell


def test_unknown_device_is_not_an_error():
    assert peaks.lookup("Intel(R) Xeon(R) Processor") is None
    assert peaks.lookup(None) is None
    assert peaks.hbm_bandwidth("Some GPU") is None and peaks.dense_tflops("x", "fp16") is None
    assert peaks.percent(10.0, None) is None and percent_cell(10.0, None) == ""
    assert percent_cell(2680.0, peaks.hbm_bandwidth("NVIDIA H100 80GB HBM3")) == "80.0%"


def test_peak_percent_neither_overflows_nor_reads_zero() -> None:
    from clusterbench import peaks
    from clusterbench.families.device_table import percent_cell
    assert peaks.percent(1.7e308, 5300.0) == pytest.approx(1.7e308 / 5300.0 * 100)
    assert peaks.percent(5e-324, 1e-3) > 0
    assert percent_cell(1.7e308, 5300.0) != "inf%"
    tiny = percent_cell(1e-10, 5300.0)
    assert tiny.endswith("%") and tiny.strip("%") and float(tiny.strip("%")) > 0
    assert percent_cell(4988.0, 5300.0) == "94.1%"
