"""Probe of ``clusterbench env`` and the inventory behind it: crafted sysfs/procfs trees (an Arm
VM, NUMA gaps, bonds, garbage link rates, refused directories), vendor libraries that answer in
odd shapes, a torch that fails to import, and the text output's unknown values and columns."""

from __future__ import annotations

import errno
import json
import os
import platform
import re
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from clusterbench.cli import main
from clusterbench.cli.commands import env as env_cmd
from clusterbench.envinfo import gpulib, inventory, sysfs, torchcheck
from clusterbench.envinfo.diff import Difference
from clusterbench.envinfo.gpulib import AmdSmi, Nvml

ARM_VM = Path(__file__).parent / "data" / "sysfs" / "arm-vm-node"


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


# -- numbers the kernel prints ------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("32.0 GT/s PCIe", 32.0), ("64.0 GT/s PCIe", 64.0), ("8 GT/s", 8.0), ("2.5 GT/s", 2.5),
    ("Unknown", None), (". GT/s", None), ("1.2.3 GT/s PCIe", None), ("9" * 400 + " GT/s", None),
])
def test_a_garbage_link_speed_reads_as_unknown(text, expected):
    """'.' and '1.2.3' matched [0-9.]+ and float() raised: `env` stopped with a traceback."""
    assert sysfs.parse_link_speed(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("400 Gb/sec (4X NDR)", 400.0), ("53.125 Gb/sec (1X HDR)", 53.125), (". Gb/sec", None),
    ("1.2.3 Gb/sec (4X)", None), ("9" * 400 + " Gb/sec", None),
])
def test_a_garbage_rdma_rate_reads_as_unknown(text, expected):
    assert sysfs.parse_rate_gbps(text) == expected


def test_pcie_garbage_speed_in_a_tree_never_raises(tmp_path):
    dev = "sys/bus/pci/devices/0000:01:00.0/"
    root = _tree(tmp_path, {dev + "class": "0x030200\n", dev + "vendor": "0x10de\n",
                            dev + "current_link_speed": ". GT/s\n", dev + "max_link_speed": "32.0 GT/s PCIe\n",
                            dev + "current_link_width": "16\n", dev + "max_link_width": "0\n"})
    (d,) = sysfs.pci_devices(root)
    assert d["link"] == {"current_speed_gts": None, "max_speed_gts": 32.0, "current_width": 16, "max_width": 0}
    assert sysfs.link_downgrade(d["link"]) == []


# -- the Arm VM tree ----------------------------------------------------------------------

def test_arm_cpu_model_sockets_and_cores():
    """arm64's /proc/cpuinfo has no 'model name' and no 'physical id': model, sockets and cores
    were all unknown (the model was whatever `uname -p` said about the machine running it)."""
    cpu = inventory.cpu_info(ARM_VM)
    assert cpu["model"] == "ARM Neoverse-V2"
    assert (cpu["sockets"], cpu["cores"], cpu["logical"]) == (2, 4, 4)


def test_numa_nodes_with_a_gap_and_a_node_of_memory_only():
    nodes = inventory.cpu_info(ARM_VM)["numa_nodes"]
    assert [(n["node"], n["cpus"]) for n in nodes] == [(0, "0-1"), (2, "")]
    assert nodes[1]["memory_bytes"] == 100663296 * 1024


def test_arm_vm_found_by_dmi_and_container_by_systemd_marker():
    """No flags line on Arm, hence no 'hypervisor' flag: a KVM guest read as bare metal."""
    v = inventory.virtualization(ARM_VM, environ={})
    assert v["vm"] and v["vm_evidence"] == ["DMI sys_vendor 'QEMU'", "DMI product_name 'KVM Virtual Machine'"]
    assert v["container"] == "systemd-nspawn"


def test_os_release_from_usr_lib_with_escaped_quotes():
    assert inventory.os_info(ARM_VM)["name"] == 'Ubuntu 24.04.1 LTS "Noble Numbat"'


def test_bonding_masters_is_no_interface():
    """The bonding driver's plain file /sys/class/net/bonding_masters was listed as a NIC."""
    nics = {n["name"]: n for n in sysfs.nics(ARM_VM)}
    assert sorted(nics) == ["bond0", "bond0.100", "enP1p1s0"]
    assert nics["bond0"]["virtual"] and nics["bond0"]["speed_mbps"] == 200000
    assert nics["bond0.100"]["virtual"] and nics["bond0.100"]["speed_mbps"] is None
    assert not nics["enP1p1s0"]["virtual"] and nics["enP1p1s0"]["pci"] == "0000:01:00.0"


def test_rdma_ports_in_number_order_and_a_garbage_rate():
    (dev,) = sysfs.rdma_devices(ARM_VM)
    assert [(p["port"], p["state"], p["rate_gbps"]) for p in dev["ports"]] == [
        (1, "ACTIVE", 400.0), (2, "DOWN", None), (10, "DOWN", None)]


def test_env_text_and_json_on_the_arm_vm(capsys):
    rc, out, err = cli(capsys, "env", "--root", ARM_VM)
    assert rc == 0 and err == ""
    assert "cpu       ARM Neoverse-V2: 2 socket(s), 4 core(s), 4 logical" in out
    assert "NUMA nodes: 0 (cpus 0-1, 240.0 GiB), 2 (cpus none, 96.0 GiB)" in out
    assert "systemd-nspawn in a VM (QEMU)" in out and "bonding_masters" not in out
    assert "None" not in out
    rc, out, _ = cli(capsys, "env", "--root", ARM_VM, "--json")
    (line,) = out.splitlines()
    inv = json.loads(line)
    assert rc == 0 and inv["kind"] == "inventory" and inv["run"] is None
    assert [p["port"] for p in inv["rdma"][0]["ports"]] == [1, 2, 10]


# -- /proc/cpuinfo --------------------------------------------------------------------------

def test_an_empty_model_name_does_not_take_the_next_line(tmp_path):
    """'model name\\t: ' followed by 'stepping : 3': the model read as 'stepping\\t: 3'."""
    root = _tree(tmp_path, {"proc/cpuinfo": "processor\t: 0\nmodel name\t: \nstepping\t: 3\nflags\t\t:\nbugs\t\t: x\n"})
    assert sysfs.cpuinfo_field(root, "model name") is None
    assert sysfs.cpuinfo_field(root, "flags") is None
    assert inventory.cpu_info(root)["model"] is None


@pytest.mark.parametrize("cpuinfo, model", [
    ("processor\t: 0\ncpu\t\t: POWER9, altivec supported\n", "POWER9, altivec supported"),
    ("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n", "ARM Neoverse-N1"),
    ("processor\t: 0\nCPU implementer\t: 0xc0\nCPU part\t: 0xac3\n", "Ampere AmpereOne"),
    ("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xfff\n", "ARM part 0xfff"),
    ("processor\t: 0\nCPU implementer\t: 0x99\n", "Arm implementer 0x99"),
])
def test_cpu_model_of_other_architectures(tmp_path, cpuinfo, model):
    assert inventory.cpu_info(_tree(tmp_path, {"proc/cpuinfo": cpuinfo}))["model"] == model


def test_a_fake_tree_never_reports_this_hosts_cpu_or_arch(tmp_path, monkeypatch):
    """The model fell back to platform.processor() (a `uname -p` subprocess, about this host)."""
    monkeypatch.setattr(platform, "processor", lambda: "x86_64")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    root = _tree(tmp_path, {"proc/cpuinfo": "processor\t: 0\n"})
    assert inventory.cpu_info(root)["model"] is None
    assert inventory.os_info(root)["arch"] is None


# -- directories that cannot be read ------------------------------------------------------

def test_a_numa_directory_that_cannot_be_listed(tmp_path, monkeypatch):
    root = _tree(tmp_path, {"sys/devices/system/node/node0/cpulist": "0-3\n", "proc/cpuinfo": "processor\t: 0\n"})
    listdir = os.listdir

    def refused(path="."):
        if str(path).endswith("system/node"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return listdir(path)

    monkeypatch.setattr(os, "listdir", refused)
    cpu = inventory.cpu_info(root)
    assert cpu["numa_nodes"] == [] and cpu["logical"] == 1


def test_a_module_directory_that_cannot_be_looked_at(tmp_path, monkeypatch):
    """Path.is_dir() raises on EACCES (only 'missing' reads as False): `env` stopped."""
    root = _tree(tmp_path, {"sys/module/nvidia/version": "550.54.15\n", "sys/module/amdgpu/parameters/x": "1\n"})
    stat = os.stat

    def refused(path, *a, **kw):
        if str(path).endswith("sys/module/amdgpu"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return stat(path, *a, **kw)

    monkeypatch.setattr(os, "stat", refused)
    assert inventory.driver_versions(root) == {"nvidia": "550.54.15"}


# -- virtualization ---------------------------------------------------------------------

@pytest.mark.parametrize("vendor, product, vm", [
    ("Xenon Systems", "NitroMax", False),          # a server maker, not the hypervisor Xen
    ("Supermicro", "SYS-821GE-TNHR", False),
    ("Microsoft Corporation", "Virtual Machine", True),
    ("Amazon EC2", "p5.48xlarge", True),
    ("Amazon EC2", "c7g.metal", False),
    ("Google", "Google Compute Engine", True),
])
def test_vm_from_dmi_names(tmp_path, vendor, product, vm):
    root = _tree(tmp_path, {"sys/class/dmi/id/sys_vendor": vendor + "\n",
                            "sys/class/dmi/id/product_name": product + "\n"})
    assert inventory.virtualization(root, environ={})["vm"] is vm


def test_xen_guest_and_apptainer_container(tmp_path):
    root = _tree(tmp_path, {"sys/hypervisor/type": "xen\n", ".singularity.d/env/01-base.sh": ""})
    v = inventory.virtualization(root, environ={})
    assert v["vm"] and v["vm_evidence"] == ["/sys/hypervisor/type is xen"]
    assert v["container"] == "apptainer"


# -- vendor libraries answering in odd shapes ------------------------------------------------

class NVMLError(Exception):
    pass


def _odd_nvml() -> SimpleNamespace:
    def raises(*_a):
        raise NVMLError("Unknown Error\nwith a second line")

    return SimpleNamespace(
        nvmlDeviceGetCount=lambda: 1, nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
        nvmlSystemGetDriverVersion=raises,
        nvmlSystemGetCudaDriverVersion=lambda: "12.4",          # not the int NVML documents
        nvmlDeviceGetName=lambda h: b"NVIDIA H100 80GB HBM3",
        nvmlDeviceGetUUID=raises, nvmlDeviceGetSerial=raises, nvmlDeviceGetVbiosVersion=raises,
        nvmlDeviceGetPciInfo=raises, nvmlDeviceGetEnforcedPowerLimit=raises,
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(total="N/A"),
        nvmlDeviceGetMigMode=lambda h: 1,                       # not a (current, pending) pair
    )


def test_nvml_answers_of_an_odd_shape_are_unknown_values():
    lib = Nvml(_odd_nvml())
    assert lib.versions() == {}
    (d,) = lib.devices()
    assert d["name"] == "NVIDIA H100 80GB HBM3"
    assert (d["memory_bytes"], d["mig"], d["pci"], d["uuid"]) == (None, None, None, None)


def test_amdsmi_answers_of_an_odd_shape_are_unknown_values():
    m = SimpleNamespace(
        AmdSmiMemoryType=SimpleNamespace(VRAM=0),
        amdsmi_get_processor_handles=lambda: ["h0"],
        amdsmi_get_gpu_asic_info=lambda h: "N/A",
        amdsmi_get_gpu_memory_total=lambda h, t: "N/A",
        amdsmi_get_gpu_device_uuid=lambda h: "N/A",
        amdsmi_get_gpu_device_bdf=lambda h: "N/A",
        amdsmi_get_gpu_vbios_info=lambda h: {"version": "N/A"},
        amdsmi_get_gpu_compute_partition=lambda h: "N/A",
        amdsmi_get_gpu_memory_partition=lambda h: "NPS1",
    )
    (d,) = AmdSmi(m).devices()
    assert (d["name"], d["serial"], d["uuid"], d["pci"], d["memory_bytes"], d["vbios"]) == (None,) * 6
    assert d["compute_partition"] is None and d["memory_partition"] == "NPS1"


def test_env_with_an_nvml_of_odd_answers(capsys, monkeypatch):
    mod = ModuleType("pynvml")
    vars(mod).update(vars(_odd_nvml()))
    mod.nvmlInit = lambda: None
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    monkeypatch.setitem(sys.modules, "amdsmi", None)   # import fails: "not installed"
    monkeypatch.setattr(gpulib, "_cache", {})
    monkeypatch.setattr(gpulib, "unavailable", {})
    rc, out, err = cli(capsys, "env")
    assert rc == 0 and err == "", err
    assert "gpus      1 (via nvml)" in out
    assert "  gpu 0: NVIDIA H100 80GB HBM3, ?, pci ?, uuid ?" in out
    rc, out, err = cli(capsys, "env", "--json")
    (gpu,) = json.loads(out)["gpus"]
    assert rc == 0 and gpu["mig"] is None and gpu["memory_bytes"] is None


# -- torch that fails to import ------------------------------------------------------------

def test_env_on_a_node_whose_torch_fails_to_import(capsys, monkeypatch, tmp_path):
    """A CUDA library missing makes `import torch` raise OSError, not ImportError: `env`, the
    command that should say what the node has, stopped with an internal error."""
    _tree(tmp_path, {"torch/__init__.py": "raise OSError('libcudnn.so.9: cannot open shared object file')\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    build = torchcheck.torch_build()
    assert build.version is None and build.reason == "OSError: libcudnn.so.9: cannot open shared object file"
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    rc, out, err = cli(capsys, "env", "--json")
    assert rc == 0 and err == "", err
    inv = json.loads(out)
    assert inv["torch"]["version"] is None and "libcudnn" in inv["torch"]["reason"]


# -- text output ------------------------------------------------------------------------------

def test_unknown_values_print_as_question_marks():
    inv = {"host": None, "gpus": [{"index": 0}],
           "pcie": [{"bdf": "0000:01:00.0", "kind": "gpu", "vendor": "NVIDIA", "numa_node": None,
                     "link": {"current_width": None, "max_width": 16, "current_speed_gts": None,
                              "max_speed_gts": 32.0}}],
           "cpu": {"numa_nodes": [{"node": 3, "cpus": "", "memory_bytes": 1 << 30}]}}
    text = "\n".join(env_cmd.inventory_lines(inv))
    assert "None" not in text
    assert "  gpu 0: ?, ?, pci ?, uuid ?" in text
    assert "pcie      0000:01:00.0 gpu NVIDIA: x?/x16 ?/32.0 GT/s, numa ?" in text
    assert "3 (cpus none, 1.0 GiB)" in text


def test_env_diff_columns_stay_aligned_with_a_long_key(capsys):
    diffs = [Difference("env.NCCL_IB_HCA", "mlx5_0", "mlx5_1", "environment"),
             Difference("env.TORCH_NCCL_ENABLE_TIMING_AND_ASYNC_ERROR_HANDLING", "1", "0", "environment"),
             Difference("nics.ens1f0np0.mtu", 9000, 1500, "network")]
    env_cmd._print(diffs, "run 1 (a)", "run 1 (b)", as_json=False)
    lines = capsys.readouterr().out.splitlines()[1:]
    starts = {re.search(r" \S+  ->  ", line).start() for line in lines}
    assert len(lines) == 3 and len(starts) == 1, lines
