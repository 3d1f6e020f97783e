"""Hardware facts the kernel exposes as files: PCIe links, NICs, RDMA ports, AMD GPU partitions,
CPU caches.

Every reader takes ``root`` (default ``/``) so tests point it at a fake tree with the real layout
(``tests/data/sysfs/``). A file that is missing or unreadable (permissions, a driver that answers
EINVAL, a node that vanished) reads as ``None``: the caller reports "not available", never crashes.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

# PCI class codes (first two bytes of the 24-bit class) that matter for an AI cluster.
PCI_CLASSES = {
    "0300": "display",        # VGA-compatible GPU
    "0302": "gpu",            # 3D controller (NVIDIA data-center GPUs)
    "0380": "display",
    "1200": "accelerator",    # processing accelerator (AMD Instinct MI300 and later)
    "0200": "ethernet",
    "0207": "infiniband",
    "0280": "network",
}
GPU_KINDS = ("gpu", "display", "accelerator")
NIC_KINDS = ("ethernet", "infiniband", "network")
VENDORS = {"0x10de": "NVIDIA", "0x1002": "AMD", "0x15b3": "Mellanox", "0x8086": "Intel",
           "0x14e4": "Broadcom", "0x1dd8": "AMD Pensando", "0x1d0f": "Amazon", "0x1af4": "virtio"}


def read_text(path: Path | str) -> str | None:
    """The stripped contents of a sysfs/procfs file, or None when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except (OSError, ValueError):
        return None


def _cpuinfo_value(text: str, key: str) -> str | None:
    # [ \t], not \s: a key with an empty value ("model name\t: ") must not take the next line
    m = re.search(rf"^{re.escape(key)}[ \t]*:[ \t]*(.*)$", text, re.M)
    return (m.group(1).strip() or None) if m else None


def cpuinfo_field(root: Path | str, key: str) -> str | None:
    """The value of ``key`` for the first CPU listed in /proc/cpuinfo (``model name``, ``flags``)."""
    return _cpuinfo_value(read_text(Path(root) / "proc/cpuinfo") or "", key)


# Arm CPUs have no "model name" in /proc/cpuinfo, only the implementer and part numbers of the
# MIDR register; the cores of data-center Arm nodes (Grace is Neoverse-V2, Altra Neoverse-N1).
ARM_IMPLEMENTERS = {"0x41": "ARM", "0x48": "HiSilicon", "0x4e": "NVIDIA", "0x51": "Qualcomm",
                    "0x61": "Apple", "0xc0": "Ampere"}
ARM_PARTS = {("0x41", "0xd0c"): "Neoverse-N1", ("0x41", "0xd40"): "Neoverse-V1",
             ("0x41", "0xd49"): "Neoverse-N2", ("0x41", "0xd4f"): "Neoverse-V2",
             ("0x41", "0xd84"): "Neoverse-V3", ("0x41", "0xd8e"): "Neoverse-N3",
             ("0x48", "0xd01"): "Kunpeng-920", ("0xc0", "0xac3"): "AmpereOne"}


def cpu_model_name(root: Path | str) -> str | None:
    """The CPU's model from /proc/cpuinfo: ``model name`` (x86), ``cpu`` (POWER), or the Arm
    implementer and part (``ARM Neoverse-V2``); None when the file says none of these."""
    text = read_text(Path(root) / "proc/cpuinfo") or ""
    model = _cpuinfo_value(text, "model name") or _cpuinfo_value(text, "cpu")
    if model:
        return model
    implementer = (_cpuinfo_value(text, "CPU implementer") or "").lower()
    part = (_cpuinfo_value(text, "CPU part") or "").lower()
    if not implementer:
        return None
    vendor = ARM_IMPLEMENTERS.get(implementer, f"Arm implementer {implementer}")
    name = ARM_PARTS.get((implementer, part)) or (f"part {part}" if part else None)
    return f"{vendor} {name}" if name else vendor


def read_int(path: Path | str, base: int = 10) -> int | None:
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text, base)
    except ValueError:
        return None


def _link_name(path: Path) -> str | None:
    """Basename of a symlink's target (``device/driver`` -> ``mlx5_core``), None if absent."""
    try:
        return os.path.basename(os.path.realpath(path)) if os.path.lexists(path) else None
    except OSError:
        return None


def listdir(path: Path | str) -> list[str]:
    """The sorted entries of a directory; [] when it is missing or cannot be listed."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def is_dir(path: Path | str) -> bool:
    """Whether ``path`` is a directory; False, not an error, when it cannot even be looked at
    (``Path.is_dir`` raises on EACCES, as a container's security profile answers)."""
    return os.path.isdir(path)


def exists(path: Path | str) -> bool:
    return os.path.exists(path)


def _number_key(name: str) -> tuple[int, int | str]:
    """Sort key that puts ``2`` before ``10`` (port and GID numbers), other names after."""
    return (0, int(name)) if name.isdigit() else (1, name)


# A decimal number as the kernel prints one; ``[0-9.]+`` would also take ``.`` or ``1.2.3``,
# which float() refuses.
_DECIMAL = r"([0-9]+(?:\.[0-9]+)?)"


def _decimal(text: str | None, unit: str) -> float | None:
    if not text:
        return None
    m = re.match(rf"\s*{_DECIMAL}\s*{unit}", text)
    if not m:
        return None
    value = float(m.group(1))
    return value if math.isfinite(value) else None   # hundreds of digits read as inf


def parse_link_speed(text: str | None) -> float | None:
    """``"16.0 GT/s PCIe"`` (kernel >= 5.x) or ``"8 GT/s"`` (older) -> 16.0 / 8.0 GT/s; else None."""
    return _decimal(text, "GT/s")


# PCIe generation by per-lane transfer rate, for messages ("Gen4 x16").
_GEN_BY_SPEED = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


def pcie_gen(speed: float | None) -> int | None:
    return _GEN_BY_SPEED.get(speed) if speed is not None else None


def _aer_totals(dev: Path) -> dict[str, int]:
    """PCIe AER counters: ``aer_dev_correctable`` etc. hold ``NAME COUNT`` lines with a TOTAL_ line."""
    out: dict[str, int] = {}
    for kind in ("correctable", "nonfatal", "fatal"):
        text = read_text(dev / f"aer_dev_{kind}")
        if text is None:
            continue
        for line in text.splitlines():
            name, _, count = line.strip().rpartition(" ")
            if name.startswith("TOTAL_") and count.isdigit():
                out[kind] = int(count)
    return out


def pci_devices(root: Path | str = "/", kinds: tuple[str, ...] = GPU_KINDS + NIC_KINDS) -> list[dict[str, Any]]:
    """PCI functions of the given kinds with their link state, NUMA node, driver and AER totals."""
    base = Path(root) / "sys/bus/pci/devices"
    devices = []
    for bdf in listdir(base):
        dev = base / bdf
        cls = read_text(dev / "class")
        if not cls or not cls.startswith("0x") or len(cls) < 6:
            continue
        kind = PCI_CLASSES.get(cls[2:6])
        if kind not in kinds:
            continue
        vendor = read_text(dev / "vendor")
        cur_speed_text, max_speed_text = read_text(dev / "current_link_speed"), read_text(dev / "max_link_speed")
        d: dict[str, Any] = {
            "bdf": bdf, "kind": kind, "class": cls, "vendor_id": vendor,
            "vendor": VENDORS.get(vendor or "", vendor), "device_id": read_text(dev / "device"),
            "driver": _link_name(dev / "driver"), "numa_node": read_int(dev / "numa_node"),
            "link": {
                "current_speed_gts": parse_link_speed(cur_speed_text),
                "max_speed_gts": parse_link_speed(max_speed_text),
                "current_width": read_int(dev / "current_link_width"),
                "max_width": read_int(dev / "max_link_width"),
            },
        }
        aer = _aer_totals(dev)
        if aer:
            d["aer"] = aer
        devices.append(d)
    return devices


def link_downgrade(link: dict[str, Any]) -> list[str]:
    """What a link runs below: ``["width x8 < x16", "speed 8.0 < 16.0 GT/s"]``; [] when at max or unknown."""
    out = []
    cw, mw = link.get("current_width"), link.get("max_width")
    if cw is not None and mw is not None and 0 < cw < mw:
        out.append(f"width x{cw} < x{mw}")
    if cw == 0 and mw:
        out.append(f"link down (width x0, max x{mw})")
    cs, ms = link.get("current_speed_gts"), link.get("max_speed_gts")
    if cs is not None and ms is not None and cs < ms:
        out.append(f"speed {cs:g} < {ms:g} GT/s")
    return out


# -- network interfaces -------------------------------------------------------------------

# Paravirtual NICs: what a VM's guest sees of its host's network (a vNIC), though on a PCI bus.
PARAVIRTUAL_DRIVERS = ("virtio_net", "vmxnet3", "hv_netvsc", "xen-netfront")
# uevent DEVTYPE of virtual interfaces that set one, and the kind each is.
DEVTYPES = {"bond": "bond", "bridge": "bridge", "vlan": "vlan", "vxlan": "vxlan", "geneve": "geneve",
            "wireguard": "wireguard", "macsec": "macsec", "team": "team", "wlan": "wlan"}
# The driver of a virtual interface (``ethtool -i``: sysfs has none for it) and its kind.
VIRTUAL_DRIVERS = {"veth": "veth", "macvlan": "macvlan", "macvtap": "macvtap", "ipvlan": "ipvlan",
                   "ipvtap": "ipvtap", "bridge": "bridge", "bonding": "bond", "team": "team",
                   "802.1Q VLAN Support": "vlan", "vxlan": "vxlan", "geneve": "geneve", "tun": "tun",
                   "dummy": "dummy", "wireguard": "wireguard", "vrf": "vrf", "openvswitch": "openvswitch",
                   "ifb": "ifb", "nlmon": "nlmon", "ipip": "tunnel", "gre": "tunnel", "sit": "tunnel"}
ARPHRD_LOOPBACK = 772


def nic_kind(d: Path, name: str, driver: str | None) -> str:
    """What carries an interface's traffic: ``physical`` (a NIC on a bus), ``sriov-vf`` (an
    SR-IOV virtual function: ``device/physfn`` names its PF), ``vnic`` (a VM's paravirtual NIC),
    ``bond``, ``bridge``, ``vlan``, ``veth``, ``macvlan``, ``ipvlan``, ... (virtual, by their
    sysfs directories, uevent ``DEVTYPE`` or driver), ``loopback``; ``virtual`` where nothing
    says which (a veth and a macvlan whose lower device is in another namespace look alike in
    sysfs: only the driver tells them apart)."""
    if name == "lo" or read_int(d / "type") == ARPHRD_LOOPBACK:
        return "loopback"
    if is_dir(d / "bonding"):
        return "bond"
    if is_dir(d / "bridge"):
        return "bridge"
    if os.path.lexists(d / "device"):
        if os.path.lexists(d / "device" / "physfn"):
            return "sriov-vf"
        return "vnic" if driver in PARAVIRTUAL_DRIVERS else "physical"
    m = re.search(r"^DEVTYPE=(\S+)", read_text(d / "uevent") or "", re.M)
    if m and m.group(1) in DEVTYPES:
        return DEVTYPES[m.group(1)]
    return VIRTUAL_DRIVERS.get(driver or "", "virtual")


def default_route_interfaces(root: Path | str = "/") -> set[str]:
    """Interfaces that hold a default route (IPv4 ``/proc/net/route``, IPv6 ``ipv6_route``):
    those carrying the traffic to other networks. ``/proc/net`` is this process's namespace's."""
    base = Path(root) / "proc/net"
    out = set()
    for line in (read_text(base / "route") or "").splitlines()[1:]:
        f = line.split()
        if len(f) >= 8 and f[1] == "00000000" and f[7] == "00000000":
            out.add(f[0])
    for line in (read_text(base / "ipv6_route") or "").splitlines():
        f = line.split()
        if len(f) >= 10 and set(f[0]) == {"0"} and f[1] == "00" and f[9] != "lo":
            out.add(f[9])
    return out


def rdma_of_netdevs(root: Path | str = "/") -> dict[str, list[str]]:
    """Network interface -> the RDMA devices on it (``/sys/class/infiniband/*/device/net``)."""
    base = Path(root) / "sys/class/infiniband"
    out: dict[str, list[str]] = {}
    for ib in listdir(base):
        for netdev in listdir(base / ib / "device" / "net"):
            out.setdefault(netdev, []).append(ib)
    return out


def nics(root: Path | str = "/", driver_of: Callable[[str, int | None], str | None] | None = None
         ) -> list[dict[str, Any]]:
    """Network interfaces (loopback excluded): kind (``nic_kind``), speed (Mb/s), MTU, state,
    driver, PCI address, the PF of an SR-IOV VF and the VFs a PF has, the bond or bridge it is
    a port of, its RDMA devices, and whether it holds a default route. ``driver_of(name,
    ifindex)`` names the driver of an interface sysfs gives none (the ethtool ioctl, for this
    host's namespace only)."""
    base = Path(root) / "sys/class/net"
    routes = default_route_interfaces(root)
    rdma = rdma_of_netdevs(root)
    out = []
    for name in listdir(base):
        d = base / name
        # an interface is a link to a directory (left listed when dangling: an interface that
        # went away while read); the bonding driver adds a plain file, ``bonding_masters``
        if name == "lo" or os.path.isfile(d):
            continue
        # -1 or EINVAL when the link is down or virtual; 4294967295 (SPEED_UNKNOWN printed
        # unsigned by some drivers) or any other value past an int's range is no speed either
        speed = read_int(d / "speed")
        has_device = os.path.lexists(d / "device")
        driver = _link_name(d / "device" / "driver") if has_device else None
        if driver is None and driver_of is not None:
            driver = driver_of(name, read_int(d / "ifindex"))
        physfn = d / "device" / "physfn"
        is_vf = has_device and os.path.lexists(physfn)
        vfs = read_int(d / "device" / "sriov_numvfs") if has_device and not is_vf else None
        out.append({
            "name": name,
            "kind": nic_kind(d, name, driver),
            "speed_mbps": speed if speed is not None and 0 < speed < 2**31 else None,
            "mtu": read_int(d / "mtu"),
            "operstate": read_text(d / "operstate"),
            "carrier": read_int(d / "carrier"),
            "address": read_text(d / "address"),
            "driver": driver,
            "pci": _pci_of(d / "device") if has_device else None,
            "virtual": not has_device,
            "pf": _pf(physfn) if is_vf else None,
            "sriov_vfs": vfs or None,
            "master": _link_name(d / "master") if os.path.lexists(d / "master") else None,
            "rdma": rdma.get(name, []),
            "default_route": name in routes,
        })
    return out


def _pf(physfn: Path) -> str | None:
    """An SR-IOV VF's physical function: its PCI address, with its interface where this
    namespace shows it (a pod does not: the PF's interface is in the host's namespace)."""
    pci, names = _link_name(physfn), ",".join(listdir(physfn / "net"))
    return f"{pci} ({names})" if pci and names else pci


def _pci_of(device_link: Path) -> str | None:
    name = _link_name(device_link)
    if name and re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$", name):
        return name
    # virtio NICs: device -> .../0000:00:03.0/virtio2: the PCI function is the parent.
    try:
        parent = os.path.basename(os.path.dirname(os.path.realpath(device_link)))
    except OSError:
        return None
    return parent if re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:", parent) else None


# -- RDMA ---------------------------------------------------------------------------------

def parse_state(text: str | None) -> str | None:
    """``"4: ACTIVE"`` -> ``"ACTIVE"``; ``"5: LinkUp"`` -> ``"LinkUp"``."""
    if text is None:
        return None
    return text.split(":", 1)[1].strip() if ":" in text else text


def parse_rate_gbps(text: str | None) -> float | None:
    """``"200 Gb/sec (4X HDR)"`` -> 200.0."""
    return _decimal(text, "Gb/sec")


_ZERO_GID = re.compile(r"^[0:]+$")


def _gids(port: Path) -> list[dict[str, Any]]:
    gids = []
    for idx in sorted(listdir(port / "gids"), key=_number_key):
        gid = read_text(port / "gids" / idx)
        if not gid or _ZERO_GID.match(gid):
            continue  # unused table entries read as all zeros
        gids.append({
            "index": int(idx) if idx.isdigit() else idx, "gid": gid,
            # unused or IB-only entries answer EINVAL here
            "type": read_text(port / "gid_attrs" / "types" / idx),
            "netdev": read_text(port / "gid_attrs" / "ndevs" / idx),
        })
    return gids


def rdma_devices(root: Path | str = "/") -> list[dict[str, Any]]:
    """RDMA devices from ``/sys/class/infiniband``: firmware, HCA type, ports with rate and GIDs."""
    base = Path(root) / "sys/class/infiniband"
    out = []
    for name in listdir(base):
        d = base / name
        ports = []
        for p in sorted(listdir(d / "ports"), key=_number_key):
            port = d / "ports" / p
            rate = read_text(port / "rate")
            ports.append({
                "port": int(p) if p.isdigit() else p,
                "state": parse_state(read_text(port / "state")),
                "phys_state": parse_state(read_text(port / "phys_state")),
                "rate": rate, "rate_gbps": parse_rate_gbps(rate),
                "link_layer": read_text(port / "link_layer"),
                "lid": read_text(port / "lid"),
                "gids": _gids(port),
            })
        out.append({
            "name": name, "node_type": read_text(d / "node_type"), "hca_type": read_text(d / "hca_type"),
            "fw_ver": read_text(d / "fw_ver"), "board_id": read_text(d / "board_id"),
            "node_guid": read_text(d / "node_guid"),
            "pci": _pci_of(d / "device") if os.path.lexists(d / "device") else None,
            "netdevs": listdir(d / "device" / "net"),
            "ports": ports,
        })
    return out


# -- AMD GPUs (amdgpu driver files) -------------------------------------------------------

def _ras_counts(ras: Path) -> dict[str, dict[str, int]]:
    """``ras/umc_err_count`` holds ``ue: N`` and ``ce: M`` lines (uncorrectable, correctable)."""
    out: dict[str, dict[str, int]] = {}
    for f in listdir(ras):
        if not f.endswith("_err_count"):
            continue
        text = read_text(ras / f)
        if text is None:
            continue
        counts = {}
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if value.strip().isdigit():
                counts[key.strip()] = int(value.strip())
        if counts:
            out[f[: -len("_err_count")]] = counts
    return out


def amdgpu_cards(root: Path | str = "/") -> list[dict[str, Any]]:
    """amdgpu devices under ``/sys/class/drm/card*/device``: identity, VRAM, partitions, RAS counts."""
    base = Path(root) / "sys/class/drm"
    out = []
    for card in listdir(base):
        if not re.fullmatch(r"card\d+", card):
            continue
        dev = base / card / "device"
        if _link_name(dev / "driver") != "amdgpu":
            continue
        vram = read_int(dev / "mem_info_vram_total")
        out.append({
            "card": card, "pci": _pci_of(dev),
            "product_name": read_text(dev / "product_name"),
            "serial_number": read_text(dev / "serial_number"),
            "unique_id": read_text(dev / "unique_id"),
            "vbios_version": read_text(dev / "vbios_version"),
            "vram_bytes": vram,
            "compute_partition": read_text(dev / "current_compute_partition"),
            "available_compute_partitions": _split_list(read_text(dev / "available_compute_partition")),
            "memory_partition": read_text(dev / "current_memory_partition"),
            "available_memory_partitions": _split_list(read_text(dev / "available_memory_partition")),
            "ras": _ras_counts(dev / "ras"),
        })
    return out


def _split_list(text: str | None) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()] if text else []


# The kernel prints cache sizes as ``32768K``; a ``M`` or ``G`` suffix or plain bytes read too.
_CACHE_SIZE = re.compile(r"([0-9]+)\s*([KMG]?)B?", re.IGNORECASE)


def cache_size(text: str | None) -> int | None:
    """Bytes of a sysfs cache ``size`` (``32768K`` -> 33554432); None for garbage."""
    m = _CACHE_SIZE.fullmatch((text or "").strip())
    if not m or len(m.group(1)) > 15:
        return None
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]


def last_level_cache(root: Path | str = "/", cpus: set[int] | None = None) -> int | None:
    """Bytes of the highest-level data or unified CPU cache, summed over its instances that the
    CPUs ``cpus`` (default: every CPU sysfs lists) use: one L3 shared by all cores, or one per
    core complex on an AMD EPYC (several instances, each counted once, by the CPUs it is
    shared by). None where sysfs tells nothing (no ``cache`` directories, garbage sizes)."""
    base = Path(root) / "sys" / "devices" / "system" / "cpu"
    instances: dict[tuple[int, str], int] = {}
    for name in listdir(base):
        if not re.fullmatch(r"cpu[0-9]+", name) or (cpus is not None and int(name[3:]) not in cpus):
            continue
        for index in listdir(base / name / "cache"):
            d = base / name / "cache" / index
            if not index.startswith("index") or read_text(d / "type") not in ("Data", "Unified"):
                continue
            level, size = read_int(d / "level"), cache_size(read_text(d / "size"))
            if level is None or size is None:
                continue
            # the CPUs it is shared by name one instance (its id is not always there)
            shared = read_text(d / "shared_cpu_list") or read_text(d / "id") or name
            instances[(level, shared)] = size
    if not instances:
        return None
    top = max(level for level, _ in instances)
    return sum(size for (level, _), size in instances.items() if level == top)
