"""Faults of ``clusterbench net`` on loopback: values refused before any rank starts, tests that
measured nothing never stored as a number, peers that hang up or never answer bounded and named,
the perftest wrapper without RDMA, and what a run prints."""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from judge_helpers import cli

from clusterbench.bench.net import matrix, perftest, tcp
from clusterbench.bench.net.matrix import NetConfig
from clusterbench.cli.argv_check import check_argv
from clusterbench.errors import UsageError
from clusterbench.ranks.context import RankOptions


def _dead_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- values refused before any rank starts (the command and qualify/sweep's check alike)

REFUSED = [
    (["-t", "1e-300"], "--duration must be 0.01..86400 s"),          # nothing sent: was 0 GB/s stored
    (["-t", "4", "--timeout", "2"], "at most half of --timeout 2 s"),  # was a gloo error mid-run
    (["--latency-iters", "99999999999999999999"], "--latency-iters must be 1..1000000"),
    (["--latency-bytes", "1X"], "invalid --latency-bytes '1X'"),
    (["--latency-bytes", "2G"], "--latency-bytes must be 1..1073741824"),
    (["--link-rate", ""], "invalid rate ''"),                         # was dropped without a word
    (["--rdma-gpu", "10.0.0.1"], "is not a perftest GPU flag"),       # would be ib_write_bw's server
    (["--rdma-device", "-x"], "is not an RDMA device name"),
]


@pytest.mark.parametrize(("args", "words"), REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_bad_values_refused_up_front(args: list[str], words: str) -> None:
    with pytest.raises(UsageError, match="net: .*" + words.replace("(", r"\(").replace(".", r"\.")):
        check_argv(["net", *args], "net", values=True)


@pytest.mark.parametrize("args", [["--latency-bytes", "1K"], ["--latency-bytes", "1.5K"],
                                  ["-t", "100", "--timeout", "300"], ["--rdma-gpu", "--use_cuda=0"],
                                  ["--rdma-device", "mlx5_0"]])
def test_good_values_pass(args: list[str]) -> None:
    check_argv(["net", *args], "net", values=True)


def test_bad_duration_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    code, out, err = cli(capsys, "net", "--np", "2", "-t", "4", "--timeout", "2", "--db", tmp_path / "x.db")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        "clusterbench: error: --duration 4 s must be at most half of --timeout 2 s "
        "(every rank waits on the pair being measured): raise --timeout"]


# -- the TCP tests themselves


def test_mean_of_equal_round_trips_is_not_above_the_max() -> None:
    lat = tcp.LatencyResult([0.1, 0.1, 0.1])
    stats = [lat.stat(s) for s in ("min", "p50", "avg", "max")]
    assert stats[0] <= stats[1] <= stats[3] and stats[0] <= stats[2] <= stats[3]


def test_nothing_timed_is_an_error_not_zero() -> None:
    srv = tcp.Server("127.0.0.1")
    try:
        with pytest.raises(tcp.NetTestError, match="no rate to measure"):
            tcp.bandwidth("127.0.0.1", srv.port, streams=2, duration=1e-9, timeout=5)
    finally:
        srv.close()


def test_refused_peer_named_with_its_address() -> None:
    port = _dead_port()
    with pytest.raises(tcp.NetTestError, match=f"cannot connect to 127.0.0.1:{port}: Connection refused"):
        tcp.bandwidth("127.0.0.1", port, streams=3, duration=0.05, timeout=2)


def _closing_peer() -> tuple[socket.socket, int]:
    """Takes a connection, reads a little, hangs up."""
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(16)

    def serve() -> None:
        while True:
            try:
                conn, _ = lst.accept()
            except OSError:
                return
            conn.recv(16)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return lst, int(lst.getsockname()[1])


def test_peer_closing_mid_test_is_named_and_bounded() -> None:
    lst, port = _closing_peer()
    try:
        # duration and timeout far past anything a test waits for: only the hang-up can end these,
        # and the error says it was the peer, not a timeout
        with pytest.raises(tcp.NetTestError, match=f"bandwidth test to 127.0.0.1:{port} failed") as bw:
            tcp.bandwidth("127.0.0.1", port, streams=2, duration=3600, timeout=3600)
        with pytest.raises(tcp.NetTestError, match=r"latency test to 127.0.0.1:\d+ failed after 0 of 5 round") as lat:
            tcp.latency("127.0.0.1", port, iters=5, timeout=3600)
        for exc in (bw, lat):
            assert "timed out" not in str(exc.value), exc.value
    finally:
        lst.close()


def test_silent_peer_bounded_by_timeout() -> None:
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(4)        # the kernel accepts; nobody reads or answers
    try:
        with pytest.raises(tcp.NetTestError, match="timed out"):
            tcp.latency("127.0.0.1", int(lst.getsockname()[1]), iters=3, timeout=0.5)
    finally:
        lst.close()


def test_latency_stops_at_its_budget() -> None:
    srv = tcp.Server("127.0.0.1")
    try:
        with pytest.raises(tcp.NetTestError, match=r"of 1000000 round trips of 8 B in 0.2 s: lower"):
            tcp.latency("127.0.0.1", srv.port, iters=1_000_000, timeout=5, budget=0.2)
    finally:
        srv.close()


def test_ipv6_loopback() -> None:
    try:
        srv = tcp.Server("::1")
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        r = tcp.bandwidth("::1", srv.port, streams=2, duration=0.05, timeout=5)
        assert r.bytes > 0 and r.seconds > 0 and r.streams == 2
        assert len(tcp.latency("::1", srv.port, iters=3, timeout=5).rtts_us) == 3
    finally:
        srv.close()
    with pytest.raises(tcp.NetTestError, match=r"cannot connect to \[::1\]:"):
        tcp.bandwidth("::1", srv.port, streams=1, duration=0.05, timeout=2)


@pytest.mark.parametrize(("peer", "words"), [("no-such-host.invalid", "cannot resolve MASTER_ADDR"),
                                             ("fe80::1", "no route from this host to MASTER_ADDR")])
def test_unusable_master_addr_is_an_error_not_loopback(peer: str, words: str) -> None:
    # loopback handed to other hosts would have them reach themselves
    with pytest.raises(tcp.NetTestError, match=words):
        tcp.local_address(peer)


# -- the per-rank driver, with a stand-in for the other rank


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


def test_rdma_report_without_rows_is_no_number(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = FakeCtx()
    _peer_gathers(monkeypatch, lambda call, mine: None)
    monkeypatch.setattr(perftest, "skip_reason", lambda root=perftest.SYSFS_IB: None)
    monkeypatch.setattr(perftest, "rdma_devices", lambda root=perftest.SYSFS_IB: ["mlx5_0"])
    monkeypatch.setattr(perftest, "_client", lambda *a: " #bytes     #iterations    BW peak[Gb/sec]\n")
    perftest.run_pairs(ctx, NetConfig(rdma=True), [0, 1], [("127.0.0.1", 1)] * 2,  # type: ignore[arg-type]
                       ["h/rank0", "h/rank1"])
    assert ctx.rows == []
    assert ctx.failures[0].startswith("ib_write_bw h/rank0 -> h/rank1:  #bytes")


# -- one real run on loopback: what it prints matches what it stores, in its units


def test_loopback_run_json_and_table(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    db = tmp_path / "net.db"
    code, out, err = cli(capsys, "net", "--np", "2", "-t", "0.05", "--latency-iters", "5", "--latency-bytes", "1K",
                         "--streams", "1", "--link-rate", "10Gbps", "--timeout", "60", "--json", "--db", db, "-q")
    assert code == 0, err
    lines = [json.loads(x) for x in out.splitlines()]
    ms = [x for x in lines if x["kind"] == "measurement"]
    bw = [m for m in ms if m["metric"] == "bandwidth"]
    lat = {m["params"]["stat"]: m["value"] for m in ms if m["metric"] == "latency_us"}
    assert sorted((m["params"]["src_rank"], m["params"]["dst_rank"]) for m in bw) == [(0, 1), (1, 0)]
    assert all(m["unit"] == "GB/s" and m["value"] > 0 and m["params"]["bytes"] > 0 for m in bw)
    assert {m["unit"] for m in ms if m["metric"] == "latency_us"} == {"us"}
    assert [m["params"]["bytes"] for m in ms if m["metric"] == "latency_us"] == [1024] * 4
    assert lat["min"] <= lat["p50"] <= lat["max"] and lat["min"] <= lat["avg"] <= lat["max"]
    assert [x["kind"] for x in lines].count("efficiency") == 2
    code, out, _ = cli(capsys, "results", "show", "last", "--db", db)
    assert code == 0
    # src dst metric streams value unit Gbit/s: the Gbit/s column is the GB/s value times 8
    rows = [r.split() for r in out.splitlines() if r.split()[2:3] == ["bandwidth"] and not r.startswith("#")]
    for r, m in zip(rows, bw, strict=True):
        assert r[2:4] == ["bandwidth", "1"] and r[5] == "GB/s"
        assert float(r[4]) == pytest.approx(m["value"], rel=2e-3)
        assert float(r[6]) == pytest.approx(8 * float(r[4]), rel=2e-3)
