"""``clusterbench import``'s work: the files' runs parsed and saved, one transaction per file.

A file is stored whole or not at all: an error, Ctrl-C or SIGTERM roll its transaction back. A
file already imported (same content and the same --tool, --host, --tag) is skipped. What is
printed is the caller's (an ``ImportSink``): it is told of each run as it is stored, inside the
file's transaction, so a log of thousands of runs is never held whole. A standard output that
fails there (``| head -1``, ``> /dev/full``) stops the printing, never the transaction: the file
is still committed, and the result says the output failed (exit ``OUTPUT_FAILED``, 74, which
means the runs were stored).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, islice
from typing import Any, Protocol

from clusterbench.envinfo.software import usable_cores
from clusterbench.errors import ClusterbenchError
from clusterbench.ingest.common import ImportedRun
from clusterbench.ingest.source import (
    file_digest,
    identity,
    new_digest,
    read_in_parts,
    read_once,
    runs_of,
    spool,
    streamed,
)
from clusterbench.output import OUTPUT_FAILED, OutputGuard
from clusterbench.records import FAILED, INCOMPLETE, INTERRUPTED, RUN_STATUSES, Run
from clusterbench.store import Store
from clusterbench.units import id_ranges

ROLLED_BACK = "a file is stored whole or not at all"
IMPORTED_BEFORE = "the file was imported before"

# What a run that is not stored (--dry-run) is shown as: (file name, run, its import) -> text.
# A module's function: it runs where the run was parsed, in a worker process for a large log.
Render = Callable[[str, Run, ImportedRun], str]


class ImportSink(Protocol):
    """What the caller prints while files are imported."""

    def stored(self, name: str, run: Run, item: ImportedRun) -> None:
        """``run`` (of file ``name``) was saved; its file's transaction is still open."""

    def shown(self, text: str) -> None:
        """The text ``Render`` made of a run that is not stored."""

    def not_stored(self, name: str, text: str) -> None:
        """Runs said to be stored for ``name`` were rolled back: ``text`` says which and why."""

    def already_imported(self, name: str, text: str) -> None:
        """File ``name`` was skipped: ``text`` names the runs it was imported as."""

    def failed(self, name: str, error: str) -> None:
        """File ``name`` could not be read, recognised or stored: nothing of it was stored."""


@dataclass(frozen=True)
class ImportOptions:
    tool: str | None = None        # --tool: the tool that wrote the logs (None: detected)
    host: str | None = None        # --host: for logs that name no host
    tags: dict[str, str] = field(default_factory=dict)
    command: tuple[str, ...] = ()  # the command line stored with a run that has none
    jobs: int | None = None        # processes parsing a large nccl-tests log (None: 2 where there are 2 CPUs)


@dataclass
class ImportResult:
    files: int
    stored: bool                                   # False: --dry-run
    runs: list[int] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {s: 0 for s in RUN_STATUSES})
    failed_files: list[dict[str, str]] = field(default_factory=list)
    already_imported: list[dict[str, Any]] = field(default_factory=list)
    output_error: str | None = None                # standard output failed: what the runs were not shown on
    # a stop signal came as this file's transaction committed: (file, signal); it is stored,
    # the files after it were not imported
    stopped: tuple[str, int] | None = None

    @property
    def exit_code(self) -> int:
        """2 when a file was not imported; 1 when a run is failed, incomplete or interrupted;
        ``OUTPUT_FAILED`` when only the printing failed (the runs are stored)."""
        if self.stopped is not None:
            return 128 + self.stopped[1]
        if self.failed_files:
            return 2
        if self.counts[FAILED] or self.counts[INCOMPLETE] or self.counts[INTERRUPTED]:
            return 1
        return OUTPUT_FAILED if self.output_error is not None else 0


class _AlreadyImported(Exception):
    def __init__(self, runs: list[int]) -> None:
        super().__init__(f"already imported as run(s) {id_ranges(runs)} (same content): skipped")
        self.runs = runs


class _GuardedSink:
    """The caller's sink, its printing guarded: a failed standard output is remembered, and the
    import (its transactions) goes on without it."""

    def __init__(self, sink: ImportSink) -> None:
        self.sink = sink
        self.guard = OutputGuard()

    def stored(self, name: str, run: Run, item: ImportedRun) -> None:
        self.guard(self.sink.stored, name, run, item)

    def shown(self, text: str) -> None:
        self.guard(self.sink.shown, text)

    def not_stored(self, name: str, text: str) -> None:
        self.guard(self.sink.not_stored, name, text)

    def already_imported(self, name: str, text: str) -> None:
        self.guard(self.sink.already_imported, name, text)

    def failed(self, name: str, error: str) -> None:
        self.guard(self.sink.failed, name, error)


def completed(run: Run, opts: ImportOptions) -> Run:
    """The run with what the import adds: its tags, the command, ``--host``."""
    run.tags.update(opts.tags)
    if not run.command:  # only a re-imported clusterbench run has the command it ran
        run.command = list(opts.command)
    if opts.host and not run.hosts:
        run.hosts = [opts.host]
    return run


def _unstored(item: ImportedRun, name: str, opts: ImportOptions, render: Render) -> tuple[str, str]:
    """A run that is not stored (--dry-run): its status and the text shown for it."""
    run = completed(item.run, opts)
    return run.status, render(name, run, item)


def import_files(sources: Sequence[tuple[str, str]], opts: ImportOptions, sink: ImportSink,
                 db: str | None = None, dry_run: bool = False, render: Render | None = None
                 ) -> ImportResult:
    """Import each ``(path, name)`` of ``sources`` (``-``: standard input; ``name``: the path as
    printed and stored) into ``db``, or with ``dry_run`` parse only, each run shown as
    ``render`` makes it. Files that fail are in the result; the others are still stored."""
    jobs = opts.jobs or min(2, usable_cores())
    guarded = _GuardedSink(sink)
    sink = guarded
    store = None if dry_run else Store.open(db)
    if store is not None:
        # A file is still one atomic transaction, but its commit does not wait for the disk
        store.relax_durability()
    result = ImportResult(files=len(sources), stored=not dry_run)
    try:
        for path, name in sources:
            stored: list[int] = []
            counted: dict[str, int] = {}
            commits = store.db.commits if store is not None else 0
            once = read_once(path)
            source, spooled = path, None
            try:
                if store is not None and streamed(path):
                    source = spooled = spool(path)
                    once = False
                if store is None:
                    _show_file(source, opts, sink, render, new_digest() if once else None, counted, jobs, name)
                else:
                    _import_file(source, opts, sink, store, once, stored, counted, jobs, name,
                                 stored_name="stdin" if path == "-" else None)
            except _AlreadyImported as e:
                _not_stored(sink, name, stored, IMPORTED_BEFORE)
                result.already_imported.append({"file": name, "runs": e.runs})
                sink.already_imported(name, f"{name}: {e}")
                continue
            except ClusterbenchError as e:
                _not_stored(sink, name, stored)
                result.failed_files.append({"file": name, "error": str(e)})
                sink.failed(name, str(e))
                continue
            except KeyboardInterrupt as e:   # a signal (Ctrl-C, SIGTERM, SIGHUP)
                if store is None or store.db.commits == commits:   # the file's transaction rolled back
                    _not_stored(sink, name, stored)
                    raise
                # it came as the file's transaction committed: the file is stored, as it was told;
                # the files after it are not imported
                result.stopped = (name, int(getattr(e, "signum", signal.SIGINT)))
            except BaseException:   # the file's transaction rolled back
                _not_stored(sink, name, stored)
                raise
            finally:
                if spooled is not None:
                    os.unlink(spooled)
            _count(result, stored, counted)
            if result.stopped is not None:
                break
    finally:
        if store is not None:
            try:
                store.close()
            except ClusterbenchError:
                if sys.exc_info()[1] is None:  # never instead of the error that ended the import
                    raise
    result.output_error = guarded.guard.error
    return result


def _count(result: ImportResult, stored: list[int], counted: dict[str, int]) -> None:
    """A file's runs, stored, added to what the import did."""
    result.runs += stored
    for status, n in counted.items():
        result.counts[status] += n


def _not_stored(sink: ImportSink, name: str, stored: list[int], why: str = ROLLED_BACK) -> None:
    """Say that the run ids told for a file that was then rolled back do not exist."""
    if stored:
        sink.not_stored(name, f"{name}: run(s) {id_ranges(stored)} printed above were not stored: {why}")


def _show_file(path: str, opts: ImportOptions, sink: ImportSink, render: Render | None, digest: Any,
               counted: dict[str, int], jobs: int, name: str) -> None:
    """Parse one file without storing it, showing each run as it goes."""
    if render is None:
        raise TypeError("a dry run needs render: what a run that is not stored is shown as")
    # only the text shown for each run crosses back from a worker process, not its records
    shown = partial(_unstored, name=name, opts=opts, render=render)
    for status, text in runs_of(path, opts.tool, digest, jobs, name, shown):
        counted[status] = counted.get(status, 0) + 1
        sink.shown(text)


class _FileDigest:
    """A file's digest (its identity's), computed once: when first asked for, or ``early`` by a
    thread, while a parse's worker processes read their first parts and this process receives
    them (hashlib lets go of the interpreter while it hashes). What it raised is raised by ``get``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._value: Any = None
        self._error: Exception | None = None
        self._thread: threading.Thread | None = None

    def get(self) -> Any:
        if self._thread is not None:
            self._thread.join()
        elif self._value is None and self._error is None:
            self._compute()
        if self._error is not None:
            raise self._error
        return self._value

    def early(self) -> None:
        """The digest started in a thread: called once the workers are started (a process that
        forks while a thread of it runs may give the child a lock that thread held)."""
        if self._thread is None and self._value is None:
            self._thread = threading.Thread(target=self._compute, name="clusterbench-digest", daemon=True)
            self._thread.start()

    def _compute(self) -> None:
        try:
            self._value = file_digest(self.path)
        except Exception as e:  # noqa: BLE001 - raised by ``get``, in the thread that asks
            self._error = e


def _import_file(path: str, opts: ImportOptions, sink: ImportSink, store: Store, once: bool,
                 stored: list[int], counted: dict[str, int], jobs: int, name: str,
                 stored_name: str | None = None) -> None:
    """One file parsed and stored in its own transaction, unless it was imported before.

    A file's identity is known before a run of it is stored: before it is parsed, or where worker
    processes read it, while they read their first parts (a 100 MB night takes 0.07 s to hash,
    which they need not wait for); one read once (standard input, a FIFO) is known once read."""
    hashed = new_digest() if once else None   # updated as the file is read
    digest = None if once else _FileDigest(path)

    def refuse_if_imported_before() -> None:
        if digest is not None and (before := store.imported_runs(
                identity(digest.get(), opts.tool, opts.host, opts.tags))):
            raise _AlreadyImported(before)

    checked = not read_in_parts(path, jobs)
    if checked:
        refuse_if_imported_before()
    early = digest.early if digest is not None else None
    with closing(runs_of(path, opts.tool, hashed, jobs, stored_name or name, meanwhile=early)) as runs:
        try:
            first = list(islice(runs, 1))
        except Exception:
            # a file imported before is that, and one that cannot be read says so, even where
            # this version's parser refuses what an earlier one stored
            if not checked:
                refuse_if_imported_before()
            raise
        if not checked:
            refuse_if_imported_before()
        with store.transaction():
            _store_file(chain(first, runs), opts, sink, store, stored, counted, name)
            # again inside the transaction, where a concurrent import of the same file (or
            # standard input seen before) is caught and rolled back
            ident = identity(hashed if digest is None else digest.get(), opts.tool, opts.host, opts.tags)
            if before := store.imported_runs(ident):
                raise _AlreadyImported(before)
            store.note_imported(stored, ident, name)


def _store_file(runs: Iterable[ImportedRun], opts: ImportOptions, sink: ImportSink, store: Store,
                stored: list[int], counted: dict[str, int], name: str) -> None:
    """A file's runs saved (in the caller's transaction), the sink told of each as it goes;
    ``name``: the file's name as shown."""
    for item in runs:
        run = completed(item.run, opts)
        stored.append(store.save_run_rows(run, item.store_rows()))
        counted[run.status] = counted.get(run.status, 0) + 1
        sink.stored(name, run, item)
