"""Local ranks: the command starts ``np`` ranks on this host from a forkserver that has imported
torch once (so ranks start in milliseconds), relays rank 0's events to the sink as they arrive,
and watches every rank: one that exits, raises, or makes no progress for ``timeout`` seconds
ends the whole run, with the rank and host named. Events that arrived before the failure are
kept, so the caller can store the finished rows as an incomplete run.

Each rank talks to the command through its own pipe (``_Channel``); a companion thread in the
rank forwards its progress and ends it if the command is gone.
"""

from __future__ import annotations

import contextlib
import os
import queue as queue_mod
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.ranks.env import RankEnv
from clusterbench.ranks.job import Job, JobOutcome, Sink, describe_exception, run_rank, short
from clusterbench.ranks.signals import Interrupted, die_with_parent, held, stopped_by
from clusterbench.records import COMPLETE, INCOMPLETE, INTERRUPTED


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


HEARTBEAT_S = 0.5


class _Channel:
    """A rank's end of its pipe to the command. A message is written whole before ``send``
    returns (an event is pickled here, so an unpicklable one fails in the rank that sent it),
    so a rank that dies right after ``ctx.record`` has delivered that row. One pipe per rank: a
    rank killed in the middle of a message garbles only its own pipe."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.lock = threading.Lock()   # the rank's main thread and its companion both send

    def send(self, msg: tuple[str, int, Any, Any]) -> None:
        with self.lock:
            self.conn.send(msg)

    def close(self) -> None:
        with self.lock:
            self.conn.close()


class _Companion:
    """A rank's background thread, waking every HEARTBEAT_S:

    - it forwards the rank's progress count to the parent, at most once per period, so a
      benchmark's inner loop never pays for (or competes with) a pipe write per step;
    - ranks are children of the forkserver, not of the command: if the command is killed
      (SIGKILL leaves it no chance to stop them), it ends this rank instead of orphaning it.
    """

    def __init__(self, rank: int, channel: _Channel, parent_pid: int) -> None:
        self.rank, self.channel, self.parent_pid = rank, channel, parent_pid
        self.steps = 0
        self.stopped = threading.Event()
        threading.Thread(target=self._run, daemon=True, name="clusterbench-rank-companion").start()

    def progress(self, n: int) -> None:
        self.steps = n

    def stop(self) -> None:
        """Before the rank closes its pipe: a progress message after that would raise."""
        self.stopped.set()

    def _run(self) -> None:
        sent = 0
        while not self.stopped.wait(HEARTBEAT_S):
            try:
                os.kill(self.parent_pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:
                pass
            if self.steps != sent:
                sent = self.steps
                try:
                    self.channel.send(("progress", self.rank, sent, None))
                except (ValueError, OSError):   # the pipe closed between the check and the send
                    return


def _stdout_to_stderr() -> None:
    """The command's standard output carries its table or its JSON lines: what a rank prints
    there (a benchmark's print, NCCL_DEBUG's lines) goes to standard error instead, and a closed
    standard output (``| head -1``) cannot fail a rank."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    with contextlib.suppress(OSError):
        os.dup2(2, 1)



def _die_with_the_command() -> None:
    """Make the kernel end this rank when the command is gone, even where its companion thread
    cannot run (the rank is stopped with SIGSTOP, or a C call holds the GIL): the fork server
    exits once no process holds the write end of its "alive" pipe, and the rank asks for SIGKILL
    when its parent, the fork server, exits. Each rank inherits a copy of that write end, which
    would keep the server (and so a stuck rank) alive forever after a SIGKILL of the command:
    the rank closes its copy (it starts no processes from that server)."""
    _close_forkserver_alive_fd()
    die_with_parent(os.getppid())


def _close_forkserver_alive_fd() -> bool:
    """Close this rank's copy of the fork server's "alive" pipe; whether there was one to close.

    No public API reaches that descriptor: ``multiprocessing.forkserver`` exports only
    ensure_running, get_inherited_fds (the extra descriptors, not this one),
    connect_to_new_process and set_forkserver_preload. The private ``_forkserver`` instance and
    its ``_forkserver_alive_fd``, set in the child by ``_serve_one``, were checked on CPython
    3.10.13, 3.11.7, 3.12.1, 3.13.0 and the 3.14 development tree. Should a release rename or
    drop them, nothing is closed: a rank still dies with the command through its companion
    thread and PR_SET_PDEATHSIG, only not when it is stopped and the command is SIGKILLed."""
    from multiprocessing import forkserver

    server: Any = getattr(forkserver, "_forkserver", None)
    fd = getattr(server, "_forkserver_alive_fd", None)
    if not isinstance(fd, int) or isinstance(fd, bool) or fd < 0:   # gone, renamed or reshaped
        return False
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(AttributeError, TypeError):   # read-only in some later release
        server._forkserver_alive_fd = None
    return True


def _local_rank_main(env: RankEnv, job: Job, conn: Any, parent_pid: int) -> None:
    # The parent decides when ranks die; ignore the terminal's Ctrl-C (and its hangup) so it can
    # report first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        # blocked since the fork server started (_helpers_outlive_hangup); ignored is enough now,
        # and what the rank starts gets the mask the command had
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGHUP})
    _die_with_the_command()
    _stdout_to_stderr()
    rank = env.rank
    channel = _Channel(conn)
    companion = _Companion(rank, channel, parent_pid)
    try:
        run_rank(
            env, job,
            emit=(lambda event: channel.send(("event", rank, event, None))) if rank == 0 else None,
            progress=companion.progress,
        )
        companion.stop()
        channel.send(("done", rank, None, None))
    except BaseException as e:  # noqa: BLE001 - every failure is reported to the parent
        companion.stop()
        msg, code = describe_exception(e)
        with contextlib.suppress(OSError, ValueError):   # the command may be gone
            channel.send(("error", rank, msg, code))
        with contextlib.suppress(OSError):
            channel.close()
        os._exit(1)
    channel.close()


def _read_rank(rank: int, conn: Any, inbox: queue_mod.Queue[tuple[str, int, Any, Any]]) -> None:
    """The command's reader of one rank's pipe (a thread): whole messages go to ``inbox``, then
    ("closed", rank) when the rank's end is closed (it exited, or died in the middle of one)."""
    try:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                return
            except Exception as e:  # noqa: BLE001 - a message this process cannot unpickle
                inbox.put(("error", rank, f"sent a message the command cannot read: {describe_exception(e)[0]}", 1))
                return
            inbox.put(msg)
    finally:
        with contextlib.suppress(OSError):
            conn.close()
        inbox.put(("closed", rank, None, None))


_mp_context = None


def _context() -> Any:
    global _mp_context
    if _mp_context is None:
        import multiprocessing as mp

        _mp_context = mp.get_context("forkserver")
        # Ranks fork from a server that imported torch once but never touched a GPU.
        _mp_context.set_forkserver_preload(["torch", "torch.distributed", "clusterbench.ranks.local"])
    return _mp_context


def _helpers_outlive_hangup() -> None:
    """Start multiprocessing's helper processes (the fork server the ranks come from, the resource
    tracker) deaf to SIGHUP and SIGINT: a closed terminal hangs up the whole process group, and
    the command needs them alive to stop its ranks and store what they measured
    (ranks/signals.py); a Ctrl-C to the group while the fork server still imports PyTorch (seconds,
    before it ignores SIGINT itself) printed that import's traceback under the command's line.

    The two signals are blocked, not ignored, while the helpers start: a child keeps its parent's
    signal mask through fork and exec, so the helpers start with them blocked (the fork server
    ignores SIGINT once its imports are done, which drops one still pending), while the command's
    own handlers stay in place. Ignoring them here instead lost a Ctrl-C that landed in the moment
    between a helper's start and the command's handler coming back: the run went on to the end
    and exited 0."""
    from multiprocessing import forkserver, resource_tracker

    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        with _socket_fits(), _main_module_hidden():
            forkserver.ensure_running()
        return
    quiet = {signal.SIGHUP, signal.SIGINT}
    with _socket_fits(), _main_module_hidden():   # as when a rank starts it: no __main__
        # one block for each: the resource tracker's start unblocks SIGINT when it is done
        with _blocked(quiet):
            resource_tracker.ensure_running()
        with _blocked(quiet):
            forkserver.ensure_running()


@contextlib.contextmanager
def _blocked(signals: set[signal.Signals]) -> Iterator[None]:
    """``signals`` held back from this thread inside the block; one that arrived meanwhile is
    delivered (to the handler then in place) as the block ends."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


SUN_PATH_MAX = 107   # bytes of a Unix socket's path on Linux (sun_path, less its NUL)
# what multiprocessing puts under the temporary directory for the fork server's socket:
# pymp-XXXXXXXX/listener-XXXXXXXX
_SOCKET_UNDER_TMPDIR = len("/pymp-xxxxxxxx/listener-xxxxxxxx")


@contextlib.contextmanager
def _socket_fits() -> Iterator[None]:
    """The fork server listens on a Unix socket under TMPDIR; a TMPDIR deep enough (a CI job's
    workspace, a pytest tmp_path) makes its path too long for the socket and no rank starts
    ("AF_UNIX path too long"). Then that socket alone goes under /tmp; everything else still uses
    TMPDIR."""
    import tempfile

    if len(os.fsencode(tempfile.gettempdir())) + _SOCKET_UNDER_TMPDIR <= SUN_PATH_MAX \
            or not os.access("/tmp", os.W_OK | os.X_OK):
        yield
        return
    saved = tempfile.tempdir
    tempfile.tempdir = "/tmp"
    try:
        from multiprocessing import util

        util.get_temp_dir()   # made now, under /tmp, and kept for the process's life
        yield
    finally:
        tempfile.tempdir = saved


@contextlib.contextmanager
def _main_module_hidden() -> Iterator[None]:
    """Ranks need only clusterbench, not the caller's script: stop multiprocessing from
    re-running ``__main__`` in each rank (which would start the benchmark again there)."""
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__.pop(k) for k in ("__file__", "__spec__") if main and k in main.__dict__}
    if main is not None:
        main.__dict__["__spec__"] = None
    try:
        yield
    finally:
        if main is not None:
            main.__dict__.update(saved)


def _stop(procs: list[Any]) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
            # A stopped rank (SIGSTOP, SIGTSTP) takes SIGTERM only once it runs again
            with contextlib.suppress(OSError):
                os.kill(p.pid, signal.SIGCONT)
    deadline = time.monotonic() + 3.0
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(2.0)


def _exit_text(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    if code == 0:   # a benchmark that returned early would have sent "done": something exited it
        return "exited (code 0) before it finished"
    return f"exited with code {code}"


_COMM_ERROR_WORDS = ("connection reset", "connection closed", "timed out", "timeout", "broken pipe",
                     "connection refused", "socket", "nccl communicator was aborted", "watchdog")


def _blame(procs: list[Any], done: set[int], errors: dict[int, tuple[str, int]], steps: list[int],
           dead: list[int], host: str, timeout: float) -> tuple[str, int]:
    """Name the rank that caused a failure rather than the peers that noticed it."""
    if dead:
        r = dead[0]
        return (f"rank {r} on {host} {_exit_text(procs[r].exitcode)}", 1)
    own = [(r, e) for r, e in sorted(errors.items())
           if not any(w in e[0].lower() for w in _COMM_ERROR_WORDS)]
    if own:
        r, (msg, code) = own[0]
        return (f"rank {r} on {host}: {short(msg)}", code)
    silent = [r for r in range(len(procs)) if r not in done and r not in errors]
    if silent and not errors:  # nobody complained: the ones furthest behind are stuck
        behind = min(steps[r] for r in silent)
        silent = [r for r in silent if steps[r] == behind]
    if silent:
        names = ", ".join(f"rank {r} on {host}" for r in silent)
        return (f"{names} made no progress for {timeout:g} s (--timeout); its peers gave up waiting", 1)
    r, (msg, code) = sorted(errors.items())[0]
    return (f"rank {r} on {host}: {short(msg)}", code)


def run_local(job: Job, sink: Sink, np: int) -> JobOutcome:
    """Start ``np`` ranks of ``job`` on this host, relay rank 0's events to ``sink`` and watch
    every rank until all are done or one fails (then all are stopped, the rank to blame named)."""
    mp = _context()
    _helpers_outlive_hangup()
    port = _free_port()
    host = socket.gethostname()
    procs: list[Any] = []
    conns: list[Any] = []   # the command's end of each rank's pipe
    earlier = stopped_by()   # a signal of a run before this one is not this run's
    try:
        with _main_module_hidden():
            for r in range(np):
                env = RankEnv(rank=r, world_size=np, local_rank=r, local_world_size=np,
                              master_addr="127.0.0.1", master_port=port, launcher="local", host=host)
                reader, writer = mp.Pipe(duplex=False)
                conns.append(reader)
                p = mp.Process(target=_local_rank_main, args=(env, job, writer, os.getpid()),
                               name=f"clusterbench-rank{r}", daemon=True)
                # A signal that lands inside start() (the rank forked, its pid not yet known)
                # would leave a rank no one stops: it waits until the rank is in ``procs``.
                with held():
                    try:
                        p.start()
                    except (OSError, EOFError) as e:  # out of processes, memory or file descriptors
                        why = getattr(e, "strerror", None) or str(e) or type(e).__name__
                        raise ClusterbenchError(f"rank {r} on {host} could not start: {why}") from None
                    finally:
                        writer.close()   # the rank holds its own copy: its exit is our end of file
                    procs.append(p)
                if earlier is None and (signum := stopped_by()) is not None:
                    raise Interrupted(signum)
    except BaseException:
        with held():
            _stop(procs)  # the ranks that did start, so none is left behind
            for c in conns:
                c.close()
        raise

    inbox: queue_mod.Queue[tuple[str, int, Any, Any]] = queue_mod.Queue()
    readers = [threading.Thread(target=_read_rank, args=(r, c, inbox), daemon=True,
                                name=f"clusterbench-rank{r}-reader") for r, c in enumerate(conns)]
    for t in readers:
        t.start()

    done: set[int] = set()
    closed: set[int] = set()
    steps = [0] * np
    last_activity = time.monotonic()
    failure: tuple[str, int] | None = None
    timeout = job.options.timeout

    errors: dict[int, tuple[str, int]] = {}

    def handle(msg: tuple[str, int, Any, Any]) -> None:
        kind, rank, a, b = msg
        if kind == "event":
            sink(a)
        elif kind == "progress":
            steps[rank] = a
        elif kind == "done":
            done.add(rank)
        elif kind == "error":
            errors.setdefault(rank, (a, b))
        elif kind == "closed":
            closed.add(rank)

    def dead() -> list[int]:
        return [r for r, p in enumerate(procs)
                if r not in done and r not in errors and (r in closed or p.exitcode is not None)]

    try:
        while len(done) < np and not errors:
            try:
                handle(inbox.get(timeout=0.1))
                last_activity = time.monotonic()
                continue
            except queue_mod.Empty:
                pass
            if dead():
                for r in dead():   # what it sent before it died is read before it is blamed
                    readers[r].join(0.5)
                if inbox.empty():
                    break
                continue
            if time.monotonic() - last_activity > timeout:
                break
        if len(done) < np:
            # One failure causes others (peers see resets or time out): wait a moment so
            # the rank that caused it can be told apart from the ranks that noticed it.
            grace = time.monotonic() + 1.0
            while time.monotonic() < grace:
                try:
                    handle(inbox.get(timeout=0.1))
                except queue_mod.Empty:
                    pass
            for r in dead():   # its exit status arrives a moment after its end of file
                procs[r].join(2.0)
            failure = _blame(procs, done, errors, steps, dead(), host, timeout)
    except Interrupted as e:
        failure = (e.reason, e.exit_code)
    except KeyboardInterrupt:  # raised by Python's own SIGINT handler
        failure = ("interrupted by SIGINT (Ctrl-C)", 130)
    finally:
        # Stopping the ranks and keeping their last rows is not cut short by a second signal
        # (it is held): ranks always end, and the rows that finished reach the sink.
        with held():
            if failure is not None:
                _stop(procs)
                # Keep events that were already sent (finished rows) before the failure: each
                # reader ends at its rank's end of file, once the rank is gone.
                deadline = time.monotonic() + 2.0
                for t in readers:
                    t.join(max(0.0, deadline - time.monotonic()))
                while True:
                    try:
                        kind, rank, a, b = inbox.get_nowait()
                    except queue_mod.Empty:
                        break
                    if kind == "event":
                        sink(a)
            else:
                for p in procs:
                    p.join(10.0)
                _stop(procs)
            # Each reader closes its own pipe at end of file: closing it here, under a reader
            # still blocked in it (a rank's child holding the pipe open), could make that
            # reader read whatever file next gets the same descriptor number.
    if failure is None:
        return JobOutcome("root", COMPLETE)
    msg, code = failure
    if code > 128:
        return JobOutcome("root", INTERRUPTED, [msg], exit_code=code)
    if code == 2:
        raise UsageError(msg.split(": ", 1)[-1])
    return JobOutcome("root", INCOMPLETE, [msg], exit_code=code)

