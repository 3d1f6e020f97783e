"""A rank under a launcher whose peers never come: rank 1 started while rank 0 never is, rank 0
while rank 1 never is. The waiting rank says early, in one line, what it waits for and where, and
at --timeout ends in one line naming who never came (no torch traceback, no C++ frames), exit 1.
Also: a local rank still starts when the fork server's private "alive" descriptor is gone.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from clusterbench.errors import ClusterbenchError
from clusterbench.ranks import context as ctxmod
from clusterbench.ranks import launched, local
from clusterbench.ranks.env import RankEnv

TESTS = Path(__file__).parent
SRC = TESTS.parent / "src"
TIMEOUT = 3   # --timeout of the commands started here, in seconds


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _launched_env(rank: int, world: int, port: int) -> dict[str, str]:
    """This environment without any launcher's variables, then torchrun's for ``rank``."""
    launcher = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                "TORCHELASTIC_USE_AGENT_STORE", "CLUSTERBENCH_DB")
    env = {k: v for k, v in os.environ.items()
           if k not in launcher and not k.startswith(("OMPI_", "PMI_", "SLURM_", "MPI_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    env.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    return env


@pytest.fixture
def started() -> Iterator[Any]:
    """Commands in sessions of their own, each process group killed at the end."""
    procs: list[subprocess.Popen[str]] = []

    def start(argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, env=env)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _net(db: Path) -> list[str]:
    return [sys.executable, "-m", "clusterbench", "net", "--timeout", str(TIMEOUT), "-t", "0.5", "--db", str(db)]


@pytest.mark.parametrize(("rank", "words"), [
    (1, "rank 0 never came: nothing listened at 127.0.0.1:{port} (MASTER_ADDR:MASTER_PORT)"),
    (0, "1 rank never joined at 127.0.0.1:{port} (1 of 2 ranks joined)"),
])
def test_a_rank_whose_peer_never_starts_ends_at_its_timeout_in_one_line(
        started: Any, tmp_path: Path, rank: int, words: str) -> None:
    port = _free_port()
    proc = started(_net(tmp_path / "r.db"), _launched_env(rank, 2, port))
    # a bound on a hang, not a timing: the rank ends at its own --timeout, not the store's retries
    out, err = proc.communicate(timeout=TIMEOUT + 30)
    assert proc.returncode == 1, err
    errors = [line for line in err.splitlines() if line.startswith("clusterbench: error:")]
    assert errors == [f"clusterbench: error: rank {rank} on {socket.gethostname()}: "
                      f"{words.format(port=port)} within {TIMEOUT} s (--timeout)"], err
    others = [line for line in err.splitlines() if line not in errors and "warning: " not in line]
    assert others == [], err   # no traceback, no C++ frames of the store's client
    assert "Traceback" not in err and "frame #" not in err
    assert out == ""


def test_a_rank_that_rank_0_joins_late_runs(started: Any, tmp_path: Path) -> None:
    """The wait is for rank 0 to come, not a shorter timeout: rank 0 started after rank 1 has
    waited a while still makes a complete run."""
    port = _free_port()
    db = tmp_path / "r.db"
    argv = [sys.executable, "-m", "clusterbench", "net", "--timeout", "60", "-t", "0.1",
            "--latency-iters", "5", "--db", str(db)]
    worker = started(argv, _launched_env(1, 2, port))
    time.sleep(1.0)   # rank 1 is importing PyTorch or already knocking at the port
    root = started(argv, _launched_env(0, 2, port))
    out, err = root.communicate(timeout=120)
    _, werr = worker.communicate(timeout=60)
    assert root.returncode == 0 and worker.returncode == 0, (err, werr)
    assert "bandwidth" in out
    assert "Traceback" not in werr and "error" not in werr


# -- the waits themselves, in this process

def _env(rank: int, world: int, port: int) -> RankEnv:
    return RankEnv(rank=rank, world_size=world, local_rank=0, local_world_size=1, master_addr="127.0.0.1",
                   master_port=port, launcher="torchrun", host="hostA")


def test_waiting_for_rank_0_says_so_once_then_gives_up(capsys: pytest.CaptureFixture[str]) -> None:
    port = _free_port()
    wait = 1.0   # the notice comes after half of it
    with pytest.raises(ClusterbenchError) as e:
        ctxmod._wait_for_store(_env(1, 4, port), "rank 0", time.monotonic() + wait, wait)
    assert str(e.value) == (f"rank 0 never came: nothing listened at 127.0.0.1:{port} (MASTER_ADDR:MASTER_PORT) "
                            "within 1 s (--timeout)")
    err = capsys.readouterr().err
    assert err == (f"clusterbench: warning: rank 1 on hostA: waiting for rank 0 at 127.0.0.1:{port} "
                   "(MASTER_ADDR:MASTER_PORT): nothing listens there yet; 4 ranks expected, giving up after "
                   "1 s (--timeout)\n")
    assert ctxmod.joining() is None


def test_waiting_for_rank_0_ends_when_it_listens() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        ctxmod._wait_for_store(_env(1, 2, port), "rank 0", time.monotonic() + 30, 30)
    assert ctxmod.joining() is None


@pytest.fixture
def master_store() -> Iterator[Any]:
    import torch.distributed as dist

    port = _free_port()
    store = dist.TCPStore("127.0.0.1", port, 3, is_master=True, timeout=timedelta(seconds=30),
                          wait_for_workers=False)
    yield port, dist.PrefixStore("clusterbench/test", store)


def test_waiting_for_the_other_ranks_counts_them_then_gives_up(master_store: Any,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    port, store = master_store
    store.add("joined", 1)   # rank 0 is there; rank 2 never comes
    with pytest.raises(ClusterbenchError) as e:
        ctxmod._wait_for_peers(store, _env(1, 3, port), time.monotonic() + 1.0, 1.0)
    assert str(e.value) == f"1 rank never joined at 127.0.0.1:{port} (2 of 3 ranks joined) within 1 s (--timeout)"
    assert capsys.readouterr().err == (f"clusterbench: warning: rank 1 on hostA: waiting for the other ranks at "
                                       f"127.0.0.1:{port} (2 of 3 ranks joined); giving up after 1 s (--timeout)\n")
    assert ctxmod.joining() is None


def test_waiting_for_the_other_ranks_ends_when_the_last_joins(master_store: Any) -> None:
    port, store = master_store
    store.add("joined", 1)
    late = threading.Timer(0.3, lambda: store.add("joined", 1))
    late.start()
    try:
        ctxmod._wait_for_peers(store, _env(1, 3, port), time.monotonic() + 30, 30)
    finally:
        late.join()
    assert int(store.add("joined", 0)) == 3 and ctxmod.joining() is None


def test_the_watchdog_names_what_the_rank_still_waits_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a launcher the watchdog ends a rank stuck at --timeout: while the group gathers it
    says for whom, not "no progress"."""
    monkeypatch.setattr(ctxmod, "_joining", "rank 0 never came: nothing listened at h:1 (MASTER_ADDR:MASTER_PORT)")
    ended: list[tuple[str, int]] = []
    done = threading.Event()

    def end(self: Any, msg: str, code: int, signum: int | None) -> None:
        ended.append((msg, code))
        done.set()

    monkeypatch.setattr(launched._Watchdog, "_end", end)
    dog = launched._Watchdog(0.1, _env(1, 2, 1), lambda _m, _s: None)
    dog.start()
    try:
        assert done.wait(30)
    finally:
        dog.stop()
    assert ended[0] == ("rank 1 on hostA: rank 0 never came: nothing listened at h:1 (MASTER_ADDR:MASTER_PORT) "
                        "within 0.1 s (--timeout)", 1)


# -- the fork server's "alive" descriptor: a private attribute, used only while it is there

class _NoSetting:
    """A later release's server whose descriptor attribute cannot be assigned."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    @property
    def _forkserver_alive_fd(self) -> int:
        return self._fd


def test_the_alive_descriptor_is_closed_where_it_is() -> None:
    from multiprocessing import forkserver

    r, w = os.pipe()
    server = type("Server", (), {})()
    server._forkserver_alive_fd = w
    try:
        saved = forkserver._forkserver
        forkserver._forkserver = server   # type: ignore[attr-defined]
        try:
            assert local._close_forkserver_alive_fd() is True
        finally:
            forkserver._forkserver = saved   # type: ignore[attr-defined]
        assert server._forkserver_alive_fd is None
        assert os.read(r, 1) == b""   # every write end closed: the server would see its end of file
    finally:
        os.close(r)


@pytest.mark.parametrize("shape", ["no server", "no attribute", "renamed", "not a descriptor", "bool", "read-only"])
def test_a_missing_or_reshaped_attribute_degrades_without_error(monkeypatch: pytest.MonkeyPatch, shape: str) -> None:
    from multiprocessing import forkserver

    r, w = os.pipe()
    try:
        if shape == "no server":
            monkeypatch.delattr(forkserver, "_forkserver")
        elif shape == "read-only":
            monkeypatch.setattr(forkserver, "_forkserver", _NoSetting(w))
        else:
            server = type("Server", (), {})()
            if shape == "renamed":
                server._alive_w = w
            elif shape == "not a descriptor":
                server._forkserver_alive_fd = str(w)
            elif shape == "bool":
                server._forkserver_alive_fd = True   # an int to isinstance: fd 1 must not be closed
            monkeypatch.setattr(forkserver, "_forkserver", server)
        closed = local._close_forkserver_alive_fd()
        assert closed is (shape == "read-only")
        os.fstat(1)   # standard output still open
        if shape != "read-only":
            os.fstat(w)   # nothing of ours closed
    finally:
        os.close(r)
        if shape != "read-only":
            os.close(w)


def test_a_rank_starts_without_the_private_attribute() -> None:
    """The whole step a local rank takes first, in a process of its own (it sets the parent-death
    signal): with the attribute gone it runs on, without a word."""
    code = ("import multiprocessing.forkserver as f; del f._forkserver\n"
            "from clusterbench.ranks import local\n"
            "local._die_with_the_command(); print('ran on')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (0, "ran on\n", "")
