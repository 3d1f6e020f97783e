"""The driver of a network interface as ``ethtool -i`` shows it, asked of the kernel with the
SIOCETHTOOL ioctl (ETHTOOL_GDRVINFO) on a socket: no subprocess, no privilege.

sysfs names the driver of a device on a bus (``device/driver``) only; a virtual interface has
none there, and a veth, a macvlan and an ipvlan whose lower device is in another namespace look
alike in sysfs. Their drivers (``veth``, ``macvlan``, ``ipvlan``, ``bridge``, ``bonding``, ...)
tell them apart. Linux only; anywhere else, or for an interface this namespace does not have,
the answer is None.
"""

from __future__ import annotations

import array
import fcntl
import socket
import struct

SIOCETHTOOL = 0x8946
SIOCGIFINDEX = 0x8933
ETHTOOL_GDRVINFO = 0x00000003
# struct ethtool_drvinfo: cmd, driver[32], version[32], fw_version[32], bus_info[32],
# erom_version[32], reserved2[12], five u32 counts
_DRVINFO_SIZE = 4 + 32 * 5 + 12 + 4 * 5
_IFNAMSIZ = 16
_IFREQ_SIZE = 40   # struct ifreq on 64-bit Linux: the name, then a 24-byte union


def _ifreq(name: str, tail: bytes) -> bytes:
    raw = name.encode()
    if not raw or len(raw) >= _IFNAMSIZ:
        raise ValueError(name)
    return struct.pack(f"{_IFNAMSIZ}s", raw) + tail.ljust(_IFREQ_SIZE - _IFNAMSIZ, b"\0")


def ifindex(name: str) -> int | None:
    """The interface's index in this process's network namespace; None when it has none."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            out = fcntl.ioctl(s.fileno(), SIOCGIFINDEX, _ifreq(name, b""))
    except (OSError, ValueError):
        return None
    return int(struct.unpack_from("i", out, _IFNAMSIZ)[0])


def driver(name: str, expect_ifindex: int | None = None) -> str | None:
    """The driver of interface ``name`` (``veth``, ``mlx5_core``, ...). With ``expect_ifindex``
    (sysfs's ``ifindex``), None unless this namespace's interface of that name is the one sysfs
    described: ``nsenter --net`` leaves /sys showing another namespace, where ``eth0`` is
    another interface."""
    if expect_ifindex is not None and ifindex(name) != expect_ifindex:
        return None
    info = array.array("B", struct.pack("I", ETHTOOL_GDRVINFO) + b"\0" * (_DRVINFO_SIZE - 4))
    address, _ = info.buffer_info()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            fcntl.ioctl(s.fileno(), SIOCETHTOOL, _ifreq(name, struct.pack("P", address)))
    except (OSError, ValueError):   # EOPNOTSUPP (lo, some tunnels), ENODEV
        return None
    text = info.tobytes()[4:36].split(b"\0", 1)[0].decode("ascii", "replace").strip()
    return text or None
