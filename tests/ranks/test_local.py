"""Tests of clusterbench.ranks.local: local ranks."""

from __future__ import annotations

import os

import pytest

from clusterbench.ranks import local


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



def test_a_signal_while_the_helpers_start_reaches_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C (or hangup) that lands while a helper starts is the command's: its handler runs
    as the start returns, the helper itself starts with both held back (a child keeps the mask),
    and the command's mask is as before. (Both were ignored while the helpers started, and a
    Ctrl-C in that moment was lost: the run went on to the end.)"""
    import signal
    import threading
    from multiprocessing import forkserver, resource_tracker

    masks: list[set[int]] = []

    def start_helper() -> None:   # what a child started now would get; the signals land meanwhile
        masks.append({int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])})
        # to this thread: one sent to the process may go to a thread of the test runner instead
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGHUP)

    monkeypatch.setattr(resource_tracker, "ensure_running", start_helper)
    monkeypatch.setattr(forkserver, "ensure_running", start_helper)
    caught: list[int] = []
    saved = {s: signal.signal(s, lambda n, _f: caught.append(n)) for s in (signal.SIGINT, signal.SIGHUP)}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    try:
        local._helpers_outlive_hangup()
        after = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    assert sorted(caught) == sorted([signal.SIGINT, signal.SIGHUP] * 2)   # one of each per helper
    assert after == before
    assert len(masks) == 2 and all({signal.SIGINT, signal.SIGHUP} <= m for m in masks)
