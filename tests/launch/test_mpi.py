"""Tests of clusterbench.launch.mpi: open MPI."""

from __future__ import annotations

import pytest

from clusterbench.errors import UsageError
from clusterbench.launch import mpi
from clusterbench.launch.common import Spec


def test_hostfile_forms():
    hosts = mpi.parse_hostfile("# rack 1\nnode1 slots=8\nnode2 slots=8 max_slots=8\n\nnode3:4\n10.0.0.9\n")
    assert [(h.host, h.slots) for h in hosts] == [("node1", 8), ("node2", 8), ("node3", 4), ("10.0.0.9", 1)]


@pytest.mark.parametrize("text, word", [
    ("node1 slots=x\n", "line 1"),
    ("node1 slots=2\nnode2 cpus=4\n", "line 2: unexpected 'cpus=4'"),
    ("node1\nnode1\n", "listed twice"),
    ("no$de slots=1\n", "invalid host"),
    ("# only comments\n", "no hosts"),
    ("node1 slots=0\n", "at least 1"),
])
def test_malformed_hostfile(text, word):
    with pytest.raises(UsageError, match=word.replace("$", r"\$")):
        mpi.parse_hostfile(text)


def test_hostfile_read_from_disk_as_mpirun_reads_it(tmp_path):
    """A lone CR is no line break to Open MPI: read with universal newlines, node2 was checked and
    launched as a host of its own while mpirun saw one line 'node1 slots=2\rnode2 slots=2'."""
    crlf, lone = tmp_path / "crlf", tmp_path / "lone"
    crlf.write_bytes(b"node1 slots=2\r\nnode2 slots=2\r\n")
    lone.write_bytes(b"node1 slots=2\rnode2 slots=2\n")
    assert [(h.host, h.slots) for h in mpi.read_hostfile(str(crlf))] == [("node1", 2), ("node2", 2)]
    with pytest.raises(UsageError, match="line 1: control character"):
        mpi.read_hostfile(str(lone))


def test_mpirun_argv_env_mca_slots():
    spec = Spec(nodes=2, procs_per_node=8, env={"NCCL_IB_GID_INDEX": "3", "UCX_NET_DEVICES": "mlx5_0:1"},
                command=["coll", "all_reduce"])
    hosts = mpi.parse_hostfile("a slots=8\nb slots=8\n")
    argv = mpi.mpirun_argv(spec, hosts, hostfile="/h", mca=[("btl_tcp_if_include", "bond0")],
                           allow_root=True)
    assert argv[:6] == ["mpirun", "--allow-run-as-root", "--hostfile", "/h", "-n", "16"]
    assert argv[argv.index("-N") + 1] == "8"
    assert ["--mca", "btl_tcp_if_include", "bond0"] == argv[argv.index("--mca"):argv.index("--mca") + 3]
    assert "MASTER_ADDR=a" in argv and "NCCL_IB_GID_INDEX=3" in argv and "UCX_NET_DEVICES=mlx5_0:1" in argv
    assert argv[-3:] == ["clusterbench", "coll", "all_reduce"]
    with pytest.raises(UsageError, match="slots"):
        mpi.mpirun_argv(Spec(nodes=2, procs_per_node=9, command=["net"]), hosts)
