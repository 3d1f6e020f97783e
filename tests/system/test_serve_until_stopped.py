"""report.openmetrics.serve_until_stopped: serves /metrics until a real SIGTERM reaches the
process, then gives the port back and returns the signal."""

import os
import signal
import socket
import urllib.request

from clusterbench.report import openmetrics


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serves_until_sigterm_then_gives_the_port_back():
    port = _free_port()
    scraped: list[str] = []
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def listening() -> None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            scraped.append(r.read().decode())
        os.kill(os.getpid(), signal.SIGTERM)

    try:
        got = openmetrics.serve_until_stopped(lambda: [], port, "127.0.0.1", lambda _e: None, listening)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert got == signal.SIGTERM and len(scraped) == 1
    with socket.socket() as s:   # nothing listens there any more (the scrape's connection may linger)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
