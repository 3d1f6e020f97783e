"""Tests of clusterbench.launch.netenv: ``--auto-net-env``."""

from __future__ import annotations

from host_doubles import _fake_sys

from clusterbench.launch import netenv


def test_auto_net_env_roce(tmp_path):
    v4 = "0000:0000:0000:0000:0000:ffff:0a00:0001"
    gids = [("fe80:0000:0000:0000:0000:0000:0000:0001", "IB/RoCE v1"),
            ("fe80:0000:0000:0000:0000:0000:0000:0001", "RoCE v2"), (v4, "IB/RoCE v1"), (v4, "RoCE v2")]
    root = _fake_sys(tmp_path, {"mlx5_0": {"gids": gids}, "mlx5_1": {"gids": gids},
                                "mlx5_2": {"state": "1: DOWN", "gids": gids}},
                     {"lo": "unknown", "eth0": "up", "net1": "up", "docker0": "up", "eth9": "down"})
    choice = netenv.choose(root)
    assert choice.env == {"NCCL_SOCKET_IFNAME": "eth0,net1", "GLOO_SOCKET_IFNAME": "eth0",
                          "NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_IB_DISABLE": "0", "NCCL_IB_GID_INDEX": "3"}


def test_auto_net_env_infiniband_and_none(tmp_path):
    ib = _fake_sys(tmp_path / "ib", {"mlx5_0": {"link": "InfiniBand"}}, {"ib0": "up"})
    assert netenv.choose(ib).env == {"NCCL_SOCKET_IFNAME": "ib0", "GLOO_SOCKET_IFNAME": "ib0",
                                     "NCCL_IB_HCA": "mlx5_0", "NCCL_IB_DISABLE": "0"}
    none = _fake_sys(tmp_path / "none", {}, {"eth0": "up"})
    choice = netenv.choose(none)
    assert choice.env["NCCL_IB_DISABLE"] == "1" and "NCCL_IB_HCA" not in choice.env
    assert any("no active RDMA device" in r for r in choice.reasons)
