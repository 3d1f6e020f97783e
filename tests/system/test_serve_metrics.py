"""System tests (serve metrics): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

from fleet_metrics import _request
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
        if p.poll() is None:
            p.kill()
            p.wait(10)
        if p.stderr:
            p.stderr.close()
