"""System tests (serve metrics): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import pytest
from fleet_metrics import _request
from process_helpers import reap
from stored_runs import _source


def test_serve_metrics_stops_on_a_signal_in_one_line(tmp_path):
    db = _source(tmp_path / "r.db", runs=1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([sys.executable, "-m", "clusterbench", "serve-metrics", "--port", str(port), "--db", db],
                         stderr=subprocess.PIPE, text=True)
    try:
        assert "serve-metrics: http://" in (p.stderr.readline() if p.stderr else "")
        assert _request(port, "GET", "/metrics")[0] == 200
        p.send_signal(signal.SIGINT)
        assert p.wait(20) == 0
        err = p.stderr.read() if p.stderr else ""
        assert err == "# serve-metrics: stopped by SIGINT\n", err
    finally:
        reap(p, 10)


def test_the_address_it_prints_for_ipv6_is_a_url_that_reaches_it(tmp_path):
    # `--addr ::1` printed http://::1:P/metrics, which no client reads as a host and a port
    import urllib.request

    from process_helpers import free_port

    try:
        port = free_port("::1")
    except OSError as e:
        pytest.skip(f"no IPv6 loopback here: {e}")
    db = _source(tmp_path / "r.db", runs=1)
    p = subprocess.Popen([sys.executable, "-m", "clusterbench", "serve-metrics", "--addr", "::1", "--port", str(port),
                          "--db", db], stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline() if p.stderr else ""
        assert line == f"# serve-metrics: http://[::1]:{port}/metrics (Ctrl-C to stop)\n", line
        url = line.split()[2]
        with urllib.request.urlopen(url, timeout=20) as r:
            assert r.status == 200 and b"clusterbench_" in r.read()
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(20)
        finally:
            reap(p, 10)
