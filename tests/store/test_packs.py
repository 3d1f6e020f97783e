"""Tests of clusterbench.store.packs: how measurements are packed and read back."""

from __future__ import annotations

from clusterbench.store.packs import (
    measurements_of,
    pack_rows,
    pack_table,
    param_values,
    table_header,
)


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


def _mixed_packs():
    rows = [("all_reduce", "busbw", 10.0, "GB/s", {"bytes": 1, "host": "a"}),
            ("all_reduce", "time_us", 5.0, "us", {"bytes": 1, "host": "a"}),
            ("stream", "bandwidth", 3.0, "GB/s", {"kernel": "Copy", "device": "1"}),
            ("all_reduce", "busbw", 20.0, "GB/s", {"bytes": 2, "host": "a"}),
            ("stream", "bandwidth", 4.0, "GB/s", {"kernel": "Copy", "device": 0})]
    header = table_header("all_gather", [("bytes", "int"), ("device", "str")],
                          [("busbw", "GB/s", {"placement": "out"}), None, ("time_us", "us", {})],
                          {"ranks": 2}, ["bytes", "device", "placement", "ranks"])
    table = pack_table(header, ["1024  3  9.5  x  4.0", "2048  1  N/A  x  8.0*"], 3)
    return [pack_rows(rows), table]


def test_keep_leaves_out_the_records_it_does_not_want_in_both_formats():
    def keep(benchmark, metric):
        return metric in ("busbw", "bandwidth")

    for pack in _mixed_packs():
        every = list(measurements_of(pack.format, pack.body))
        assert list(measurements_of(pack.format, pack.body, keep)) == [m for m in every if keep(m.benchmark, m.metric)]
        assert list(measurements_of(pack.format, pack.body, keep, shared=True)) == \
            [m for m in every if keep(m.benchmark, m.metric)]


def test_shared_records_of_one_parameter_set_share_its_dict_and_others_do_not():
    rows = _mixed_packs()[0]
    busbw, time_us = list(measurements_of(rows.format, rows.body, shared=True))[:2]
    assert busbw.params is time_us.params and busbw.params == {"bytes": 1, "host": "a"}
    busbw, time_us = list(measurements_of(rows.format, rows.body))[:2]
    assert busbw.params is not time_us.params and busbw.params == time_us.params


def test_param_values_are_each_records_param_or_none_without_making_records():
    rows, table = _mixed_packs()
    # a rows pack: once per parameter set, in the order the records first use them
    assert list(param_values(rows.format, rows.body, "device")) == [None, "1", None, 0]
    assert list(param_values(table.format, table.body, "device")) == \
        [m.params.get("device") for m in measurements_of(table.format, table.body)] == ["3", "3", "1"]
    assert list(param_values(rows.format, rows.body, "nothing")) == [None, None, None, None]
