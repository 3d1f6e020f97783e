"""Stopping a measuring command with SIGINT (Ctrl-C), SIGTERM or SIGHUP (a closed terminal or a
dropped ssh session) without losing what it printed.

The first signal raises ``Interrupted`` where the command is (a ``KeyboardInterrupt``, so every
``except KeyboardInterrupt`` that stops ranks handles SIGTERM the same way); the driver stops the
ranks and the runner stores the rows that finished as a run marked ``interrupted``. Every later
signal (the impatient second Ctrl-C, a second SIGTERM from a scheduler) is held, not raised, until
that run is stored: raised there, it would abandon the store's transaction and lose the run. A
block that must not be cut at all (saving a run that completed) holds signals with ``held()``.

Exit codes follow the shell's convention: 128 + the signal number, 130 for SIGINT, 143 for SIGTERM,
129 for SIGHUP. A SIGHUP that is ignored when the command starts (``nohup``) stays ignored.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_HANGUP = getattr(signal, "SIGHUP", None)   # not on Windows


class Interrupted(KeyboardInterrupt):
    """The command was asked to stop by a signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def reason(self) -> str:
        return describe(self.signum)


def describe(signum: int) -> str:
    return "interrupted by SIGINT (Ctrl-C)" if signum == signal.SIGINT else f"interrupted by {signal.Signals(signum).name}"


class _State:
    def __init__(self) -> None:
        self.first: int | None = None     # the signal that stopped the command
        self.holding = 0                  # inside held(): no signal is raised
        self.held: list[int] = []         # signals that arrived while raising was not allowed
        self.active = False               # handlers installed by stop_on_signals()


_state = _State()


def _handler(signum: int, _frame: FrameType | None) -> None:
    if _state.first is None and not _state.holding:
        _state.first = signum
        raise Interrupted(signum)
    if _state.first is None:
        _state.first = signum
    if not _state.held and _state.active:
        print("# stopping: storing the rows measured so far, then exiting", file=sys.stderr,
              flush=True)
    _state.held.append(signum)


def stopped_by() -> int | None:
    """The signal that stopped the command (raised or held), or None."""
    return _state.first


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP stop the command once; later ones wait (see the module's
    docstring). Outside the main thread (signals cannot be caught there) it changes nothing."""
    if threading.current_thread() is not threading.main_thread() or _state.active:
        yield
        return
    caught = [*STOP_SIGNALS]
    if _HANGUP is not None and signal.getsignal(_HANGUP) is not signal.SIG_IGN:   # not under nohup
        caught.append(_HANGUP)
    old = {s: signal.getsignal(s) for s in caught}
    _state.__init__()  # type: ignore[misc]
    _state.active = True
    for s in caught:
        signal.signal(s, _handler)
    try:
        yield
    finally:
        _state.active = False
        if _state.first is None:
            for s, h in old.items():
                signal.signal(s, h)
        else:
            # The command is ending because of a signal: a later one must not cut that short,
            # even while the interpreter shuts down (when Python's own handlers are gone)
            for s in caught:
                signal.signal(s, signal.SIG_IGN)


@contextmanager
def held() -> Iterator[None]:
    """Signals that arrive inside wait until the block has finished (then ``stopped_by`` says so)."""
    _state.holding += 1
    try:
        yield
    finally:
        _state.holding -= 1


_PR_SET_PDEATHSIG = 1   # linux/prctl.h


def die_with_parent(parent: int) -> None:
    """In a child process: ask the kernel for SIGKILL when the process that started it (pid
    ``parent``) is gone (Linux ``PR_SET_PDEATHSIG``), so a SIGKILL of the command, which no
    handler sees, leaves no child running under init. A parent already gone before the request
    ends the child at once."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def parent_gone(parent: int) -> bool:
    """Whether the process that started this one has exited (where the kernel cannot be asked
    to end this one with it: every loop of a child polls it)."""
    return os.getppid() != parent


__all__ = ["STOP_SIGNALS", "Interrupted", "describe", "die_with_parent", "held", "parent_gone", "stop_on_signals",
           "stopped_by"]
