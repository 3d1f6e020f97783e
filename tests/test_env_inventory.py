"""The host inventory: fake trees for the file-based parts, the real host for the rest, and the
vendor libraries through their real Python packages where they are installed."""

import json
from pathlib import Path

import pytest

from clusterbench.envinfo import gpulib, inventory

DATA = Path(__file__).parent / "data" / "sysfs"


def test_fake_h100_node():
    inv = inventory.collect(DATA / "h100-node", environ={"NCCL_IB_HCA": "mlx5_0", "PATH": "/bin"})
    assert inv["os"] == {"name": "Ubuntu 22.04.4 LTS", "kernel": "5.15.0-105-generic", "arch": inv["os"]["arch"]}
    assert inv["virtualization"]["container"] == "kubernetes"
    assert not inv["virtualization"]["vm"]
    assert inv["virtualization"]["dmi"] == {"sys_vendor": "NVIDIA", "product_name": "DGXH100"}
    cpu = inv["cpu"]
    assert (cpu["sockets"], cpu["cores"], cpu["logical"], cpu["governor"], cpu["max_mhz"]) == (2, 8, 8, "performance", 3700.0)
    assert [n["node"] for n in cpu["numa_nodes"]] == [0, 1] and cpu["numa_nodes"][1]["cpus"] == "4-7"
    assert inv["memory"]["total_bytes"] == 2113249108 * 1024
    assert inv["drivers"] == {"nvidia": "550.54.15", "mlx5_core": "24.01-0.3.3"}
    # no vendor library for a fake root: the GPUs come from the PCI bus, named by device id
    assert inv["gpu_source"] == "pci"
    assert [g["name"] for g in inv["gpus"]] == ["NVIDIA H100 80GB HBM3"] * 3
    assert inv["env"] == {"NCCL_IB_HCA": "mlx5_0"}
    json.dumps(inv)  # stored as run metadata: must be JSON


def test_fake_mi300x_node_partitions_merged_into_gpus():
    inv = inventory.collect(DATA / "mi300x-node", environ={})
    assert inv["virtualization"]["container"] == "docker"
    assert inv["drivers"]["amdgpu"] == "6.8.5" and inv["drivers"]["rocm_install"] == "6.2.2-116"
    gpus = inv["gpus"]
    assert [(g["name"], g["compute_partition"], g["memory_partition"]) for g in gpus] == [
        ("AMD Instinct MI300X", "CPX", "NPS4"), ("AMD Instinct MI300X", "CPX", "NPS1")]
    assert gpus[0]["memory_bytes"] == 206141652992 and gpus[0]["pci"] == "0000:0c:00.0"


def test_broken_tree_never_crashes():
    inv = inventory.collect(DATA / "broken-node", environ={})
    assert inv["cpu"]["logical"] is None and inv["memory"]["total_bytes"] is None
    assert inv["os"]["name"] is None
    json.dumps(inv)


def test_empty_root(tmp_path):
    inv = inventory.collect(tmp_path, environ={})
    assert inv["gpus"] == [] and inv["gpu_source"] == "none" and inv["nics"] == []
    assert inv["virtualization"] == {"container": None, "container_evidence": [], "vm": False,
                                     "vm_evidence": [], "dmi": {}}


def test_real_host_inventory():
    inv = inventory.collect()
    assert inv["host"] and inv["cpu"]["logical"] and inv["memory"]["total_bytes"]
    assert "torch" in inv["versions"] and "python" in inv["versions"]
    assert inv["gpu_source"] in ("nvml", "amdsmi", "torch", "pci", "none")
    if inv["gpu_source"] == "none":
        assert inv["gpu_library_errors"]  # says why no GPU library answered
    json.dumps(inv)
    assert inventory.cached() is inventory.cached()


def test_hostname_override(monkeypatch):
    monkeypatch.setenv("CLUSTERBENCH_HOSTNAME", "node-a")
    assert inventory.hostname() == "node-a"


def _nvml_or_skip():
    pytest.importorskip("pynvml", reason="nvidia-ml-py not installed")
    lib = gpulib.nvml()
    if lib is None or not lib.handles:
        pytest.skip(f"NVML did not initialise here: {gpulib.unavailable.get('nvml', 'no GPU')}")
    return lib


def test_nvml_absence_is_clean():
    # With nvidia-ml-py installed but no NVIDIA driver, init fails: None plus a reason, no exception.
    lib = gpulib.nvml()
    if lib is None:
        assert gpulib.unavailable["nvml"]
    assert gpulib.nvml() is lib  # initialised (or failed) once per process


def test_amdsmi_absence_is_clean():
    lib = gpulib.amdsmi()
    if lib is None:
        assert gpulib.unavailable["amdsmi"]


@pytest.mark.gpu
def test_nvml_devices_and_samples():
    lib = _nvml_or_skip()
    devs = lib.devices()
    assert devs and all(d["name"] and d["memory_bytes"] for d in devs)
    metrics = {m for _, m, _, _ in lib.sample()}
    assert {"gpu_power", "gpu_temperature", "gpu_sm_clock", "gpu_memory_used"} <= metrics
    assert all("enabled" in e for e in lib.ecc())


@pytest.mark.gpu
def test_amdsmi_devices_and_samples():
    pytest.importorskip("amdsmi", reason="amdsmi not installed")
    lib = gpulib.amdsmi()
    if lib is None or not lib.handles:
        pytest.skip(f"AMD SMI did not initialise here: {gpulib.unavailable.get('amdsmi', 'no GPU')}")
    devs = lib.devices()
    assert devs and all(d["name"] for d in devs)
    assert {m for _, m, _, _ in lib.sample()} & {"gpu_power", "gpu_temperature"}


def test_short_bdf():
    assert gpulib._short_bdf("00000000:3B:00.0") == "0000:3b:00.0"
