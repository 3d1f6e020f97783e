"""judge.efficiency.stored_link_efficiency: theory --run's efficiency of stored runs over
their links, read from the database."""

import pytest
from bench_tables import _stream_rows
from judged_rows import PARAMS

from clusterbench.errors import UsageError
from clusterbench.families.stream.table import StreamTable as StreamRenderer
from clusterbench.judge.efficiency import (
    DevicePercent,
    nodes_of,
    run_link_efficiency,
    stored_link_efficiency,
)
from clusterbench.records import Measurement, Run
from clusterbench.store import Store


def _coll(db, hosts, tags=None):
    ms = [Measurement("all_reduce", "algbw", 10.0, "GB/s", {"bytes": 1 << 30, "placement": "out", "ranks": 4})]
    with Store.open(db) as s:
        return s.save_run(Run("coll", hosts=list(hosts), ranks=4, tags=dict(tags or {})), ms)


def test_each_run_over_the_link_given_its_tag_or_the_default(db):
    _coll(db, ["a", "b"])
    _coll(db, ["a", "b"], {"link_speed": "200Gbps"})
    got = stored_link_efficiency(db, ["1", "2"], None, None, "100Gbps")
    assert [(run_id, link) for run_id, link, _ in got.judged] == [(1, "100Gbps"), (2, "200Gbps")]
    assert got.judged[0][2][0].nodes == 2 and got.unknown == []
    forced = stored_link_efficiency(db, ["2"], None, "50Gbps", "100Gbps")
    assert [link for _, link, _ in forced.judged] == ["50Gbps"]


def test_runs_on_one_host_say_why_they_were_not_judged(db):
    _coll(db, ["a"])
    _coll(db, [])
    got = stored_link_efficiency(db, ["1", "2"], None, None, "100Gbps")
    assert got.judged == []
    assert got.unknown == ["run 1 ran on 1 host",
                           "run 2 names no hosts (an imported log?): give its node count with "
                           "`clusterbench results tag 2 nodes=N`"]
    assert str(got.nothing_judged()) == "no collective algbw rows on 2 or more hosts: run 1 ran on 1 host"


def test_a_tag_that_is_no_link_speed_names_the_run(db):
    _coll(db, ["a", "b"], {"link_speed": "fast"})
    with pytest.raises(UsageError, match="^run 1: link_speed tag: "):
        stored_link_efficiency(db, ["1"], None, None, "100Gbps")


def test_stream_table_and_judge_show_no_percent_for_a_cpx_run():
    from clusterbench.judge.efficiency import device_percent_of_peak

    inv = {"n1": {"gpus": [{"index": 0, "compute_partition": "CPX", "memory_partition": "NPS4"}]}}
    run = Run("stream", devices=["AMD Instinct MI300X"], meta={"inventory": inv})
    r = StreamRenderer()
    header = r.header(run)
    assert any("a partition of the GPU (CPX/NPS4)" in line and "no % of peak" in line for line in header)
    (line,) = r.rows(_stream_rows())
    assert "%" not in line
    assert device_percent_of_peak(run, _stream_rows()) == []
    whole = Run("stream", devices=["AMD Instinct MI300X"], meta={"inventory": {"n1": {"gpus": []}}})
    assert [d.peak for d in device_percent_of_peak(whole, _stream_rows())] == [5300]


def test_device_percent_is_finite_where_the_percent_is():
    d = DevicePercent("stream", "bandwidth", {}, 1.7e308, "GB/s", 5300.0, "AMD Instinct MI300X")
    assert d.percent == pytest.approx(1.7e308 / 5300 * 100) and d.percent_text() == "3.20755e+306%"
    tiny = DevicePercent("stream", "bandwidth", {}, 5e-324, "GB/s", 0.5, "x")
    assert tiny.percent > 0 and tiny.percent_text() == "9.88131e-322%"


@pytest.mark.parametrize("tag", ["\u00b2", "0", "00", "-2", " 2", "\u0663"])
def test_a_nodes_tag_that_is_not_a_positive_count_falls_back_to_the_hosts(tag: str) -> None:
    """'²' passed isdigit() and int() raised ValueError (a traceback); 0 gave no efficiency."""
    run = Run("coll", hosts=["a", "b"], ranks=16, tags={"nodes": tag, "link_speed": "100Gbps"})
    assert nodes_of(run) == 2
    ms = [Measurement("all_reduce", "algbw", 10.0, "GB/s", dict(PARAMS))]
    (e,) = run_link_efficiency(run, ms, None)
    assert e.nodes == 2


def test_a_nodes_tag_that_is_a_count_wins() -> None:
    assert nodes_of(Run("coll", hosts=["a"], tags={"nodes": "4"})) == 4
    assert nodes_of(Run("coll", hosts=["a"], tags={"nodes": "4"}), 8) == 8


def test_each_device_and_dtype_gets_its_own_peak_when_a_run_has_many_rows():
    # a run's peaks are looked up once per device name and dtype: rows of another GPU model or
    # dtype in the same run still get theirs
    from clusterbench import peaks
    from clusterbench.judge.efficiency import device_percent_of_peak

    run = Run("gemm", devices=["NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"])
    ms = [Measurement("gemm", "tflops", 500.0, "TFLOP/s", {"dtype": dtype, "device": str(dev), "m": size})
          for size in (4096, 8192) for dev in (0, 1) for dtype in ("bf16", "fp8_e4m3")]
    ms += [Measurement("stream", "bandwidth", 3000.0, "GB/s", {"kernel": k, "device": str(dev)})
           for k in ("Copy", "Triad") for dev in (0, 1)]
    found = device_percent_of_peak(run, ms)
    assert len(found) == len(ms)
    for d, m in zip(found, ms):
        name = run.devices[int(m.params["device"])]
        kind = "dense_tflops" if m.benchmark == "gemm" else "memory_bandwidth"
        assert d.device_name == name and d.peak == peaks.peak_of(kind, name, m.params)
    assert len({d.peak for d in found}) == 6   # two models, each two dtypes and its HBM
