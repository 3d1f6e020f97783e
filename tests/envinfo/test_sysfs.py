"""Tests of clusterbench.envinfo.sysfs: hardware facts the kernel exposes as files."""

import shutil

import pytest
from host_doubles import ARM_VM, BROKEN, DATA, H100, MI300X, _tree

from clusterbench.envinfo import sysfs

POD = DATA / "k8s-sriov-pod"


@pytest.mark.parametrize("text,expected", [
    ("16.0 GT/s PCIe", 16.0), ("8 GT/s", 8.0), ("2.5 GT/s PCIe", 2.5), ("Unknown", None), ("", None), (None, None),
])
def test_parse_link_speed(text, expected):
    assert sysfs.parse_link_speed(text) == expected


def test_parse_port_fields():
    assert sysfs.parse_state("4: ACTIVE") == "ACTIVE"
    assert sysfs.parse_state("5: LinkUp") == "LinkUp"
    assert sysfs.parse_rate_gbps("400 Gb/sec (4X NDR)") == 400.0
    assert sysfs.parse_rate_gbps("25 Gb/sec (1X EDR)") == 25.0
    assert sysfs.parse_rate_gbps("garbage") is None


def test_pci_devices_links_and_aer():
    devs = {d["bdf"]: d for d in sysfs.pci_devices(H100)}
    assert set(devs) == {"0000:18:00.0", "0000:2a:00.0", "0000:9a:00.0", "0000:1a:00.0", "0000:1b:00.0", "0000:1b:00.1"}
    gpu = devs["0000:9a:00.0"]
    assert gpu["kind"] == "gpu" and gpu["vendor"] == "NVIDIA" and gpu["driver"] == "nvidia" and gpu["numa_node"] == 1
    assert gpu["link"] == {"current_speed_gts": 32.0, "max_speed_gts": 32.0, "current_width": 8, "max_width": 16}
    assert sysfs.link_downgrade(gpu["link"]) == ["width x8 < x16"]
    assert sysfs.link_downgrade(devs["0000:2a:00.0"]["link"]) == ["speed 2.5 < 32 GT/s"]
    assert sysfs.link_downgrade(devs["0000:18:00.0"]["link"]) == []
    assert devs["0000:2a:00.0"]["aer"] == {"correctable": 2, "nonfatal": 0, "fatal": 0}
    assert devs["0000:1a:00.0"]["kind"] == "infiniband" and devs["0000:1a:00.0"]["vendor"] == "Mellanox"
    only_gpus = sysfs.pci_devices(H100, kinds=sysfs.GPU_KINDS)
    assert len(only_gpus) == 3


def test_pcie_gen():
    assert sysfs.pcie_gen(32.0) == 5 and sysfs.pcie_gen(16.0) == 4 and sysfs.pcie_gen(None) is None


def test_nics():
    nics = {n["name"]: n for n in sysfs.nics(H100)}
    assert "lo" not in nics
    eth = nics["ens1f0np0"]
    assert eth == {"name": "ens1f0np0", "kind": "physical", "speed_mbps": 100000, "mtu": 9000, "operstate": "up",
                   "carrier": 1, "address": "b8:3f:d2:aa:bb:01", "driver": "mlx5_core", "pci": "0000:1b:00.0",
                   "virtual": False, "pf": None, "sriov_vfs": None, "master": None, "rdma": ["mlx5_1"],
                   "default_route": False}
    assert nics["ens1f1np1"]["speed_mbps"] is None and nics["ens1f1np1"]["operstate"] == "down"
    assert nics["docker0"]["virtual"] and nics["docker0"]["driver"] is None
    assert nics["docker0"]["kind"] == "bridge" and nics["ibp26s0"]["rdma"] == ["mlx5_0"]


def test_nic_speed_past_an_int_is_unknown(tmp_path):
    """Some drivers print SPEED_UNKNOWN unsigned: 4294967295 Mb/s was stored and shown as 4.3 Pb/s."""
    root = tmp_path / "node"
    shutil.copytree(H100, root, symlinks=True)
    for value, want in (("4294967295", None), ("99999999999999999999", None), ("100000", 100000), ("-1", None)):
        (root / "sys/class/net/ens1f0np0/speed").write_text(value + "\n")
        assert {n["name"]: n for n in sysfs.nics(root)}["ens1f0np0"]["speed_mbps"] == want, value


def test_rdma_devices_ports_and_gids():
    devs = {d["name"]: d for d in sysfs.rdma_devices(H100)}
    ib = devs["mlx5_0"]
    assert ib["fw_ver"] == "28.39.1002" and ib["hca_type"] == "MT4129" and ib["pci"] == "0000:1a:00.0"
    port = ib["ports"][0]
    assert (port["state"], port["phys_state"], port["rate_gbps"], port["link_layer"]) == \
        ("ACTIVE", "LinkUp", 400.0, "InfiniBand")
    roce = devs["mlx5_1"]["ports"][0]
    # all-zero GID entries are unused and left out; types and netdevs come from gid_attrs
    assert [g["index"] for g in roce["gids"]] == [0, 1, 2, 3]
    assert [g["type"] for g in roce["gids"]] == ["IB/RoCE v1", "RoCE v2", "IB/RoCE v1", "RoCE v2"]
    assert roce["gids"][3]["netdev"] == "ens1f0np0"
    assert devs["mlx5_1"]["netdevs"] == ["ens1f0np0"]


def test_amdgpu_cards_partitions_and_ras():
    cards = sysfs.amdgpu_cards(MI300X)
    assert [c["card"] for c in cards] == ["card1", "card2"]
    c = cards[0]
    assert c["pci"] == "0000:0c:00.0" and c["product_name"] == "AMD Instinct MI300X"
    assert c["compute_partition"] == "CPX" and c["memory_partition"] == "NPS4"
    assert c["available_compute_partitions"] == ["SPX", "DPX", "QPX", "CPX"]
    assert c["available_memory_partitions"] == ["NPS1", "NPS4"]
    assert c["ras"] == {"umc": {"ue": 0, "ce": 3}, "gfx": {"ue": 0, "ce": 0}}
    assert c["vram_bytes"] == 206141652992
    assert cards[1]["memory_partition"] == "NPS1" and cards[1]["ras"]["umc"]["ue"] == 1


def test_unreadable_files_read_as_none_never_raise():
    # a directory where a file belongs, garbage, 'Unknown', dangling links, ports without attributes
    devs = sysfs.pci_devices(BROKEN)
    assert len(devs) == 1
    assert devs[0]["link"] == {"current_speed_gts": None, "max_speed_gts": None, "current_width": None,
                               "max_width": None}
    assert sysfs.link_downgrade(devs[0]["link"]) == []
    assert "aer" not in devs[0]
    nics = {n["name"]: n for n in sysfs.nics(BROKEN)}
    assert nics["eth9"]["speed_mbps"] is None and nics["eth9"]["mtu"] is None
    assert nics["gone0"]["operstate"] is None
    (port,) = sysfs.rdma_devices(BROKEN)[0]["ports"]
    assert port["state"] is None and port["rate_gbps"] is None
    assert port["gids"][0]["type"] is None  # gid_attrs missing, as unused entries answer EINVAL
    assert sysfs.amdgpu_cards(BROKEN) == []  # card0 without a driver link is not an amdgpu card


def test_missing_root_is_empty(tmp_path):
    assert sysfs.pci_devices(tmp_path) == [] and sysfs.nics(tmp_path) == []
    assert sysfs.rdma_devices(tmp_path) == [] and sysfs.amdgpu_cards(tmp_path) == []
    assert sysfs.read_text(tmp_path / "nope") is None and sysfs.read_int(tmp_path / "nope") is None


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


def test_last_level_cache_counts_each_instance_once():
    """Two packages of two cores, an L3 of 32 MiB each: 64 MiB for the whole node, 32 MiB for the
    cores of one package (the CPUs a process may run on)."""
    assert sysfs.last_level_cache(ARM_VM) == 64 << 20
    assert sysfs.last_level_cache(ARM_VM, {0, 1}) == sysfs.last_level_cache(ARM_VM, {1}) == 32 << 20
    assert sysfs.last_level_cache(ARM_VM, {0, 2}) == 64 << 20
    assert sysfs.last_level_cache(H100) is None   # no cache files


def test_a_garbage_cache_size_is_unknown(tmp_path):
    assert [sysfs.cache_size(t) for t in ("32768K", "1M", "512", "1G")] == [32 << 20, 1 << 20, 512, 1 << 30]
    assert [sysfs.cache_size(t) for t in ("", None, "K", "-1K", "12X", "9" * 40)] == [None] * 6
    d = tmp_path / "sys/devices/system/cpu/cpu0/cache/index3"
    d.mkdir(parents=True)
    for f, text in (("level", "3"), ("type", "Unified"), ("size", "lots")):
        (d / f).write_text(text + "\n")
    assert sysfs.last_level_cache(tmp_path) is None


def test_the_kinds_of_a_pods_interfaces():
    """A pod's network over a veth (eth0) and an SR-IOV VF given by Multus (net1), as the
    OpenShift study compares them: the VF names its PF and its RDMA device."""
    nics = {n["name"]: n for n in sysfs.nics(POD)}
    vf = nics["net1"]
    assert (vf["kind"], vf["driver"], vf["pci"], vf["pf"], vf["rdma"]) == (
        "sriov-vf", "mlx5_core", "0000:3b:02.1", "0000:3b:00.0", ["mlx5_2"])
    assert (vf["speed_mbps"], vf["mtu"], vf["default_route"]) == (200000, 9000, False)
    # sysfs alone cannot tell a veth from a macvlan in another namespace: the driver does
    assert (nics["eth0"]["kind"], nics["eth0"]["driver"], nics["eth0"]["default_route"]) == ("virtual", None, True)
    asked = []

    def driver_of(name, ifindex):
        asked.append((name, ifindex))
        return "veth"

    nics = {n["name"]: n for n in sysfs.nics(POD, driver_of)}
    assert (nics["eth0"]["kind"], nics["eth0"]["driver"]) == ("veth", "veth")
    assert asked == [("eth0", 3)]   # only an interface sysfs names no driver of, with sysfs's ifindex


def test_a_pf_shows_its_vfs_and_a_vf_its_pfs_interface_where_visible(tmp_path):
    root = tmp_path / "host"
    shutil.copytree(POD, root, symlinks=True)
    pf = root / "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0"
    (pf / "net/ens3f0np0").mkdir(parents=True)
    (pf / "net/ens3f0np0/mtu").write_text("9000\n")
    (pf / "net/ens3f0np0/device").symlink_to("../../../0000:3b:00.0")
    (root / "sys/class/net/ens3f0np0").symlink_to("../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/net/ens3f0np0")
    nics = {n["name"]: n for n in sysfs.nics(root)}
    assert (nics["ens3f0np0"]["kind"], nics["ens3f0np0"]["sriov_vfs"]) == ("physical", 8)
    assert nics["net1"]["pf"] == "0000:3b:00.0 (ens3f0np0)"


def test_bonds_vlans_and_bridges_by_their_sysfs_files():
    nics = {n["name"]: n for n in sysfs.nics(ARM_VM)}
    assert [(n, nics[n]["kind"], nics[n]["master"]) for n in sorted(nics)] == [
        ("bond0", "bond", None), ("bond0.100", "vlan", None), ("enP1p1s0", "physical", "bond0")]


@pytest.mark.parametrize("driver, kind", [*sysfs.VIRTUAL_DRIVERS.items(), (None, "virtual"),
                                          ("something-new", "virtual")])
def test_a_virtual_interface_is_known_by_its_driver(tmp_path, driver, kind):
    root = _tree(tmp_path, {"sys/devices/virtual/net/v0/mtu": "1500\n", "sys/devices/virtual/net/v0/type": "1\n"})
    (root / "sys/class/net").mkdir(parents=True)
    (root / "sys/class/net/v0").symlink_to("../../devices/virtual/net/v0")
    (n,) = sysfs.nics(root, lambda name, ifindex: driver)
    assert (n["kind"], n["driver"]) == (kind, driver)


@pytest.mark.parametrize("driver, kind", [("virtio_net", "vnic"), ("vmxnet3", "vnic"), ("mlx5_core", "physical")])
def test_a_paravirtual_nic_is_a_vnic(tmp_path, driver, kind):
    root = _tree(tmp_path, {"sys/devices/pci0000:00/0000:00:03.0/net/e0/mtu": "1500\n"})
    (root / "sys/bus/pci/drivers" / driver).mkdir(parents=True)
    (root / "sys/devices/pci0000:00/0000:00:03.0/driver").symlink_to(f"../../../bus/pci/drivers/{driver}")
    (root / "sys/devices/pci0000:00/0000:00:03.0/net/e0/device").symlink_to("../../../0000:00:03.0")
    (root / "sys/class/net").mkdir(parents=True)
    (root / "sys/class/net/e0").symlink_to("../../devices/pci0000:00/0000:00:03.0/net/e0")
    (n,) = sysfs.nics(root)
    assert (n["kind"], n["driver"], n["pci"]) == (kind, driver, "0000:00:03.0")


def test_default_routes_of_ipv4_and_ipv6(tmp_path):
    root = _tree(tmp_path, {
        "proc/net/route": "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
                          "eth0\t00000000\t0101A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
                          "eth1\t0000A8C0\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n",
        "proc/net/ipv6_route": "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
                               "fe800000000000000000000000000001 00000400 00000001 00000000 00000003 ib0\n"
                               "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
                               "00000000000000000000000000000000 ffffffff 00000001 00000000 00200200 lo\n"})
    assert sysfs.default_route_interfaces(root) == {"eth0", "ib0"}
    assert sysfs.default_route_interfaces(tmp_path / "none") == set()
