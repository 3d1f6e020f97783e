"""Tests of clusterbench.families.stream.table: the stream table."""

from __future__ import annotations

from bench_tables import _stream_rows

from clusterbench.families.stream.table import StreamTable as StreamRenderer
from clusterbench.records import Run
from clusterbench.report.terminal import renderer_for


def test_stream_table_percent_only_for_known_devices():
    assert isinstance(renderer_for("stream"), StreamRenderer)
    r = StreamRenderer()
    r.header(Run("stream", devices=["NVIDIA H100 80GB HBM3"]))
    (line,) = r.rows(_stream_rows())
    assert line.split()[:7] == ["cuda:0", "33554432", "double", "Triad", "2680.00", "80.0%", "300.0"]
    r = StreamRenderer()
    r.header(Run("stream", devices=["Mystery Accelerator"]))
    (line,) = r.rows(_stream_rows())
    assert "%" not in line and line.split()[5] == "300.0"
