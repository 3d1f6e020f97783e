"""Tests of clusterbench.envinfo.context: what a container or a job gives this process."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest
from host_doubles import DATA, _tree

from clusterbench.envinfo import context

POD, DOCKER_V1 = DATA / "k8s-sriov-pod", DATA / "mi300x-node"


@pytest.mark.parametrize("cpus, text", [({0}, "0"), ({0, 1, 2, 5}, "0-2,5"), ({3, 1, 2}, "1-3"),
                                        (set(), ""), ({0, 2, 4}, "0,2,4"), ({7, 8, 9, 10, 12}, "7-10,12")])
def test_cpu_list_and_count(cpus, text):
    assert context.cpu_list(cpus) == text
    assert context.cpu_count(text) == (len(cpus) or None)


@pytest.mark.parametrize("text", [None, "", "a-b", "0-", "-1", "0,,1"])
def test_a_cpulist_that_is_none_counts_none(text):
    assert context.cpu_count(text) is None


def test_a_pods_cgroup_v2_limits():
    assert context.cgroup(POD) == {
        "mode": "v2", "path": "/", "cpu_max": "400000 100000", "cpu_max_at": "/sys/fs/cgroup",
        "memory_max": 64 << 30, "memory_max_at": "/sys/fs/cgroup", "cpuset_cpus": "4-7", "cpuset_mems": "0"}


def test_dockers_cgroup_v1_hierarchies_each_rooted_at_the_container():
    """Docker mounts each v1 hierarchy with the container's cgroup as its root: the files are at
    the mount point, not at /sys/fs/cgroup/cpu,cpuacct/docker/ID."""
    cg = context.cgroup(DOCKER_V1)
    assert cg == {"mode": "v1", "path": "/docker/4f1e2d3c4b5a", "cpu_max": "max 100000", "cpu_max_at": None,
                  "memory_max": "max", "memory_max_at": None, "cpuset_cpus": "0-15", "cpuset_mems": "0-1"}


def _hybrid(root: Path, leaf_quota: str, parent_quota: str) -> Path:
    """This machine's layout: v1 controllers, a v2 tree with only hugetlb, the process in a v1
    cpu cgroup two levels down."""
    return _tree(root, {
        "proc/self/cgroup": "4:memory:/jobs/j1\n1:cpu:/jobs/j1\n0::/\n",
        "proc/self/mountinfo": "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
                               "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
                               "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
                               "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
                               "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
        "sys/fs/cgroup/unified/cgroup.controllers": "hugetlb\n",
        "sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
        "sys/fs/cgroup/cpu/jobs/cpu.cfs_quota_us": f"{parent_quota}\n",
        "sys/fs/cgroup/cpu/jobs/cpu.cfs_period_us": "100000\n",
        "sys/fs/cgroup/cpu/jobs/j1/cpu.cfs_quota_us": f"{leaf_quota}\n",
        "sys/fs/cgroup/cpu/jobs/j1/cpu.cfs_period_us": "100000\n",
        "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
        "sys/fs/cgroup/memory/jobs/j1/memory.limit_in_bytes": "8589934592\n",
    })


@pytest.mark.parametrize("leaf, parent, want, at", [
    ("50000", "-1", "50000 100000", "/sys/fs/cgroup/cpu/jobs/j1"),
    ("-1", "150000", "150000 100000", "/sys/fs/cgroup/cpu/jobs"),   # a parent's quota binds its children
    ("400000", "150000", "150000 100000", "/sys/fs/cgroup/cpu/jobs"),
    ("-1", "-1", "max 100000", None),
])
def test_a_hybrid_hierarchy_takes_the_tightest_level(tmp_path, leaf, parent, want, at):
    cg = context.cgroup(_hybrid(tmp_path, leaf, parent))
    assert (cg["mode"], cg["path"], cg["cpu_max"], cg["cpu_max_at"]) == ("hybrid", "/", want, at)
    assert (cg["memory_max"], cg["memory_max_at"]) == (8 << 30, "/sys/fs/cgroup/memory/jobs/j1")


def test_a_v2_cgroup_without_the_cpuset_controller_reads_its_parents(tmp_path):
    root = _tree(tmp_path, {
        "proc/self/cgroup": "0::/system.slice/job.scope\n",
        "proc/self/mountinfo": "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        "sys/fs/cgroup/cgroup.controllers": "cpuset cpu memory\n",
        "sys/fs/cgroup/cpuset.cpus.effective": "0-63\n",
        "sys/fs/cgroup/system.slice/job.scope/cpu.max": "max 100000\n",
        "sys/fs/cgroup/system.slice/cpu.max": "200000 100000\n",
        "sys/fs/cgroup/system.slice/job.scope/memory.max": "max\n",
    })
    cg = context.cgroup(root)
    assert (cg["cpu_max"], cg["cpu_max_at"]) == ("200000 100000", "/sys/fs/cgroup/system.slice")
    assert (cg["memory_max"], cg["cpuset_cpus"], cg["cpuset_mems"]) == ("max", "0-63", None)


def test_without_mountinfo_the_usual_layout_is_read(tmp_path):
    root = _tree(tmp_path, {"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/cgroup.controllers": "cpu memory\n",
                            "sys/fs/cgroup/cpu.max": "100000 100000\n"})
    assert context.cgroup(root)["cpu_max"] == "100000 100000"


@pytest.mark.parametrize("text", ["garbage", "50000", "max", "50000 0", "x 100000", ""])
def test_a_garbled_cpu_max_is_unknown(tmp_path, text):
    root = _tree(tmp_path, {"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/cgroup.controllers": "cpu\n",
                            "sys/fs/cgroup/cpu.max": text + "\n"})
    assert context.cgroup(root)["cpu_max"] is None


def test_no_cgroup_files_is_all_unknown(tmp_path):
    assert set(context.cgroup(tmp_path).values()) == {None}


def test_the_pods_process_limits_and_namespace():
    assert context.process(POD) == {
        "cpus_allowed": "4-7", "mems_allowed": "0",
        "rlimits": {"stack": {"soft": 8 << 20, "hard": "unlimited"}, "core": {"soft": "unlimited", "hard": "unlimited"},
                    "nproc": {"soft": "unlimited", "hard": "unlimited"}, "nofile": {"soft": 1048576, "hard": 1048576},
                    "memlock": {"soft": 65536, "hard": 65536}}}
    assert context.netns(POD) == {"inode": 4026533001, "same_as_pid1": True}
    assert context.netns(DOCKER_V1) == {"inode": None, "same_as_pid1": None}


def test_shm_is_the_last_mount_over_it_and_huge_pages_from_meminfo():
    assert context.shm_bytes(POD) == 16 << 30       # the emptyDir mounted over Docker's 64 MiB
    assert context.shm_bytes(DOCKER_V1) == 64 << 20
    assert context.hugepages(POD) == {"hugepages_total": 1024, "hugepages_free": 1000,
                                      "hugepage_size_bytes": 2 << 20, "thp_enabled": "madvise",
                                      "thp_defrag": "madvise"}


def test_this_hosts_limits_are_getrlimits():
    live = context.process(Path("/"))
    for key, name in (("memlock", "RLIMIT_MEMLOCK"), ("nofile", "RLIMIT_NOFILE"), ("stack", "RLIMIT_STACK")):
        soft, hard = resource.getrlimit(getattr(resource, name))
        want = {"soft": "unlimited" if soft == resource.RLIM_INFINITY else soft,
                "hard": "unlimited" if hard == resource.RLIM_INFINITY else hard}
        assert live["rlimits"][key] == want, key
    assert live["cpus_allowed"] == context.affinity() == context.cpu_list(os.sched_getaffinity(0))
    st = os.statvfs("/dev/shm")
    assert context.shm_bytes(Path("/")) == st.f_blocks * st.f_frsize
