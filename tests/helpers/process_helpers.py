"""Processes a test started: its command, the forkserver and the ranks under it; the ports
they are given and the conditions a test waits on before it acts on them."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from typing import IO

import psutil
from paths import TESTS


def process_family(proc: subprocess.Popen) -> list[int]:
    """The command, its forkserver and its ranks: every process that must be gone at the end."""
    return [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]


def assert_all_gone(pids: list[int], within: float = 15.0) -> None:
    """Every one of ``pids`` exits (or is a zombie awaiting its parent) within ``within`` s."""
    deadline = time.monotonic() + within
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in pids if _running(p)]
        time.sleep(0.2)
    assert not alive, f"left running: {alive}"


def reap(proc: subprocess.Popen, within: float) -> None:
    """A test's last word on a process it started: killed if still running, waited for (at most
    ``within`` s), its stderr pipe closed."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(within)
    if proc.stderr:
        proc.stderr.close()


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:   # gone between the look and the question
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port the OS has just handed out as free on ``host`` (bound to port 0, then released):
    no test picks a number that another session's server may hold."""
    return free_ports(1, host)[0]


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` different free TCP ports: all held at once while the OS picks them."""
    socks = [socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) for _ in range(n)]
    try:
        for s in socks:
            s.bind((host, 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_until(condition: Callable[[], object], within: float, what: str, every: float = 0.1) -> None:
    """Return once ``condition()`` is true; fail the test, naming ``what``, if it is not within
    ``within`` seconds (a generous bound: the condition, not the clock, is what is awaited)."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within:g} s: {what}")
        time.sleep(every)


def listens_on(proc: subprocess.Popen, port: int) -> bool:
    """Whether ``proc`` itself holds a TCP socket listening on ``port``; False once it exited."""
    if proc.poll() is not None:
        return False
    try:
        conns = psutil.Process(proc.pid).net_connections(kind="tcp")
    except psutil.NoSuchProcess:
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in conns)


class Lines:
    """Every line a process writes to one of its pipes, read by a thread as it comes, so a test
    can wait for a line while the process runs and still read all it wrote once it ended."""

    def __init__(self, stream: IO[str]) -> None:
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self._lock:
                self._lines.append(line)

    def has(self, text: str) -> bool:
        with self._lock:
            return any(text in line for line in self._lines)

    def text(self, within: float = 60.0) -> str:
        """All of it, once the process closed the pipe (exited)."""
        self._thread.join(within)
        assert not self._thread.is_alive(), f"the pipe was not closed within {within:g} s"
        return "".join(self._lines)


def _dead_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS / "helpers"), str(TESTS.parent / "src"), env.get("PYTHONPATH", "")])
    return env


def _family(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:   # the command itself ended meanwhile
        return []


def _cmdline(p: psutil.Process) -> str:
    """A process's command line, "" once it has exited (or is a zombie) meanwhile."""
    try:
        return " ".join(p.cmdline())
    except psutil.Error:
        return ""


def assert_a_sigkilled_import_ends_its_workers(log: str, db: str) -> None:
    """``import LOG --jobs 2`` SIGKILLed once its two parse workers started: they end too (each
    asks the kernel to end it with its parent), not parse on under init holding the log open."""
    import signal
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "clusterbench", "import", log, "--jobs", "2", "--db", db],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        command = psutil.Process(proc.pid)
        wait_until(lambda: proc.poll() is not None or len(command.children()) == 2, 120, "the two parse workers started")
        workers = command.children()
        assert len(workers) == 2 and proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert_all_gone([w.pid for w in workers], within=30)
    finally:
        reap(proc, 30)
