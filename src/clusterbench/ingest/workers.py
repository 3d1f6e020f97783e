"""What the readers of a large log in worker processes share (nccl_parallel, jsonl_parallel):
whether a log is worth it, the workers started and stopped, and a part's runs received."""

from __future__ import annotations

import gc
import io
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Any, BinaryIO

from clusterbench import collector
from clusterbench.ingest.common import BOM
from clusterbench.ranks.signals import die_with_parent, parent_gone

BATCH = 256   # runs per message from a worker
_BOM_BYTES = BOM.encode()

Worker = tuple[Any, Connection]   # the process and the end of its pipe the main process reads


def usable(lines: Any, min_bytes: int) -> bool:
    """Whether ``lines`` come from a plain file of at least ``min_bytes`` (smaller ones are read
    by one process: starting workers would cost more), to be read by several processes."""
    path, jobs = getattr(lines, "path", None), getattr(lines, "jobs", 1)
    if not path or jobs < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return False
    try:
        return os.path.getsize(path) >= min_bytes
    except OSError:
        return False


def part_text(f: BinaryIO, start: int, end: int) -> str:
    """Bytes ``start``..``end`` of the log ``f`` as text, decoded as the whole file is (UTF-8,
    junk replaced); the file's first part without a byte order mark, as iter_runs reads the head."""
    f.seek(start)
    text = f.read(end - start).decode("utf-8", "replace")
    return text.removeprefix(BOM) if start == 0 else text


@contextmanager
def text_from(path: str, start: int) -> Iterator[io.TextIOWrapper]:
    """The log ``path`` from byte ``start`` on, as text opened as the import opens it (a byte order
    mark at the file's start dropped, as iter_runs does): for the rest of a file read here."""
    with open(path, "rb") as raw:
        raw.seek(start)
        if start == 0 and raw.read(len(_BOM_BYTES)) != _BOM_BYTES:
            raw.seek(0)
        yield io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")


def start(target: Callable[..., None], args: Sequence[tuple[Any, ...]]) -> list[Worker]:
    """One forked worker per ``args`` entry, each running ``target(*its args, send end, parent)``."""
    ctx = multiprocessing.get_context("fork")
    workers: list[Worker] = []
    try:
        for a in args:
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=target, args=(*a, send, os.getpid()), daemon=True)
            proc.start()
            send.close()
            workers.append((proc, recv))
    except BaseException:
        stop(workers)
        raise
    return workers


def stop(workers: list[Worker]) -> None:
    """The workers ended (killed if still at work) and waited for."""
    for proc, recv in workers:
        recv.close()
        if proc.is_alive():
            proc.kill()
        proc.join()
    workers.clear()


def serve_parts(path: str, parts: Sequence[Any], read: Callable[[BinaryIO, Any], tuple[list[Any], tuple[Any, ...]]],
                conn: Connection, parent: int | None = None) -> None:
    """A worker process's life: each of its ``parts`` of the file ``path`` read whole by ``read``
    (the part's runs and how it ended; ("again",) where it raises: a defect the main process meets
    again, as one pass would), then sent, while the main process takes another worker's part. It
    dies with ``parent``, the import: a SIGKILL of the command (no handler runs, nothing joins the
    workers) left them parsing under init, holding the log open, for as long as their parts took."""
    if parent is not None:
        die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_DFL)    # Ctrl-C or SIGTERM ends it quietly; the main
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # process says what happened
    # A part's runs are held until sent: the collector would walk them again and again for the
    # cycles a parse does not make; it runs once per part instead, over what the part made
    gc.disable()
    gc.freeze()
    try:
        with open(path, "rb") as f:
            for part in parts:
                if parent is not None and parent_gone(parent):   # (where the kernel was not asked)
                    return
                try:
                    runs, end = read(f, part)
                except Exception:
                    runs, end = [], ("again",)
                send_part(conn, runs, end)
                del runs
                gc.collect()
    except (BrokenPipeError, EOFError, OSError):
        pass   # the main process has stopped reading
    finally:
        conn.close()


def send_part(conn: Connection, runs: list[Any], end: tuple[Any, ...]) -> None:
    """A part's runs, in batches, then how the part ended (``receive`` reads them)."""
    for i in range(0, len(runs), BATCH):
        conn.send(("runs", runs[i:i + BATCH]))
    conn.send(end)


def receive(conn: Connection) -> tuple[list[Any], tuple[Any, ...]]:
    """A part's runs and how it ended, as its worker sent them (``send_part``); ("again",) where
    the worker died."""
    runs: list[Any] = []
    while True:
        # Unpickling a batch makes thousands of containers at once, none in a cycle: the
        # collector would only walk them over and over (0.5 s of a 200 MB import)
        with collector.paused():
            try:
                msg = conn.recv()
            except (EOFError, OSError):   # the worker died
                return [], ("again",)
        if msg[0] != "runs":
            return runs, msg
        runs += msg[1]
