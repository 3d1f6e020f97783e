"""Tests of clusterbench.peaks: known devices' datasheet peaks (``data/peaks.yaml``) and percent-of-peak."""

from __future__ import annotations

import pytest

from clusterbench import peaks


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


def test_transfer_peaks():
    assert peaks.transfer_peak("NVIDIA H100 80GB HBM3", "h2d", "C0", "G0", "uni") == 64.0
    assert peaks.transfer_peak("NVIDIA H100 80GB HBM3", "p2p", "G0", "G1", "bi") == 900.0
    assert peaks.transfer_peak("AMD Instinct MI300X", "a2a", "G0", "*", "uni") == 448.0
    assert peaks.transfer_peak("AMD Instinct MI300X", "p2p", "G0", "G0", "uni") == 2650.0
    assert peaks.transfer_peak("Unknown", "p2p", "G0", "G1", "uni") is None


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
