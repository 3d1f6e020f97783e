"""Tests of clusterbench.bench.net.tcp: tCP between two endpoints."""

from __future__ import annotations

import socket
import threading

import pytest
from process_helpers import _dead_port

from clusterbench.bench.net import tcp
from clusterbench.bench.net.tcp import LatencyResult


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


def test_latency_p50_is_the_median() -> None:
    assert LatencyResult([5.0, 1.0]).stat("p50") == 3.0        # not the slower of the two
    assert LatencyResult([4.0, 1.0, 3.0, 2.0]).stat("p50") == 2.5
    assert LatencyResult([3.0, 1.0, 2.0]).stat("p50") == 2.0


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
