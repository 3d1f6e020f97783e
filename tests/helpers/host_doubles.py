"""Hosts as the environment, preflight and device checks see them: sysfs trees (tests/data/sysfs),
torch builds, inventories, a kernel log."""

from __future__ import annotations

from pathlib import Path

from paths import TESTS

from clusterbench.envinfo import torchcheck

DATA = TESTS / "data" / "sysfs"
H100, MI300X, BROKEN = DATA / "h100-node", DATA / "mi300x-node", DATA / "broken-node"


def _inv(mtu=9000, gid_index=3, nccl=None, host="node-a", partition="SPX", mac="aa"):
    return {
        "host": host, "collected_at": "now",
        "versions": {"torch": "2.4.0", "rccl": "2.20.5"},
        "env": {"NCCL_IB_GID_INDEX": str(gid_index)} | ({"NCCL_SOCKET_IFNAME": nccl} if nccl else {}),
        "gpus": [{"index": 0, "name": "MI300X", "uuid": f"u-{host}", "compute_partition": partition}],
        "nics": [{"name": "ens1", "mtu": mtu, "address": mac, "carrier": 1}],
    }


ARM_VM = TESTS / "data" / "sysfs" / "arm-vm-node"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _fake_sys(root: Path, ib: dict[str, dict], nets: dict[str, str]) -> Path:
    for name, state in nets.items():
        (root / "class/net" / name).mkdir(parents=True)
        (root / "class/net" / name / "operstate").write_text(state + "\n")
    for dev, info in ib.items():
        port = root / "class/infiniband" / dev / "ports" / "1"
        (port / "gids").mkdir(parents=True)
        (port / "gid_attrs/types").mkdir(parents=True)
        (port / "state").write_text(info.get("state", "4: ACTIVE") + "\n")
        (port / "link_layer").write_text(info.get("link", "Ethernet") + "\n")
        for i, (gid, typ) in enumerate(info.get("gids", [])):
            (port / "gids" / str(i)).write_text(gid + "\n")
            (port / "gid_attrs/types" / str(i)).write_text(typ + "\n")
    (root / "class/infiniband").mkdir(parents=True, exist_ok=True)
    return root


CUDA = torchcheck.TorchBuild("2.6.0+cu126", cuda="12.6")


# Message formats as the drivers print them (dmesg with timestamps, and one raw /dev/kmsg record).
LOG = """\
[    1.012345] pcieport 0000:00:01.1: AER: enabled with IRQ 28
[    3.000000] amdgpu: ATOM BIOS: 113-M3000100-102
[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
[ 1235.000000] NVRM: Xid (PCI:0000:3b:00): 13, pid=4321, name=python, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address
[   12.100000] pcieport 0000:00:01.1: AER: Corrected error received: 0000:01:00.0
[   12.200000] pcieport 0000:00:01.1: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)
[   13.100000] pcieport 0000:80:03.1: AER: Uncorrected (Fatal) error received: 0000:81:00.0
[  500.100000] amdgpu 0000:c1:00.0: amdgpu: GPU reset begin!
[  500.200000] amdgpu 0000:c1:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32770)
[  500.300000] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=123, emitted seq=125
4,812,1500300000,-;NVRM: Xid (PCI:0000:5d:00): 48, pid=1, name=x, An uncorrectable double bit error
"""


ROCM = torchcheck.TorchBuild("2.6.0+rocm6.2.4", hip="6.2.41134-65d174c3e")


CPU = torchcheck.TorchBuild("2.6.0+cpu")
