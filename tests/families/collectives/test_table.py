"""Tests of clusterbench.families.collectives.table."""

from __future__ import annotations

import re

from clusterbench.families.collectives.table import CollTable, format_time
from clusterbench.records import Measurement, Run

COLUMNS = ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
           "busbw", "#wrong"]


def _row(op, nbytes, count, placement, t, alg, bus, wrong=None, dtype="float", redop="sum", root=-1):
    p = {"bytes": nbytes, "count": count, "dtype": dtype, "redop": redop, "root": root,
         "placement": placement, "ranks": 4}
    ms = [Measurement(op, "time_us", t, "us", p), Measurement(op, "algbw", alg, "GB/s", p),
          Measurement(op, "busbw", bus, "GB/s", p)]
    if wrong is not None:
        ms.append(Measurement(op, "wrong", float(wrong), "", p))
    return ms


def _run():
    return Run(benchmark="coll", ranks=2, hosts=["nodeA"], devices=["GPU A", "GPU B"],
               meta={"rank_hosts": ["nodeA", "nodeA"], "rank_pids": [101, 102],
                     "rank_device_index": [0, 1], "rank_bus_id": ["0x1b", "0x2c"],
                     "coll_sweep.all_gather": {"minbytes": 8, "maxbytes": 1024, "step": 2,
                                               "step_kind": "factor", "warmup_iters": 5, "iters": 20,
                                               "validation": 1}})


EXTREMES = [1.7e308, 1e-300, 5e-324, -0.0, 0.0, 123456789012345678.0, 12.5, 3.25, -7.5, 1e15, -1.7e308]


# a run of digits no column holds: what an unbounded fixed-point format prints for 1.7e308
WALL = re.compile(r"\d[\d,]{24,}")


def test_rows_split_into_the_nccl_tests_columns():
    ms = (_row("all_gather", 1024, 64, "out", 12.5, 0.08, 0.06, 0)
          + _row("all_gather", 1024, 64, "in", 130.25, 0.01, 0.01, 3)
          + _row("all_gather", 1048576, 65536, "out", 12345.6, 84.9, 63.7, 0)
          + _row("all_gather", 1048576, 65536, "in", 12000.0, 87.4, 65.5))  # in-place unchecked
    lines = CollTable("all_gather").rows(ms)
    assert len(lines) == 2
    first, second = (line.split() for line in lines)
    assert first == ["1024", "64", "float", "sum", "-1", "12.50", "0.08", "0.06", "0", "130.2", "0.01",
                     "0.01", "3"]
    assert second[5] == "12346" and second[12] == "N/A"
    # the column header splits into the same 13 names
    header = CollTable("all_gather").header(_run())
    names = next(h for h in header if "#wrong" in h).lstrip("#").split()
    assert names == COLUMNS


def test_missing_placement_prints_na_in_every_column():
    line = CollTable("all_reduce").rows(_row("all_reduce", 8, 2, "in", 20.0, 0.0, 0.0, 0))[0].split()
    assert len(line) == 13
    assert line[5:9] == ["N/A"] * 4 and line[9] == "20.00"


def test_header_names_ranks_pids_hosts_devices_and_sweep():
    text = "\n".join(CollTable("all_gather").header(_run()))
    assert "# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20" in text
    assert "#  Rank  0 Group  0 Pid    101 on      nodeA device  0 [0x1b] GPU A" in text
    assert "#  Rank  1 Group  0 Pid    102 on      nodeA device  1 [0x2c] GPU B" in text
    assert "out-of-place" in text and "in-place" in text


def test_footer_uses_run_records_or_falls_back_to_rows():
    rows = _row("all_reduce", 8, 2, "in", 20.0, 1.0, 2.0, 0) + _row("all_reduce", 16, 4, "in", 20.0, 1.0, 4.0, 5)
    footer = CollTable("all_reduce").footer(Run("coll"), rows)
    assert footer[0] == "# Out of bounds values : 1 FAILED"
    assert footer[1].split(":")[1].split() == ["3"]
    stored = rows + [Measurement("all_reduce", "avg_busbw", 41.5, "GB/s", {"ranks": 2}),
                     Measurement("all_reduce", "out_of_bounds", 0.0, "", {"ranks": 2})]
    footer = CollTable("all_reduce").footer(Run("coll"), stored)
    assert footer[0] == "# Out of bounds values : 0 OK"
    assert footer[1] == "# Avg bus bandwidth    : 41.5 "


def test_time_format_matches_nccl_tests():
    assert format_time(5.123) == "   5.12"
    assert format_time(123.25) == "  123.2"   # %7.1f
    assert format_time(12345.6) == "  12346"


def test_collectives_row_with_extremes_lines_up_with_an_ordinary_one():
    def row(value: float) -> str:
        ms = [Measurement("all_reduce", metric, value, "", {"bytes": 8, "count": 2, "dtype": "float",
                                                            "redop": "sum", "root": -1, "placement": place})
              for metric in ("time_us", "algbw", "busbw", "wrong") for place in ("out", "in")]
        (line,) = CollTable("all_reduce").rows(ms)
        return line
    ordinary = row(12.5)
    for v in EXTREMES:
        line = row(v)
        assert len(line) == len(ordinary) or v == -1.7e308, (v, line)
        assert not WALL.search(line), line


def test_collectives_footer_of_counts_past_the_float_limit():
    ms = [Measurement("all_reduce", "out_of_bounds", 1.7e308, "", {}),
          Measurement("all_reduce", "out_of_bounds", 1.7e308, "", {}),
          Measurement("all_reduce", "busbw", 1.7e308, "GB/s", {"bytes": 8}),
          Measurement("all_reduce", "busbw", 1.7e308, "GB/s", {"bytes": 16})]
    footer = CollTable("all_reduce").footer(Run("coll"), ms)
    assert footer[0] == "# Out of bounds values : inf FAILED"
    ms = [m for m in ms if m.metric == "busbw"]
    assert CollTable("all_reduce").footer(Run("coll"), ms)[1] == "# Avg bus bandwidth    : 1.7e+308 "
