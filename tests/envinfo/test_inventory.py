"""Tests of clusterbench.envinfo.inventory: what this host is."""

import errno
import json
import os
import platform

import pytest
from host_doubles import ARM_VM, DATA, _tree
from paths import TESTS

from clusterbench import peaks
from clusterbench.envinfo import inventory, sysfs


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


def test_partitions_get_no_peak():

    from clusterbench.envinfo.inventory import collect

    mi300x = collect(TESTS / "data" / "sysfs" / "mi300x-node", use_libraries=False)
    assert peaks.partition_of("AMD Instinct MI300X", {"n1": mi300x}) == "CPX/NPS1, CPX/NPS4"
    assert peaks.partition_of("NVIDIA H100 80GB HBM3 MIG 1g.10gb") == "MIG 1g.10gb"
    whole = {"n1": {"gpus": [{"compute_partition": "SPX", "memory_partition": "NPS1"}], "amdgpu": []}}
    assert peaks.partition_of("AMD Instinct MI300X", whole) is None
    assert peaks.partition_of("AMD Instinct MI300X", None) is None
    assert peaks.hbm_bandwidth("AMD Instinct MI300X", "CPX/NPS4") is None
    assert peaks.dense_tflops("AMD Instinct MI300X", "fp16", "CPX/NPS4") is None
    assert peaks.transfer_peak("AMD Instinct MI300X", "h2d", "C0", "G0", "uni", "CPX/NPS4") is None
    assert peaks.peak_of("memory_bandwidth", "AMD Instinct MI300X", {}) == 5300


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


def test_a_pods_execution_context():
    """What separates a pod from bare metal: its cgroup's limits, the CPUs and memlock it got,
    its /dev/shm and huge pages, its own network namespace and an SR-IOV VF beside the veth."""
    inv = inventory.collect(DATA / "k8s-sriov-pod", environ={"KUBERNETES_SERVICE_HOST": "10.96.0.1"})
    assert inv["schema"] == inventory.SCHEMA == 2
    assert inv["virtualization"]["container"] == "kubernetes"
    assert inv["cgroup"]["cpu_max"] == "400000 100000" and inv["cgroup"]["memory_max"] == 64 << 30
    assert inv["process"]["cpus_allowed"] == "4-7"
    assert inv["process"]["rlimits"]["memlock"] == {"soft": 65536, "hard": 65536}
    assert inv["netns"] == {"inode": 4026533001, "same_as_pid1": True}
    mem = inv["memory"]
    assert (mem["shm_bytes"], mem["hugepages_total"], mem["hugepage_size_bytes"], mem["thp_enabled"]) == (
        16 << 30, 1024, 2 << 20, "madvise")
    kinds = {n["name"]: (n["kind"], n["pf"], n["rdma"]) for n in inv["nics"]}
    # a fake tree is never asked of this host's kernel: eth0's driver (veth) stays unknown
    assert kinds == {"eth0": ("virtual", None, []), "net1": ("sriov-vf", "0000:3b:00.0", ["mlx5_2"])}
    json.dumps(inv)


def test_this_hosts_context_is_read_live():
    inv = inventory.collect()
    assert inv["process"]["cpus_allowed"] == sysfs_cpus() and inv["netns"]["inode"]
    assert inv["memory"]["shm_bytes"] and all(n["kind"] for n in inv["nics"])


def sysfs_cpus() -> str:
    from clusterbench.envinfo.context import cpu_list

    return cpu_list(os.sched_getaffinity(0))
