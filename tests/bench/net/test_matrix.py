"""Tests of clusterbench.bench.net.matrix: ``clusterbench net`` on every rank."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from clusterbench.bench.net import matrix, perftest, tcp
from clusterbench.bench.net.matrix import MAX_RDMA_QPS, NetConfig
from clusterbench.errors import UsageError
from clusterbench.ranks.context import RankOptions


def _dead_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class FakeCtx:
    """Rank 0 of two on one host: what net's per-rank code uses of a RankContext."""
    launcher: str = "local"
    rank: int = 0
    world_size: int = 2
    hosts: list[str] = field(default_factory=lambda: ["h", "h"])
    options: RankOptions = field(default_factory=lambda: RankOptions("cpu", "gloo", 30.0, 0.0))
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rows: list[Any] = field(default_factory=list)

    @property
    def env(self) -> SimpleNamespace:
        return SimpleNamespace(launcher=self.launcher, master_addr="no-such-host.invalid")

    def fail(self, reason: str) -> None:
        self.failures.append(reason)

    def note(self, text: str, benchmark: str | None = None) -> None:
        self.notes.append(text)

    def record(self, rows: Any) -> None:
        self.rows.extend(rows)

    def meta(self, data: dict[str, Any]) -> None:
        pass

    def progress(self) -> None:
        pass


def _peer_gathers(monkeypatch: pytest.MonkeyPatch, peer: Any) -> None:
    """all_gather_object where rank 1 gives ``peer(call, mine)``."""
    import torch.distributed as dist

    calls = iter(range(1000))

    def gather(out: list[Any], obj: Any) -> None:
        out[0], out[1] = obj, peer(next(calls), obj)

    monkeypatch.setattr(dist, "all_gather_object", gather)


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
