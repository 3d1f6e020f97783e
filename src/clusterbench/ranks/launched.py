"""Ranks under a launcher (torchrun, srun, mpirun): this process *is* a rank. It runs the
per-rank function itself, rank 0 feeds the sink, and a watchdog thread ends the process when it
makes no progress or a stop signal cannot reach its main thread.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time

from clusterbench.errors import UsageError
from clusterbench.printable import printable
from clusterbench.ranks import context as ctxmod
from clusterbench.ranks import peers
from clusterbench.ranks.env import RankEnv
from clusterbench.ranks.job import Job, JobOutcome, OnAbort, Sink, describe_exception, run_rank
from clusterbench.ranks.signals import STOP_SIGNALS, Interrupted, describe, stopped_by
from clusterbench.records import COMPLETE, FAILED, INCOMPLETE, INTERRUPTED

# the signals that stop a command (signals.py), as the wakeup pipe carries them: one byte each
_STOPS = frozenset(int(s) for s in (*STOP_SIGNALS, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])))


class _Watchdog:
    """Ends this process when it makes no progress for ``timeout`` seconds (a hung peer), or
    when a stop signal (SIGTERM, Ctrl-C) cannot reach it: while the main thread waits inside
    PyTorch's C++ for a peer (a rendezvous, a collective), Python runs no signal handler until
    that wait ends, which may be never. The signal's number still arrives on the wakeup pipe."""

    GRACE = 3.0   # seconds the main thread has to take a signal itself, or end its own wait
    SHORT_GRACE = 0.4   # ... when it waits on a peer that is gone: it cannot take it
    # A rank's own start (imports, its device) involves no peer, so --timeout does not count it:
    # under load importing PyTorch alone can take longer than a short --timeout. Bounded apart.
    STARTUP_S = 600.0

    def __init__(self, timeout: float, env: RankEnv, on_abort: OnAbort) -> None:
        self.timeout = timeout
        self.env = env
        self.on_abort = on_abort
        self.last = self.born = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="clusterbench-watchdog")
        self._wake_r, self._wake_w = socket.socketpair()
        self._old_wakeup: int | None = None

    def beat(self, _n: int = 0) -> None:
        self.last = time.monotonic()

    def start(self) -> None:
        for s in (self._wake_r, self._wake_w):
            s.setblocking(False)
        if threading.current_thread() is threading.main_thread():
            self._old_wakeup = signal.set_wakeup_fd(self._wake_w.fileno())
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._old_wakeup is not None:
            signal.set_wakeup_fd(self._old_wakeup)
            self._old_wakeup = None

    def _signal(self) -> int | None:
        try:
            data = self._wake_r.recv(64)
        except (BlockingIOError, OSError):
            return None
        return next((n for n in data if n in _STOPS), None)

    def _watch(self) -> None:
        signum: int | None = None
        since = 0.0
        while not self._stop.wait(0.5):
            if signum is None and (signum := self._signal()) is not None:
                since = time.monotonic()
            if signum is not None and stopped_by() is None and time.monotonic() - since > self._grace():
                self._end(f"rank {self.env.rank} on {self.env.host}: {describe(signum)} while it waited for "
                          "a peer rank", 128 + signum, signum)
            now, started = time.monotonic(), ctxmod.join_started()
            if started is None:
                limit = max(self.timeout, self.STARTUP_S)
                if now - self.born > limit:
                    self._end(f"rank {self.env.rank} on {self.env.host}: did not start within {limit:g} s "
                              "(importing PyTorch, opening its device)", 1, None)
                continue
            idle = now - max(self.last, started)
            waiting = ctxmod.joining()   # still gathering the group: say for whom, not "no progress"
            if waiting and idle > self.timeout + self.GRACE:   # the wait ends itself at --timeout
                self._end(f"rank {self.env.rank} on {self.env.host}: {waiting} within {self.timeout:g} s "
                          "(--timeout)", 1, None)
            elif not waiting and idle > self.timeout:
                self._end(f"rank {self.env.rank} on {self.env.host}: no progress for {self.timeout:g} s "
                          "(a peer rank hung or died; --timeout)", 1, None)

    def _grace(self) -> float:
        """How long the main thread has to take a signal itself: not ``GRACE`` on rank 0 when a
        peer is already gone (it waits on that peer, and the launcher that sent the signal kills
        the group some seconds after: torchrun gives its workers 30 s, ranks/peers.py)."""
        if self.env.rank == 0 and peers.gone(wait=False):
            return self.SHORT_GRACE
        return self.GRACE

    def _end(self, msg: str, code: int, signum: int | None) -> None:
        if self._stop.is_set():
            return
        lost = peers.gone() if self.env.rank == 0 else []
        if lost:   # the wait or the signal came of a peer that went: the run is incomplete, not stopped
            msg = (f"{gone_words(lost)}; {stopped_after(self.env, signum)} (it waited for that rank)"
                   if signum is not None else f"{gone_words(lost)}; {msg}")
            signum = None
        # the reason first, then what rank 0 stored (on_abort says it), as a run that ends itself
        print(f"clusterbench: error: {printable(msg)}", file=sys.stderr, flush=True)
        try:
            self.on_abort(msg, signum)
        finally:
            os._exit(code)


def run_launched(env: RankEnv, job: Job, sink: Sink, on_abort: OnAbort) -> JobOutcome:
    """Run this process's rank of ``job``: rank 0 feeds ``sink``; a watchdog ends the process
    when it hangs (``on_abort`` first, on rank 0)."""
    role = "root" if env.rank == 0 else "worker"
    watchdog = _Watchdog(job.options.timeout, env, on_abort if env.rank == 0 else (lambda _m, _s: None))
    watchdog.start()
    try:
        run_rank(env, job,
                  emit=sink if env.rank == 0 else None,
                  progress=watchdog.beat)
    except UsageError:
        raise
    except Interrupted as e:  # this process was told to stop: the rows so far are kept
        lost = peers.gone() if role == "root" else []
        if lost:   # torchrun's agent stops the group when a host dies: that host ended the run
            return JobOutcome(role, INCOMPLETE, [gone_words(lost), stopped_after(env, e.signum)],
                              exit_code=e.exit_code)
        return JobOutcome(role, INTERRUPTED, [f"rank {env.rank} on {env.host}: {e.reason}"], exit_code=e.exit_code)
    except BaseException as e:  # noqa: BLE001 - a peer's death surfaces here as a comm error
        msg, code = describe_exception(e)
        lost = peers.gone() if role == "root" else []
        return JobOutcome(role, INCOMPLETE if role == "root" else FAILED,
                          [*([gone_words(lost)] if lost else []), f"rank {env.rank} on {env.host}: {msg}"],
                          exit_code=code)
    finally:
        watchdog.stop()
        peers.forget()
    return JobOutcome(role, COMPLETE)


def gone_words(lost: list[str]) -> str:
    """The error line that names the peers whose process ended during the run."""
    return (f"{', '.join(lost)} ended during the run (its process, or its host, is gone: it stopped "
            "answering and never finished)")


def stopped_after(env: RankEnv, signum: int) -> str:
    """The error line of rank 0 stopped by a signal after a peer went: the signal ended a run that
    was already incomplete (torchrun's agent, or the launcher, stops the group when a host dies)."""
    return f"rank {env.rank} on {env.host}: stopped by {signal.Signals(signum).name} after that"
