"""TCP between two endpoints: a sink/echo server, a multi-stream bandwidth client and a
ping-pong latency client. No torch here: the per-rank driver (``net.matrix``) pairs hosts up.

Bandwidth is measured where the data lands, as iperf3's receiver line is: each stream's
receiver counts bytes and notes the time of its first and last byte; the pair's bandwidth is
all bytes over the span from the earliest first byte to the latest last byte.
"""

from __future__ import annotations

import socket
import statistics
import struct
import threading
import time
from dataclasses import dataclass

_BW, _LAT = b"B", b"L"
_REPORT = struct.Struct("!qdd")       # bytes, first byte time, last byte time (receiver clock)
CHUNK = 1 << 20                       # bytes per send/recv call
MAX_MESSAGE = 1 << 30                 # largest ping-pong message: it is held in memory whole


@dataclass(frozen=True)
class BandwidthResult:
    bytes: int
    seconds: float
    streams: int

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class LatencyResult:
    rtts_us: list[float]

    def stat(self, which: str) -> float:
        xs = sorted(self.rtts_us)
        if which == "min":
            return xs[0]
        if which == "max":
            return xs[-1]
        if which == "p50":  # the median: of an even count, the mean of the middle two
            return statistics.median(xs)
        # rounding can put the mean of equal times one ulp above them: never outside min..max
        return min(max(statistics.fmean(xs), xs[0]), xs[-1])


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        part = sock.recv(n - len(buf))
        if not part:
            raise ConnectionError("peer closed the connection")
        buf += part
    return bytes(buf)


class Server:
    """Accepts bandwidth (sink) and latency (echo) connections until closed."""

    def __init__(self, addr: str = "0.0.0.0") -> None:
        self.sock = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((addr, 0))
        self.sock.listen(64)
        self.port = int(self.sock.getsockname()[1])
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="clusterbench-net-server").start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _serve(conn: socket.socket) -> None:
        with conn:
            try:
                kind = _recv_exact(conn, 1)
                if kind == _BW:
                    buf = bytearray(CHUNK)
                    view = memoryview(buf)
                    total, first, last = 0, 0.0, 0.0
                    while True:
                        n = conn.recv_into(view)
                        if not n:
                            break
                        now = time.perf_counter()
                        if not total:
                            first = now
                        total += n
                        last = now
                    conn.sendall(_REPORT.pack(total, first, last))
                elif kind == _LAT:
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    size = struct.unpack("!i", _recv_exact(conn, 4))[0]
                    if not 1 <= size <= MAX_MESSAGE:   # not from a client of ours: hang up
                        return
                    # one buffer filled in place: joining the parts of a large message as bytes
                    # copies it again for every part (quadratic: a 1 GiB ping never came back)
                    msg = memoryview(bytearray(size))
                    while True:
                        got = 0
                        while got < size:
                            n = conn.recv_into(msg[got:])
                            if not n:
                                return
                            got += n
                        conn.sendall(msg)
            except OSError:
                return

    def close(self) -> None:
        self._closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class NetTestError(Exception):
    """A test between two endpoints that measured nothing it could report, with why."""


def _where(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def _why(e: BaseException | None) -> str:
    if isinstance(e, TimeoutError):
        return "timed out"
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e) or type(e).__name__


def _connect(addr: str, port: int, timeout: float) -> socket.socket:
    s = socket.create_connection((addr, port), timeout=timeout)
    s.settimeout(timeout)
    return s


def bandwidth(addr: str, port: int, *, streams: int = 4, duration: float = 2.0,
              timeout: float = 30.0) -> BandwidthResult:
    """Send for ``duration`` seconds over ``streams`` connections; the receiver measures."""
    where = _where(addr, port)
    payload = memoryview(bytes(CHUNK))
    socks: list[socket.socket] = []
    try:
        for _ in range(streams):
            socks.append(_connect(addr, port, timeout))
    except OSError as e:
        for s in socks:
            s.close()
        raise NetTestError(f"cannot connect to {where}: {_why(e)}") from None
    reports: list[tuple[int, float, float]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(streams)

    def stream(s: socket.socket) -> None:
        try:
            s.sendall(_BW)
            start.wait(timeout)
            end = time.perf_counter() + duration
            while time.perf_counter() < end:
                s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            rep = _REPORT.unpack(_recv_exact(s, _REPORT.size))
            with lock:
                reports.append(rep)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            start.abort()   # the other streams stop waiting for this one at once
            with lock:
                errors.append(e)
        finally:
            s.close()

    threads = [threading.Thread(target=stream, args=(s,), daemon=True) for s in socks]
    for t in threads:
        t.start()
    # ``timeout`` bounds each wait (connect, start, a stalled send, the report) and the whole
    # test past its sending time: the ranks waiting on this pair give up soon after
    deadline = time.monotonic() + duration + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    # the first error that is not another stream's broken barrier says what went wrong
    real = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)] or errors
    if real:
        raise NetTestError(f"bandwidth test to {where} failed: {_why(real[0])}")
    if len(reports) != streams:
        raise NetTestError(f"bandwidth test to {where} did not finish")
    total = sum(r[0] for r in reports)
    firsts = [r[1] for r in reports if r[0]]
    span = max(r[2] for r in reports) - min(firsts) if firsts else 0.0
    if total <= 0 or span <= 0:
        # no time between the first and the last byte: a rate would be invented, not measured
        raise NetTestError(f"bandwidth test to {where}: {total} bytes arrived at once, no rate to "
                           f"measure (too short a --duration)")
    return BandwidthResult(total, span, streams)


def latency(addr: str, port: int, *, iters: int = 200, size: int = 8, warmup: int = 20,
            timeout: float = 30.0, budget: float | None = None) -> LatencyResult:
    """Round-trip times of ``size``-byte ping-pongs on one connection with Nagle off, all of
    them within ``budget`` seconds (the ranks waiting on this pair give up after that)."""
    where = _where(addr, port)
    warmup = min(warmup, iters)
    msg = b"x" * size
    deadline = time.monotonic() + budget if budget is not None else None
    if budget is not None:
        timeout = min(timeout, budget)
    rtts: list[float] = []
    try:
        with _connect(addr, port, timeout) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(_LAT + struct.pack("!i", size))
            for i in range(warmup + iters):
                t0 = time.perf_counter()
                s.sendall(msg)
                _recv_exact(s, size)
                if i >= warmup:
                    rtts.append((time.perf_counter() - t0) * 1e6)
                if deadline is not None and time.monotonic() > deadline:
                    raise NetTestError(
                        f"latency test to {where}: {len(rtts)} of {iters} round trips of {size} B "
                        f"in {budget:g} s: lower --latency-iters or --latency-bytes, or raise --timeout")
    except OSError as e:
        raise NetTestError(f"latency test to {where} failed after {len(rtts)} of {iters} round "
                           f"trips: {_why(e)}") from None
    return LatencyResult(rtts)


def local_address(peer: str) -> str:
    """The address this host uses to reach ``peer`` (no packet is sent: UDP connect only).

    A peer that does not resolve, or that this host has no route to, is an error: falling back
    to loopback would hand the other hosts an address where they reach themselves."""
    if peer in ("127.0.0.1", "localhost", "::1"):
        return "127.0.0.1"
    try:
        infos = socket.getaddrinfo(peer, 9, type=socket.SOCK_DGRAM)
    except (OSError, UnicodeError) as e:
        raise NetTestError(f"cannot resolve MASTER_ADDR {peer!r}: {_why(e)}") from None
    last: OSError | None = None
    for family, _, _, _, sockaddr in infos:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            try:
                s.connect(sockaddr)
                return str(s.getsockname()[0])
            except OSError as e:
                last = e
    raise NetTestError(f"no route from this host to MASTER_ADDR {peer!r}: {_why(last)}")
