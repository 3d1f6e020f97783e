"""What the readers of a large log in worker processes share (nccl_parallel, jsonl_parallel):
whether a log is worth it, the workers started and stopped, and a part's runs received."""

from __future__ import annotations

import gc
import multiprocessing
import os
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

BATCH = 256   # runs per message from a worker

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
        collecting = gc.isenabled()
        gc.disable()
        try:
            msg = conn.recv()
        except (EOFError, OSError):   # the worker died
            return [], ("again",)
        finally:
            if collecting:
                gc.enable()
        if msg[0] != "runs":
            return runs, msg
        runs += msg[1]
