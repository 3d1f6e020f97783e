"""System tests (cluster sweep): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import subprocess
import sys

from process_helpers import free_port

from clusterbench.bench.net import perftest


def test_perftest_client_waits_until_the_server_listens(tmp_path):
    """The server side polls its own listening sockets (no fixed sleep, no probe connection)."""
    import textwrap
    import threading

    port = free_port()
    assert not perftest.listening(port)
    # a server that listens only when told to: the wait must last until then, however long
    slow = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import socket, sys, time
        sys.stdin.readline()
        s = socket.socket(); s.bind(("127.0.0.1", {port})); s.listen(); time.sleep(120)""")],
        stdin=subprocess.PIPE, text=True)
    ended: list[tuple[str | None, bool]] = []
    waiter = threading.Thread(target=lambda: ended.append(
        (perftest.wait_listening(slow, port, timeout=120), perftest.listening(port))))
    try:
        waiter.start()
        slow.stdin.write("listen\n")
        slow.stdin.flush()
        waiter.join(150)
        # it returned "listening" while the server listened (never before: it listens when told)
        assert ended == [(None, True)]
    finally:
        slow.kill()
        slow.wait()
    dead = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert "exited with code 3" in perftest.wait_listening(dead, port, timeout=20)
    never = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert "did not listen" in perftest.wait_listening(never, port, timeout=0.5)
    finally:
        never.kill()
        never.wait()
