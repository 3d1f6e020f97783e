"""Tests of clusterbench.envinfo.diff: config drift."""


from host_doubles import DATA, _inv

from clusterbench.envinfo import diff as envdiff
from clusterbench.envinfo import inventory


def test_flatten_keys_lists_by_natural_id():
    flat = envdiff.flatten({"nics": [{"name": "eth0", "mtu": 9000}], "gpus": [{"index": 0, "name": "H100"}],
                            "cpu": {"numa_nodes": [{"node": 1, "cpus": "0-3"}]}, "tags": ["a", "b"]})
    assert flat == {"nics.eth0.name": "eth0", "nics.eth0.mtu": 9000, "gpus.0.index": 0, "gpus.0.name": "H100",
                    "cpu.numa_nodes.1.node": 1, "cpu.numa_nodes.1.cpus": "0-3", "tags": ["a", "b"]}


def test_diff_reorder_is_not_a_difference():
    a = {"nics": [{"name": "a", "mtu": 1500}, {"name": "b", "mtu": 9000}]}
    b = {"nics": [{"name": "b", "mtu": 9000}, {"name": "a", "mtu": 1500}]}
    assert envdiff.diff(a, b) == []


def test_diff_finds_drift_and_hides_identity():
    a, b = _inv(), _inv(mtu=1500, gid_index=1, nccl="ens1", host="node-b", partition="CPX", mac="bb")
    diffs = {d.key: d for d in envdiff.diff(a, b)}
    assert set(diffs) == {"nics.ens1.mtu", "env.NCCL_IB_GID_INDEX", "env.NCCL_SOCKET_IFNAME", "gpus.0.compute_partition"}
    assert diffs["env.NCCL_SOCKET_IFNAME"].a is None and diffs["env.NCCL_SOCKET_IFNAME"].b == "ens1"
    assert diffs["nics.ens1.mtu"].category == "network" and diffs["env.NCCL_IB_GID_INDEX"].category == "environment"
    assert diffs["gpus.0.compute_partition"].to_dict() == {"key": "gpus.0.compute_partition", "category": "gpus",
                                                           "a": "SPX", "b": "CPX"}
    shown = {d.key for d in envdiff.diff(a, b, show_identity=True)}
    assert {"host", "gpus.0.uuid", "nics.ens1.address"} <= shown and "collected_at" not in shown


def test_diff_of_two_fake_nodes():
    a = inventory.collect(DATA / "h100-node", environ={})
    b = inventory.collect(DATA / "mi300x-node", environ={})
    cats = {d.category for d in envdiff.diff(a, b)}
    assert {"versions", "gpus", "pcie", "network", "host"} <= cats
    assert envdiff.diff(a, inventory.collect(DATA / "h100-node", environ={})) == []


def test_the_execution_context_is_its_own_category_and_a_cgroups_path_is_identity():
    a = inventory.collect(DATA / "k8s-sriov-pod", environ={})
    b = inventory.collect(DATA / "mi300x-node", environ={})
    diffs = {d.key: d for d in envdiff.diff(a, b)}
    assert diffs["cgroup.cpu_max"].category == "context"
    assert (diffs["cgroup.cpu_max"].a, diffs["cgroup.cpu_max"].b) == ("400000 100000", "max 100000")
    assert diffs["process.rlimits.memlock.soft"].a == 65536 and diffs["netns.inode"].category == "context"
    assert diffs["nics.net1.kind"].a == "sriov-vf" and diffs["memory.shm_bytes"].category == "host"
    assert not any(k.startswith(("cgroup.path", "cgroup.cpu_max_at", "memory.hugepages_free")) for k in diffs)
    shown = {d.key for d in envdiff.diff(a, b, show_identity=True)}
    assert {"cgroup.path", "cgroup.cpu_max_at"} <= shown


def test_ranks_are_keyed_by_rank():
    a = {"ranks": [{"rank": 0, "cpus": "0-1"}, {"rank": 1, "cpus": "0-1"}]}
    b = {"ranks": [{"rank": 1, "cpus": "0"}, {"rank": 0, "cpus": "0-1"}]}
    assert [(d.key, d.a, d.b, d.category) for d in envdiff.diff(a, b)] == [("ranks.1.cpus", "0-1", "0", "context")]
