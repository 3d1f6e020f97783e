"""The peaks table: every required device, a cited source, lookup by PyTorch's names, unknown
devices give no percentage; the stream and gemm tables show % of peak only when known."""

from __future__ import annotations

import pytest

from clusterbench import peaks
from clusterbench.families.device_table import percent_cell
from clusterbench.families.gemm.table import GemmTable as GemmRenderer
from clusterbench.families.stream.table import StreamTable as StreamRenderer
from clusterbench.records import Measurement, Run
from clusterbench.report.terminal import renderer_for


@pytest.mark.parametrize("torch_name,dev_id,hbm", [
    ("NVIDIA H100 80GB HBM3", "H100-SXM", 3350),
    ("NVIDIA H100 PCIe", "H100-PCIe", 2000),
    ("NVIDIA H200", "H200", 4800),
    ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB", 2039),
    ("NVIDIA L40S", "L40S", 864),
    ("AMD Instinct MI300X", "MI300X", 5300),
    ("AMD Instinct MI325X", "MI325X", 6000),
    ("AMD Instinct MI355X", "MI355X", 8000),
])
def test_known_devices(torch_name, dev_id, hbm):
    dev = peaks.lookup(torch_name)
    assert dev is not None and dev.id == dev_id and dev.hbm_gbs == hbm
    assert "datasheet" in dev.source.lower() or "data sheet" in dev.source.lower()
    assert dev.tflops["fp16"] > dev.tflops["fp32"] > 0


def test_every_entry_is_complete():
    for dev in peaks.table():
        assert dev.source and dev.hbm_gbs and dev.tflops and dev.links, dev.id


def test_unknown_device_is_not_an_error():
    assert peaks.lookup("Intel(R) Xeon(R) Processor") is None
    assert peaks.lookup(None) is None
    assert peaks.hbm_bandwidth("Some GPU") is None and peaks.dense_tflops("x", "fp16") is None
    assert peaks.percent(10.0, None) is None and percent_cell(10.0, None) == ""
    assert percent_cell(2680.0, peaks.hbm_bandwidth("NVIDIA H100 80GB HBM3")) == "80.0%"


def test_transfer_peaks():
    assert peaks.transfer_peak("NVIDIA H100 80GB HBM3", "h2d", "C0", "G0", "uni") == 64.0
    assert peaks.transfer_peak("NVIDIA H100 80GB HBM3", "p2p", "G0", "G1", "bi") == 900.0
    assert peaks.transfer_peak("AMD Instinct MI300X", "a2a", "G0", "*", "uni") == 448.0
    assert peaks.transfer_peak("AMD Instinct MI300X", "p2p", "G0", "G0", "uni") == 2650.0
    assert peaks.transfer_peak("Unknown", "p2p", "G0", "G1", "uni") is None


def _stream_rows(device="cuda:0"):
    base = {"kernel": "Triad", "array_size": 2**25, "dtype": "double", "device": device}
    return [Measurement("stream", "bandwidth", 2680.0, "GB/s", base),
            Measurement("stream", "time_us", 300.0, "us", {**base, "stat": "min"})]


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


def test_gemm_table_percent_per_dtype():
    assert isinstance(renderer_for("gemm"), GemmRenderer)
    r = GemmRenderer()
    r.header(Run("gemm", meta={"device_names": {"cuda:0": "AMD Instinct MI300X"}}))
    p = {"m": 4000, "n": 4000, "k": 4000, "batch": 1, "dtype": "fp32", "transA": "N", "transB": "T",
         "device": "cuda:0", "stat": "best"}
    (line,) = r.rows([Measurement("gemm", "tflops", 97.19, "TFLOP/s", p),
                      Measurement("gemm", "time_us", 1317.0, "us", p)])
    assert line.split()[9:] == ["97.190", "59.5%", "1317.0"]


@pytest.mark.parametrize("name", [
    "NVIDIA H200 NVL", "NVIDIA GH200 480GB", "NVIDIA GH200 144G HBM3e", "NVIDIA H100 NVL",
    "NVIDIA H100 80GB HBM3 MIG 1g.10gb", "NVIDIA A100-SXM4-40GB MIG 3g.20gb", "AMD Instinct MI300A",
    "NVIDIA H100 80GB HBM3 (fake)", "MI300X-like",
])
def test_names_match_whole_device_names_only(name):
    assert peaks.lookup(name) is None


@pytest.mark.parametrize("name,dev_id", [
    ("NVIDIA H200", "H200"), ("H200", "H200"), ("NVIDIA H100 80GB HBM3", "H100-SXM"),
    ("NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"), ("AMD Instinct MI300X VF", "MI300X"),
    ("nvidia h100 pcie", "H100-PCIe"),
])
def test_whole_names_still_match(name, dev_id):
    assert peaks.lookup(name).id == dev_id


def test_partitions_get_no_peak():
    from pathlib import Path

    from clusterbench.envinfo.inventory import collect

    mi300x = collect(Path(__file__).parent / "data" / "sysfs" / "mi300x-node", use_libraries=False)
    assert peaks.partition_of("AMD Instinct MI300X", {"n1": mi300x}) == "CPX/NPS1, CPX/NPS4"
    assert peaks.partition_of("NVIDIA H100 80GB HBM3 MIG 1g.10gb") == "MIG 1g.10gb"
    whole = {"n1": {"gpus": [{"compute_partition": "SPX", "memory_partition": "NPS1"}], "amdgpu": []}}
    assert peaks.partition_of("AMD Instinct MI300X", whole) is None
    assert peaks.partition_of("AMD Instinct MI300X", None) is None
    assert peaks.hbm_bandwidth("AMD Instinct MI300X", "CPX/NPS4") is None
    assert peaks.dense_tflops("AMD Instinct MI300X", "fp16", "CPX/NPS4") is None
    assert peaks.transfer_peak("AMD Instinct MI300X", "h2d", "C0", "G0", "uni", "CPX/NPS4") is None
    assert peaks.peak_of("memory_bandwidth", "AMD Instinct MI300X", {}) == 5300


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
