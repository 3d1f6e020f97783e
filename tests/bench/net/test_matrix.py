"""Tests of clusterbench.bench.net.matrix: ``clusterbench net`` on every rank."""

from __future__ import annotations

import pytest
from net_ranks import FakeCtx, _peer_gathers
from process_helpers import _dead_port

from clusterbench.bench.net import matrix, perftest, tcp
from clusterbench.bench.net.matrix import MAX_RDMA_QPS, NetConfig
from clusterbench.errors import UsageError


def test_host_without_server_named_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_server(addr: str) -> None:
        raise OSError(99, "Cannot assign requested address")

    ctx = FakeCtx()
    monkeypatch.setattr(tcp, "Server", no_server)
    _peer_gathers(monkeypatch, lambda call, mine: ("127.0.0.1", _dead_port()))
    matrix.main(ctx, NetConfig(duration=0.05, latency_iters=2))  # type: ignore[arg-type]
    assert ctx.rows == []
    assert ctx.failures == ["net: h/rank0 has no server for the tests: [Errno 99] Cannot assign requested address"]


def test_failed_pairs_named_and_nothing_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = FakeCtx()
    port = _dead_port()
    _peer_gathers(monkeypatch, lambda call, mine: ("127.0.0.1", port) if call == 0 else "peer gone")
    matrix.main(ctx, NetConfig(duration=0.05, latency_iters=2))  # type: ignore[arg-type]
    assert ctx.rows == []
    assert ctx.failures == [
        f"net bandwidth h/rank0 -> h/rank1: cannot connect to 127.0.0.1:{port}: Connection refused",
        "net bandwidth h/rank1 -> h/rank0: peer gone",
        f"net latency h/rank0 <-> h/rank1: latency test to 127.0.0.1:{port} failed after 0 of 2 round "
        "trips: Connection refused"]


def test_rdma_skip_names_each_endpoint_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # two ranks on one host are two endpoints: the note named the host twice
    ctx = FakeCtx()
    _peer_gathers(monkeypatch, lambda call, mine: mine)
    monkeypatch.setattr(perftest, "skip_reason", lambda root=perftest.SYSFS_IB: "no RDMA devices: skipped")
    matrix.main(ctx, NetConfig(bandwidth=False, latency=False, rdma=True))  # type: ignore[arg-type]
    assert ctx.notes == ["rdma: h/rank0: no RDMA devices: skipped; h/rank1: no RDMA devices: skipped"]
    assert ctx.rows == [] and ctx.failures == []


def test_the_bound_is_perftests() -> None:
    # perftest_parameters.h: MIN_QP_NUM 1, MAX_QP_NUM 16384, checked by -q's CHECK_VALUE_IN_RANGE
    assert MAX_RDMA_QPS == 16384


@pytest.mark.parametrize("qps", [0, -1, MAX_RDMA_QPS + 1, 100_000_000, 2**63])
def test_config_refuses_out_of_range(qps: int) -> None:
    with pytest.raises(UsageError, match=rf"^--rdma-qps must be 1\.\.{MAX_RDMA_QPS} .*got {qps}$"):
        NetConfig(rdma=True, rdma_qps=qps).check()


@pytest.mark.parametrize("qps", [1, 4, MAX_RDMA_QPS])
def test_config_takes_the_range(qps: int) -> None:
    NetConfig(rdma=True, rdma_qps=qps).check()
    assert perftest.perftest_argv("mlx5_0", qps)[-3:-2] == [str(qps)]
