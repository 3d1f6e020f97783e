"""Tests of clusterbench.preflight.checks: the preflight checks."""

import json
import os
import tracemalloc
from pathlib import Path

import pytest
from host_doubles import CPU, CUDA, H100, MI300X, ROCM

from clusterbench.envinfo import torchcheck
from clusterbench.envinfo.inventory import collect
from clusterbench.preflight import Expectations, record, run_checks
from clusterbench.preflight import checks as c


def _inv(root: Path, build: torchcheck.TorchBuild | None) -> dict:
    inv = collect(root, use_libraries=False)
    inv["torch"] = build.to_dict() if build else None
    return inv


def _by_check(root: Path, exp: Expectations) -> dict[str, c.CheckResult]:
    return {r.check: r for r in run_checks(exp, root=root)}


def test_preflight_torch_gpus_fails_with_the_evidence():
    res = c.torch_gpus(_inv(MI300X, CUDA), environ={})
    assert res.status == c.FAIL and "ROCm build" in res.summary and "rocm6.2" in res.summary
    assert res.evidence[0] == CUDA.describe() and "2 AMD GPU(s) (/sys/class/drm)" in res.evidence
    res = c.torch_gpus(_inv(H100, ROCM), environ={})
    assert res.status == c.FAIL and "3 NVIDIA GPU(s) (PCI)" in res.summary


def test_preflight_torch_gpus_ok_na_warning():
    good = torchcheck.TorchBuild("2.6.0+rocm6.2", hip="6.2", devices=2)
    assert c.torch_gpus(_inv(MI300X, good), environ={}).status == c.OK
    partial = torchcheck.TorchBuild("2.6.0+cu126", cuda="12.6", devices=1)
    assert c.torch_gpus(_inv(H100, partial), environ={}).status == c.WARNING
    assert c.torch_gpus(_inv(H100, partial), environ={"CUDA_VISIBLE_DEVICES": "0"}).status == c.OK
    assert c.torch_gpus(_inv(H100, CUDA), environ={"CUDA_VISIBLE_DEVICES": ""}).status == c.OK
    empty = {"gpus": [], "pcie": [], "torch": CPU.to_dict()}
    assert c.torch_gpus(empty, environ={}).status == c.NA
    assert c.torch_gpus(_inv(H100, None), environ={}).status == c.NA


def test_checks_on_h100_tree():
    res = {r.check: r for r in run_checks(Expectations(gpus=8, model="H100"), root=H100)}
    assert res["gpu_count"].status == c.FAIL and "3 GPU(s) found, expected 8" in res["gpu_count"].summary
    assert res["gpu_model"].status == c.OK
    assert res["pcie_link"].status == c.FAIL
    assert any("0000:9a:00.0" in e and "width x8 < x16" in e for e in res["pcie_link"].evidence)
    assert res["pcie_aer"].status == c.WARNING
    assert res["kernel_log"].status == c.NA  # a fake root has no kernel log unless given one
    assert res["nic"].status == c.WARNING and "ens1f1np1" in res["nic"].evidence[0]  # a spare port is down
    assert res["rdma"].status == c.OK
    assert "RoCE v2 GID index 1,3" in " ".join(res["rdma"].evidence)
    assert res["gpu_partition"].status == c.NA


def test_nic_speed_and_named_nics():
    inv_root = H100
    slow = {r.check: r for r in run_checks(Expectations(nic_speed_gbps=200), root=inv_root)}
    assert slow["nic"].status == c.FAIL and "below the expected 200 Gb/s" in slow["nic"].evidence[0]
    assert slow["rdma"].status == c.FAIL  # the 100 Gb/s RoCE port
    named = {r.check: r for r in run_checks(Expectations(nics=("ens1f1np1",)), root=inv_root)}
    assert named["nic"].status == c.FAIL  # a NIC the user named must be up
    missing = {r.check: r for r in run_checks(Expectations(nics=("eth7",)), root=inv_root)}
    assert missing["nic"].status == c.FAIL and "not found: eth7" in missing["nic"].summary


def test_checks_on_mi300x_tree():
    res = {r.check: r for r in run_checks(Expectations(gpus=2, model="mi300x"), root=MI300X)}
    assert res["gpu_count"].status == c.OK and res["gpu_model"].status == c.OK
    assert res["gpu_partition"].status == c.WARNING  # one GPU in NPS1, the other NPS4
    assert res["gpu_ecc"].status == c.FAIL and "card2/umc: uncorrected 1" in res["gpu_ecc"].evidence[0]
    assert res["rdma"].status == c.WARNING  # port DOWN, not named
    exp = Expectations(compute_partition="CPX", memory_partition="NPS4")
    part = {r.check: r for r in run_checks(exp, root=MI300X)}["gpu_partition"]
    assert part.status == c.FAIL and part.evidence == ["gpu 1: memory partition NPS1, expected NPS4"]


def test_pci_only_gpus_warn_when_libraries_failed():
    inv = {"gpus": [{"index": 0, "name": "NVIDIA H100", "source": "pci"}],
           "gpu_library_errors": {"nvml": "NVMLError_DriverNotLoaded"}}
    r = c.gpu_count(inv, Expectations(gpus=1))
    assert r.status == c.WARNING and "NVMLError_DriverNotLoaded" in r.evidence[0]


def test_ecc_from_library_rows():
    rows = [{"index": 0, "enabled": True, "uncorrected": 0, "corrected": 0, "remap_pending": True,
             "remap_failed": False}, {"index": 1, "enabled": False}]
    r = c.gpu_ecc({}, rows)
    assert r.status == c.FAIL and "row remap pending" in r.evidence[0]
    assert c.gpu_ecc({}, [{"index": 0, "enabled": False}]).status == c.NA


def test_record_is_json():
    results = run_checks(Expectations(), root=MI300X)
    rec = record(results)
    assert rec["status"] == c.FAIL and len(rec["checks"]) == len(results)
    json.dumps(rec)


def test_a_nic_speed_that_cannot_be_read_is_not_an_expectation_met():
    inv = {"nics": [{"name": "eth0", "driver": "virtio_net", "operstate": "up", "speed_mbps": None, "mtu": 1500},
                    {"name": "eth1", "driver": "mlx5_core", "operstate": "up", "speed_mbps": 400000, "mtu": 9000}]}
    r = c.nics(inv, Expectations(nic_speed_gbps=100))
    assert r.status == c.WARNING and r.summary == "1 of unknown speed"
    assert "eth0" in r.evidence[0] and "cannot be checked" in r.evidence[0]
    assert c.nics(inv, Expectations()).status == c.OK   # nothing expected: nothing to check


def test_an_rdma_rate_that_cannot_be_read_is_not_an_expectation_met(node: Path) -> None:
    (node / "sys/class/infiniband/mlx5_1/ports/1/rate").write_text("Unknown\n")
    res = _by_check(node, Expectations(nic_speed_gbps=100))
    rdma = res["rdma"]
    assert rdma.status == c.WARNING and rdma.summary == "1 of unknown rate"
    assert "mlx5_1 port 1" in rdma.evidence[0] and "cannot be checked" in rdma.evidence[0]
    (node / "sys/class/net/ens1f0np0/speed").write_text("-1\n")   # the same port as the nic check sees it
    assert _by_check(node, Expectations(nic_speed_gbps=100))["nic"].status == c.WARNING
    assert _by_check(node, Expectations())["rdma"].status == c.OK   # nothing expected: nothing to check


@pytest.mark.parametrize("speed", ["4294967295", "99999999999999999999999", "0", "-1", "fast"])
def test_a_nic_speed_that_is_no_speed_is_unknown(node: Path, speed: str) -> None:
    (node / "sys/class/net/ens1f0np0/speed").write_text(speed + "\n")
    nic = _by_check(node, Expectations(nic_speed_gbps=100))["nic"]
    # the kernel's SPEED_UNKNOWN printed unsigned is not 4.3 Pb/s that passes every expectation
    assert nic.status == c.WARNING and "1 of unknown speed" in nic.summary
    assert any(e.startswith("ens1f0np0 ") and "cannot be checked" in e for e in nic.evidence)


@pytest.mark.parametrize("speed", [-1000, 2**32 - 1, "100000", True, 1.5])
def test_nic_speed_from_an_inventory_of_another_shape(speed: object) -> None:
    """An inventory handed in (``run_checks(inventory=...)``) holds what its writer put there."""
    inv = {"nics": [{"name": "eth0", "operstate": "up", "speed_mbps": speed}]}
    r = c.nics(inv, Expectations(nic_speed_gbps=1))
    assert r.status == c.WARNING and r.summary == "1 of unknown speed"


@pytest.mark.parametrize("link,status,text", [
    ({"current_width": 16, "max_width": 16, "current_speed_gts": None, "max_speed_gts": 32.0},
     c.WARNING, "?/32.0 GT/s: current speed unknown"),
    ({"current_width": None, "max_width": 16, "current_speed_gts": None, "max_speed_gts": 32.0},
     c.WARNING, "x?/x16, ?/32.0 GT/s: current width and speed unknown"),
    ({"current_width": 0, "max_width": 16, "current_speed_gts": None, "max_speed_gts": 32.0},
     c.FAIL, "link down (width x0, max x16)"),
    ({"current_width": 8, "max_width": 16, "current_speed_gts": 32.0, "max_speed_gts": 32.0},
     c.FAIL, "width x8 < x16"),
    ({"current_width": 16, "max_width": 16, "current_speed_gts": 2.5, "max_speed_gts": 32.0},
     c.WARNING, "speed 2.5 < 32 GT/s"),
    ({"current_width": 16, "max_width": 16, "current_speed_gts": 32.0, "max_speed_gts": 32.0},
     c.OK, "x16/x16, 32.0/32.0 GT/s (Gen5)"),
])
def test_pcie_link_states(link: dict[str, object], status: str, text: str) -> None:
    inv = {"pcie": [{"bdf": "0000:18:00.0", "kind": "gpu", "vendor": "NVIDIA", "driver": "nvidia", "link": link}]}
    r = c.pcie_links(inv, Expectations())
    assert r.status == status and text in r.evidence[0], r
    if status != c.OK:
        assert "at maximum" not in r.summary


def test_pcie_link_current_speed_unknown_in_sysfs(node: Path) -> None:
    (node / "sys/bus/pci/devices/0000:18:00.0/current_link_speed").write_text("Unknown\n")
    r = _by_check(node, Expectations())["pcie_link"]
    assert r.status == c.FAIL   # the tree's x8 GPU still fails; the unknown link is not "fine"
    assert any(e.startswith("0000:18:00.0 ") and "current speed unknown" in e for e in r.evidence)


def test_a_check_that_cannot_run_fails_but_drains_no_node():
    """A defect inside a check hits every node alike: it fails the preflight (exit 1) but is not
    a reason --on-fail takes a node out for."""
    from clusterbench.preflight import COULD_NOT_RUN, node_problems
    from clusterbench.preflight.checks import FAIL, OK, CheckResult
    results = [CheckResult("nic", FAIL, COULD_NOT_RUN, ["KeyError: 'x'"]),
               CheckResult("gpu_count", OK, "8 GPUs", []), CheckResult("rdma", FAIL, "mlx5_1 port 1 down", [])]
    assert node_problems(results) == ["preflight rdma: mlx5_1 port 1 down"]
    assert node_problems(results[:2]) == []


def test_a_huge_kernel_log_is_not_held_in_memory(tmp_path):
    """A saved log was read whole and split into lines: several times its size in memory (a
    200 MB file took 950 MB), so a kern.log of gigabytes ended the node's preflight."""
    big = tmp_path / "kern.log"
    xid = b"[ 9.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"
    with open(big, "wb") as f:
        f.write(xid)
        f.truncate(64 << 20)   # 64 MiB of NULs, one endless "line" (sparse: no disk)
        f.seek(0, os.SEEK_END)
        f.write(b"\n" + xid)
    tracemalloc.start()
    try:
        res = {r.check: r for r in run_checks(Expectations(), root=H100, log_path=big)}
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res["kernel_log"].status == c.FAIL and "2 x xid Xid 79 on 0000:18:00" in res["kernel_log"].evidence
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB held for a 64 MiB log"
