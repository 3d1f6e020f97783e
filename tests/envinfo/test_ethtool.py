"""Tests of clusterbench.envinfo.ethtool: an interface's driver, asked of this namespace's kernel."""

from __future__ import annotations

import os

import pytest

from clusterbench.envinfo import ethtool, sysfs


def test_every_interface_of_this_namespace_has_the_index_sysfs_gives():
    names = [n for n in sysfs.listdir("/sys/class/net") if not os.path.isfile(f"/sys/class/net/{n}")]
    if not names:
        pytest.skip("no network interfaces visible here")
    for name in names:
        assert ethtool.ifindex(name) == sysfs.read_int(f"/sys/class/net/{name}/ifindex"), name


def test_a_bus_devices_driver_is_the_one_sysfs_links():
    for n in sysfs.nics("/"):
        if n["pci"] and n["driver"]:
            assert ethtool.driver(n["name"]) == n["driver"], n["name"]


@pytest.mark.parametrize("name", ["no-such-if0", "", "x" * 16, "lo"])
def test_no_answer_is_none(name):
    assert ethtool.driver(name) is None   # loopback has no driver info (EOPNOTSUPP)


def test_another_namespaces_sysfs_is_not_answered_for():
    """Where /sys shows another namespace (nsenter --net), an index that is not this namespace's
    interface's gets no driver: it would be another interface's."""
    names = [n["name"] for n in sysfs.nics("/") if n["driver"]]
    if not names:
        pytest.skip("no interface with a driver here")
    index = ethtool.ifindex(names[0])
    assert ethtool.driver(names[0], index) is not None
    assert ethtool.driver(names[0], (index or 0) + 1000) is None
