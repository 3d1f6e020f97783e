"""Tests of clusterbench.families.transfer.table: transfer tables."""

from __future__ import annotations

from clusterbench.families.stream.table import StreamTable as StreamRenderer
from clusterbench.records import Measurement, Run


def test_stream_and_transfer_tables_never_show_a_nonzero_value_as_zero():
    """A 1 KiB copy at 0.0004 GB/s read 0.00 in the stream and transfer tables, as the gemm and
    net tables already avoided."""
    from clusterbench.families.transfer.table import _cell
    base = {"kernel": "Copy", "array_size": 128, "dtype": "double", "device": "cpu"}
    r = StreamRenderer()
    r.header(Run("stream", devices=["cpu"]))
    (line,) = r.rows([Measurement("stream", "bandwidth", 0.0004, "GB/s", base),
                      Measurement("stream", "time_us", 0.04, "us", {**base, "stat": "min"})])
    assert line.split()[4:6] == ["0.0004", "0.04"]
    assert _cell(0.0004).strip() == "0.0004" and _cell(12.5) == "     12.50"
