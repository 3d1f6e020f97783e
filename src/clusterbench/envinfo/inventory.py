"""What this host is: OS, container or VM, CPUs and NUMA, memory, GPUs, versions, PCIe, NICs, RDMA,
and what this process was given of it (cgroup limits, CPU affinity, resource limits, network
namespace: ``context.py``).

``collect()`` reads files and asks the vendor libraries; it starts no subprocess, so it costs
tens of milliseconds and runs with every benchmark (``cached()`` once per process). Host files
are read under ``root`` so tests use fake trees; the vendor libraries and PyTorch only when
``root`` is the real ``/``.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shlex
import socket
from pathlib import Path
from typing import Any

from clusterbench.envinfo import context, ethtool, gpulib, sysfs, torchcheck
from clusterbench.envinfo.software import comm_env, software_versions
from clusterbench.envinfo.sysfs import read_text
from clusterbench.records import utc_now

SCHEMA = 2   # 2: cgroup, process, netns, NIC kinds, /dev/shm and huge pages
# Kernel modules whose loaded version matters for GPU and network performance.
DRIVER_MODULES = ("nvidia", "amdgpu", "mlx5_core", "ib_core", "nvidia_peermem", "efa", "bnxt_en", "ionic")
_CONTAINER_WORDS = ("docker", "kubepods", "containerd", "libpod", "lxc", "crio")


def hostname() -> str:
    return os.environ.get("CLUSTERBENCH_HOSTNAME") or socket.gethostname()


def _os_release(root: Path) -> str | None:
    # os-release(5): /etc/os-release, else /usr/lib/os-release; values are shell words, quoted
    # with " or ' and holding escapes (PRETTY_NAME="Foo \"Bar\"")
    text = read_text(root / "etc/os-release") or read_text(root / "usr/lib/os-release")
    fields: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            continue
        try:
            words = shlex.split(value)
        except ValueError:   # an unbalanced quote: the value as written
            words = [value.strip()]
        fields[key] = " ".join(words)
    return fields.get("PRETTY_NAME") or fields.get("NAME") or None


def os_info(root: Path) -> dict[str, Any]:
    kernel = read_text(root / "proc/sys/kernel/osrelease")
    # this process's machine says nothing of a fake tree's
    arch = (platform.machine() or None) if str(root) == "/" else None
    return {"name": _os_release(root), "kernel": kernel or None, "arch": arch}


def virtualization(root: Path, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Container and VM evidence: marker files, cgroup paths, the CPU's hypervisor flag, DMI."""
    environ = dict(os.environ) if environ is None else environ
    container, evidence = None, []
    if sysfs.exists(root / ".dockerenv"):
        container = "docker"
        evidence.append("/.dockerenv exists")
    if sysfs.exists(root / "run/.containerenv"):
        container = container or "podman"
        evidence.append("/run/.containerenv exists")
    # systemd's container interface: nspawn, LXC, podman and others write their name here
    manager = read_text(root / "run/systemd/container")
    if manager:
        container = container or manager
        evidence.append(f"/run/systemd/container says {manager}")
    if sysfs.is_dir(root / ".singularity.d"):
        container = container or "apptainer"
        evidence.append("/.singularity.d exists")
    for path in ("proc/1/cgroup", "proc/self/cgroup"):
        text = read_text(root / path) or ""
        words = [w for w in _CONTAINER_WORDS if w in text]
        if words:
            container = container or ("kubernetes" if "kubepods" in words else words[0])
            evidence.append(f"/{path} mentions {', '.join(words)}")
            break
    if "KUBERNETES_SERVICE_HOST" in environ:
        container = "kubernetes" if container in (None, "docker", "containerd", "crio") else container
        evidence.append("KUBERNETES_SERVICE_HOST is set")

    vm_evidence = []
    flags = sysfs.cpuinfo_field(root, "flags") or ""
    if "hypervisor" in flags.split():
        vm_evidence.append("cpu flag 'hypervisor'")
    dmi = {k: read_text(root / "sys/class/dmi/id" / k) for k in ("sys_vendor", "product_name")}
    dmi = {k: v for k, v in dmi.items() if v}
    # Arm CPUs have no flags line: a guest there is known by its firmware's names, or by Xen's file
    vm_evidence += _dmi_vm(dmi)
    hypervisor = read_text(root / "sys/hypervisor/type")
    if hypervisor:
        vm_evidence.append(f"/sys/hypervisor/type is {hypervisor}")
    return {"container": container, "container_evidence": evidence,
            "vm": bool(vm_evidence), "vm_evidence": vm_evidence, "dmi": dmi}


# Words in the DMI system vendor or product name that only a virtual machine shows (whole
# words: "Xen" is a hypervisor, "Xenon" a maker of servers).
_VM_DMI = re.compile(r"\b(QEMU|KVM|VMware|VirtualBox|innotek|Xen|Virtual Machine|Bochs|Parallels|"
                     r"OpenStack|Google Compute Engine|BHYVE|Cloud Hypervisor)\b", re.I)


def _dmi_vm(dmi: dict[str, str]) -> list[str]:
    out = [f"DMI {k} '{v}'" for k, v in dmi.items() if _VM_DMI.search(v)]
    # every EC2 instance but the bare-metal ones (c7g.metal) is a Nitro guest
    if not out and dmi.get("sys_vendor") == "Amazon EC2" and not dmi.get("product_name", "").endswith(".metal"):
        out.append(f"DMI product_name '{dmi.get('product_name', '?')}' (Amazon EC2, not .metal)")
    return out


def _meminfo_bytes(text: str | None, key: str) -> int | None:
    m = re.search(rf"{re.escape(key)}:\s+(\d+)\s*kB", text or "")
    return int(m.group(1)) * 1024 if m else None


def _sysfs_topology(root: Path) -> tuple[int | None, set[Any]]:
    """Sockets and cores from ``/sys/devices/system/cpu/cpu*/topology``: the distinct package
    ids, and the distinct sets of hardware threads that share a core."""
    base = root / "sys/devices/system/cpu"
    packages, cores = set(), set()
    for name in sysfs.listdir(base):
        if not re.fullmatch(r"cpu\d+", name):
            continue
        package = sysfs.read_int(base / name / "topology/physical_package_id")
        if package is not None and package >= 0:
            packages.add(package)
        siblings = read_text(base / name / "topology/core_cpus_list") \
            or read_text(base / name / "topology/thread_siblings_list")
        if siblings:
            cores.add(siblings)
    return len(packages) or None, cores


def cpu_info(root: Path) -> dict[str, Any]:
    text = read_text(root / "proc/cpuinfo") or ""
    logical = len(re.findall(r"^processor\s*:", text, re.M))
    sockets = len(set(re.findall(r"^physical id\s*:\s*(\d+)", text, re.M))) or None
    cores = {(s, c) for s, c in re.findall(r"^physical id\s*:\s*(\d+)[\s\S]*?^core id\s*:\s*(\d+)", text, re.M)}
    nodes = []
    node_base = root / "sys/devices/system/node"
    for name in sorted(sysfs.listdir(node_base), key=lambda s: (len(s), s)):
        if not re.fullmatch(r"node\d+", name):
            continue
        nodes.append({"node": int(name[4:]), "cpus": read_text(node_base / name / "cpulist"),
                      "memory_bytes": _meminfo_bytes(read_text(node_base / name / "meminfo"), "MemTotal")})
    if sockets is None:   # Arm: no physical id / core id in /proc/cpuinfo
        sockets, cores = _sysfs_topology(root)
    cpu0 = root / "sys/devices/system/cpu/cpu0/cpufreq"
    return {
        # never platform.processor(): it runs `uname -p` and answers for this host, not root
        "model": sysfs.cpu_model_name(root),
        "sockets": sockets, "cores": len(cores) or None, "logical": logical or None,
        "online": read_text(root / "sys/devices/system/cpu/online"),
        "governor": read_text(cpu0 / "scaling_governor"),
        "max_mhz": (lambda k: k / 1000 if k else None)(sysfs.read_int(cpu0 / "cpuinfo_max_freq")),
        "numa_nodes": nodes,
    }


def memory_info(root: Path) -> dict[str, Any]:
    text = read_text(root / "proc/meminfo")
    return {"total_bytes": _meminfo_bytes(text, "MemTotal"), "swap_bytes": _meminfo_bytes(text, "SwapTotal"),
            **context.hugepages(root), "shm_bytes": context.shm_bytes(root)}


def driver_versions(root: Path) -> dict[str, str]:
    out = {}
    for mod in DRIVER_MODULES:
        v = read_text(root / "sys/module" / mod / "version")
        if v:
            out[mod] = v
        elif sysfs.is_dir(root / "sys/module" / mod):
            out[mod] = "loaded"
    rocm = read_text(root / "opt/rocm/.info/version")
    if rocm:
        out["rocm_install"] = rocm
    return out


def _torch_gpus() -> list[dict[str, Any]]:
    import torch

    if not torch.cuda.is_available():
        return []
    vendor = "AMD" if getattr(torch.version, "hip", None) else "NVIDIA"
    out = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        bdf = None
        if hasattr(p, "pci_bus_id"):
            bdf = f"{getattr(p, 'pci_domain_id', 0):04x}:{p.pci_bus_id:02x}:{getattr(p, 'pci_device_id', 0):02x}.0"
        out.append({"index": i, "vendor": vendor, "source": "torch", "name": p.name,
                    "uuid": str(getattr(p, "uuid", "")) or None, "serial": None, "pci": bdf,
                    "memory_bytes": int(p.total_memory),
                    "arch": getattr(p, "gcnArchName", None) or f"sm_{p.major}{p.minor}"})
    return out


# PCI device ids of common data-center GPUs, to name a GPU no library can see.
PCI_GPU_NAMES = {
    ("0x10de", "0x20b0"): "NVIDIA A100-SXM4-40GB", ("0x10de", "0x20b2"): "NVIDIA A100-SXM4-80GB",
    ("0x10de", "0x20b5"): "NVIDIA A100 80GB PCIe", ("0x10de", "0x2330"): "NVIDIA H100 80GB HBM3",
    ("0x10de", "0x2331"): "NVIDIA H100 PCIe", ("0x10de", "0x2335"): "NVIDIA H200",
    ("0x1002", "0x740c"): "AMD Instinct MI250X/MI250", ("0x1002", "0x740f"): "AMD Instinct MI210",
    ("0x1002", "0x74a1"): "AMD Instinct MI300X",
}


def pci_gpus(root: Path) -> list[dict[str, Any]]:
    """GPUs on the PCI bus (NVIDIA and AMD display/3D/accelerator functions): the fallback when
    no library or PyTorch sees any, which tells "driver not loaded" apart from "no GPU"."""
    cards = {c["pci"]: c for c in sysfs.amdgpu_cards(root) if c.get("pci")}
    out = []
    for d in sysfs.pci_devices(root, kinds=sysfs.GPU_KINDS):
        if d.get("vendor") not in ("NVIDIA", "AMD"):
            continue
        card = cards.get(d["bdf"], {})
        name = card.get("product_name") or PCI_GPU_NAMES.get((d.get("vendor_id"), d.get("device_id"))) \
            or f"{d['vendor']} GPU (device {d.get('device_id')})"
        out.append({"index": len(out), "vendor": d["vendor"], "source": "pci", "name": name,
                    "uuid": card.get("unique_id"), "serial": card.get("serial_number"), "pci": d["bdf"],
                    "memory_bytes": card.get("vram_bytes"), "driver": d.get("driver")})
    return out


def gpus(root: Path, use_libraries: bool = True) -> tuple[list[dict[str, Any]], str, dict[str, str]]:
    """GPUs from NVML or AMD SMI, else PyTorch; with partition modes from sysfs merged by PCI address."""
    found: list[dict[str, Any]] = []
    source = "none"
    versions: dict[str, str] = {}
    if use_libraries:
        for lib in gpulib.libraries():
            found += lib.devices()
            versions.update(lib.versions())
            source = "nvml" if lib.vendor == "NVIDIA" else "amdsmi"
        if not found:
            try:
                found = _torch_gpus()
            except Exception as e:  # noqa: BLE001 - a broken torch install leaves GPUs unknown
                gpulib.unavailable["torch"] = f"{type(e).__name__}: {e}"
            source = "torch" if found else "none"
    if not found:
        found = pci_gpus(root)
        source = "pci" if found else "none"
    cards = {c["pci"]: c for c in sysfs.amdgpu_cards(root) if c.get("pci")}
    for g in found:
        card = cards.get(g.get("pci") or "")
        if card:
            g.setdefault("compute_partition", card["compute_partition"])
            g.setdefault("memory_partition", card["memory_partition"])
            g["compute_partition"] = g["compute_partition"] or card["compute_partition"]
            g["memory_partition"] = g["memory_partition"] or card["memory_partition"]
            g.setdefault("vbios", card["vbios_version"])
    return found, source, versions


def collect(root: Path | str = "/", use_libraries: bool | None = None,
            environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The full inventory of this host as a JSON-ready dict."""
    root = Path(root)
    if use_libraries is None:
        use_libraries = str(root) == "/"
    found, source, lib_versions = gpus(root, use_libraries)
    versions: dict[str, str] = {"python": platform.python_version()}
    if use_libraries:
        try:
            versions.update(software_versions())
        except Exception as e:  # noqa: BLE001 - torch missing: report the rest
            gpulib.unavailable["torch"] = f"{type(e).__name__}: {e}"
    versions.update(lib_versions)
    # What torch makes of this node, for the preflight check "torch can use the GPUs".
    build = torchcheck.torch_build().to_dict() if use_libraries else None
    return {
        "schema": SCHEMA,
        "host": hostname(),
        "collected_at": utc_now(),
        "os": os_info(root),
        "virtualization": virtualization(root, environ),
        "cgroup": context.cgroup(root),
        "process": context.process(root),
        "netns": context.netns(root),
        "cpu": cpu_info(root),
        "memory": memory_info(root),
        "gpus": found,
        "gpu_source": source,
        "gpu_library_errors": dict(gpulib.unavailable) if use_libraries else {},
        "amdgpu": sysfs.amdgpu_cards(root),
        "drm_gpus": torchcheck.drm_gpus(root),
        "torch": build,
        "rocm_version": torchcheck.rocm_version(root),
        "versions": versions,
        "drivers": driver_versions(root),
        "pcie": sysfs.pci_devices(root),
        # the driver of a virtual interface only from this namespace's kernel, never for a fake tree
        "nics": sysfs.nics(root, ethtool.driver if str(root) == "/" else None),
        "rdma": sysfs.rdma_devices(root),
        "env": comm_env(environ),
    }


@functools.lru_cache(maxsize=1)
def cached() -> dict[str, Any]:
    """This host's inventory, collected once per process (a run's ranks reuse it)."""
    return collect()
