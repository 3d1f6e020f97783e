"""Tests of clusterbench.families.stream.table: the stream table."""

from __future__ import annotations

from bench_tables import _stream_rows

from clusterbench.families.stream.table import StreamTable as StreamRenderer
from clusterbench.records import Measurement, Run
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


def test_a_run_that_knows_its_cache_has_a_memory_column():
    r = StreamRenderer()
    header = r.header(Run("stream", meta={"cache_bytes": {"cpu": 32 << 20}}))
    assert header[-1].split()[-1] == "memory"
    base = {"kernel": "Copy", "array_size": 4096, "dtype": "double", "device": "cpu", "memory": "cache"}
    (line,) = r.rows([Measurement("stream", "bandwidth", 80.0, "GB/s", base)])
    assert line.split()[-1] == "cache"
    # a stored run from before: no column, its rows as they were
    r = StreamRenderer()
    assert "memory" not in r.header(Run("stream"))[-1]
    (line,) = r.rows(_stream_rows())
    assert line.split()[-1] == "300.0"
