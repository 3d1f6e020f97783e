"""Tests of clusterbench.bench.net.perftest."""

from __future__ import annotations

from typing import Any

import pytest
from net_ranks import FakeCtx, _peer_gathers

from clusterbench.bench.net import perftest
from clusterbench.bench.net.matrix import NetConfig

_PERFTEST = """                    RDMA_Write BW Test
 Dual-port       : OFF		Device         : mlx5_0
 Number of qps   : 1		Transport type : IB
 Connection type : RC		Using SRQ      : OFF
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      5000             97.90              97.80  		   0.186533
---------------------------------------------------------------------------------------
"""


def test_rdma_skipped_without_devices(tmp_path):
    assert "no RDMA devices" in perftest.skip_reason(str(tmp_path))
    argv = perftest.perftest_argv("mlx5_0", qps=4, bidirectional=True, gpu="--use_rocm=0", server="10.0.0.1")
    assert argv == ["ib_write_bw", "-d", "mlx5_0", "-a", "-F", "--report_gbits", "-q", "4", "-p", "18515",
                    "--bidirectional", "--use_rocm=0", "10.0.0.1"]


def test_perftest_report_imported_with_pair_params():
    ms = perftest.parse_report(_PERFTEST, {"src_host": "a", "dst_host": "b"})
    avg = [m for m in ms if m.metric == "bw_avg"]
    assert avg and avg[0].params["src_host"] == "a" and avg[0].params["bytes"] == 65536
    assert avg[0].unit == "GB/s" and abs(avg[0].value - 97.8 / 8) < 0.01


def test_rdma_port_taken_fails_the_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    # whatever holds perftest's port would take the client's connection: no server is started
    ctx = FakeCtx()
    sent: list[Any] = []
    _peer_gathers(monkeypatch, lambda call, mine: sent.append(mine))
    monkeypatch.setattr(perftest, "skip_reason", lambda root=perftest.SYSFS_IB: None)
    monkeypatch.setattr(perftest, "rdma_devices", lambda root=perftest.SYSFS_IB: ["mlx5_0"])
    monkeypatch.setattr(perftest, "listening", lambda port, proc_net="/proc/net": True)
    monkeypatch.setattr(perftest, "_client", lambda *a: "exit 1: fake client")
    started: list[Any] = []
    monkeypatch.setattr(perftest.subprocess, "Popen", lambda *a, **k: started.append(a))
    perftest.run_pairs(ctx, NetConfig(rdma=True, pairs="all"), [0, 1],  # type: ignore[arg-type]
                       [("127.0.0.1", 1)] * 2, ["h/rank0", "h/rank1"])
    assert started == [] and ctx.rows == []
    # rank 0 serves the pair 1 -> 0: it tells the client why it has no server (the stand-in
    # for rank 1 reports nothing back)
    assert "TCP port 18515 is already in use (another ib_write_bw?)" in sent
    assert ctx.failures == ["ib_write_bw h/rank0 -> h/rank1: exit 1: fake client",
                            "ib_write_bw h/rank1 -> h/rank0: no report"]
