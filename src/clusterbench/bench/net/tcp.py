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
        return sum(xs) / len(xs)


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
                    while True:
                        msg = conn.recv(size)
                        if not msg:
                            break
                        while len(msg) < size:
                            more = conn.recv(size - len(msg))
                            if not more:
                                return
                            msg += more
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


def _connect(addr: str, port: int, timeout: float) -> socket.socket:
    s = socket.create_connection((addr, port), timeout=timeout)
    s.settimeout(timeout)
    return s


def bandwidth(addr: str, port: int, *, streams: int = 4, duration: float = 2.0,
              timeout: float = 30.0) -> BandwidthResult:
    """Send for ``duration`` seconds over ``streams`` connections; the receiver measures."""
    payload = memoryview(bytes(CHUNK))
    socks = [_connect(addr, port, timeout) for _ in range(streams)]
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
            with lock:
                errors.append(e)
        finally:
            s.close()

    threads = [threading.Thread(target=stream, args=(s,), daemon=True) for s in socks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(duration + timeout)
    if errors:
        raise ConnectionError(f"bandwidth test to {addr}:{port} failed: {errors[0]}")
    if len(reports) != streams:
        raise TimeoutError(f"bandwidth test to {addr}:{port} did not finish")
    total = sum(r[0] for r in reports)
    firsts = [r[1] for r in reports if r[0]]
    span = max(r[2] for r in reports) - min(firsts) if firsts else 0.0
    return BandwidthResult(total, span, streams)


def latency(addr: str, port: int, *, iters: int = 200, size: int = 8, warmup: int = 20,
            timeout: float = 30.0) -> LatencyResult:
    """Round-trip times of ``size``-byte ping-pongs on one connection with Nagle off."""
    msg = b"x" * size
    with _connect(addr, port, timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(_LAT + struct.pack("!i", size))
        rtts = []
        for i in range(warmup + iters):
            t0 = time.perf_counter()
            s.sendall(msg)
            _recv_exact(s, size)
            if i >= warmup:
                rtts.append((time.perf_counter() - t0) * 1e6)
    return LatencyResult(rtts)


def local_address(peer: str) -> str:
    """The address this host uses to reach ``peer`` (no packet is sent: UDP connect only)."""
    if peer in ("127.0.0.1", "localhost", "::1"):
        return "127.0.0.1"
    family = socket.AF_INET6 if ":" in peer else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        try:
            s.connect((peer, 9))
            return str(s.getsockname()[0])
        except OSError:
            return "127.0.0.1"
