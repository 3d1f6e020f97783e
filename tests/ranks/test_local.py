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
