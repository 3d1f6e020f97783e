"""``--auto-net-env``: choose NCCL_IB_HCA, NCCL_SOCKET_IFNAME and NCCL_IB_GID_INDEX from what the
node has, as the OpenShift study's entrypoint did by hand (devices from /sys/class/infiniband,
GID index 3 = RoCE v2 over IPv4 where the GID table says so).

Pure functions over a sysfs root, so tests use fake trees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

_SKIP_IF_PREFIXES = ("lo", "docker", "veth", "virbr", "br-", "cni", "flannel", "cali", "tun", "tap")


@dataclass
class NetChoice:
    env: dict[str, str] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def ib_devices(sys_root: Path) -> list[str]:
    d = sys_root / "class" / "infiniband"
    try:
        return sorted(p.name for p in d.iterdir())
    except OSError:
        return []


def _active_ports(sys_root: Path, dev: str) -> list[str]:
    ports = sys_root / "class" / "infiniband" / dev / "ports"
    try:
        names = sorted(p.name for p in ports.iterdir())
    except OSError:
        return []
    return [p for p in names if "ACTIVE" in _read(ports / p / "state") or not _read(ports / p / "state")]


def roce_v2_gid_index(sys_root: Path, dev: str, port: str = "1") -> int | None:
    """The first GID index of type RoCE v2 holding an IPv4-mapped address (::ffff:a.b.c.d)."""
    base = sys_root / "class" / "infiniband" / dev / "ports" / port
    types, gids = base / "gid_attrs" / "types", base / "gids"
    try:
        indices = sorted(int(p.name) for p in gids.iterdir() if p.name.isdigit())
    except OSError:
        return None
    for i in indices:
        gid = _read(gids / str(i)).lower()
        if "roce v2" in _read(types / str(i)).lower() and gid.startswith("0000:0000:0000:0000:0000:ffff"):
            return i
    return None


def socket_interfaces(sys_root: Path) -> list[str]:
    """Interfaces that are up and not loopback/virtual bridges, in name order."""
    d = sys_root / "class" / "net"
    try:
        names = sorted(p.name for p in d.iterdir())
    except OSError:
        return []
    return [n for n in names if not n.startswith(_SKIP_IF_PREFIXES)
            and _read(d / n / "operstate") in ("up", "unknown")]


def choose(sys_root: str | Path = "/sys", socket_ifname: str | None = None) -> NetChoice:
    root = Path(sys_root)
    out = NetChoice()
    ifs = [socket_ifname] if socket_ifname else socket_interfaces(root)
    if ifs:
        out.env["NCCL_SOCKET_IFNAME"] = ",".join(ifs)
        out.env["GLOO_SOCKET_IFNAME"] = ifs[0]
        out.reasons.append(f"socket interfaces up: {', '.join(ifs)}")
    else:
        out.reasons.append("no usable socket interface found: NCCL_SOCKET_IFNAME left unset")
    devs = [d for d in ib_devices(root) if _active_ports(root, d)]
    if not devs:
        out.env["NCCL_IB_DISABLE"] = "1"
        out.reasons.append(f"no active RDMA device in {root / 'class' / 'infiniband'}: NCCL_IB_DISABLE=1")
        return out
    out.env["NCCL_IB_HCA"] = ",".join(devs)
    out.env["NCCL_IB_DISABLE"] = "0"
    out.reasons.append(f"RDMA devices with an active port: {', '.join(devs)}")
    port = _active_ports(root, devs[0])[0]
    link = _read(root / "class" / "infiniband" / devs[0] / "ports" / port / "link_layer")
    if link.lower() == "ethernet":
        gid = roce_v2_gid_index(root, devs[0], port)
        if gid is not None:
            out.env["NCCL_IB_GID_INDEX"] = str(gid)
            out.reasons.append(f"{devs[0]} port {port} is RoCE: RoCE v2 IPv4 GID at index {gid}")
        else:
            out.reasons.append(f"{devs[0]} is RoCE but no RoCE v2 IPv4 GID: NCCL_IB_GID_INDEX unset")
    else:
        out.reasons.append(f"{devs[0]} link layer {link or 'unknown'}: no GID index needed")
    return out
