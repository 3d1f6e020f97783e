"""``clusterbench import``: read the logs of the standard tools into the results store."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from functools import partial
from typing import IO, Any

import click

from clusterbench.cli.options import (
    command_line,
    db_option,
    fs_text,
    json_option,
    parse_tags,
    tag_option,
)
from clusterbench.envinfo.software import usable_cores
from clusterbench.errors import ClusterbenchError
from clusterbench.ingest import TOOLS, ImportedRun, iter_runs
from clusterbench.ingest.common import LogFormatError
from clusterbench.printable import printable
from clusterbench.records import COMPLETE, FAILED, INCOMPLETE, INTERRUPTED, RUN_STATUSES, Run
from clusterbench.report.jsonl import (
    dumps,
    emit,
    emit_all,
    note_line,
    run_line,
    run_objects,
    summary_line,
)
from clusterbench.store import Store

MAX_ERRORS_SHOWN = 3


class _Hashing(io.RawIOBase):
    """A byte stream read through, hashing what passes (standard input's identity is known
    only once it has been read)."""

    def __init__(self, raw: Any, digest: Any) -> None:
        self.raw, self.digest = raw, digest

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self.raw.read1(len(b)) if hasattr(self.raw, "read1") else self.raw.read(len(b))
        n = len(data)
        b[:n] = data
        self.digest.update(data)
        return n


def _stdin(digest: Any) -> IO[str]:
    """Standard input as text; undecodable bytes become U+FFFD, as for files."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # already text (a test harness, an embedding program)
        return _HashedText(sys.stdin, digest)
    return _hashed_text(buffer, digest)


def _hashed_text(raw: Any, digest: Any) -> IO[str]:
    """A byte stream as text, hashed as it is read; undecodable bytes become U+FFFD."""
    return io.TextIOWrapper(io.BufferedReader(_Hashing(raw, digest)), encoding="utf-8",
                            errors="replace", newline="")


class _HashedText:
    """Lines of a text stream, hashed (as UTF-8) as they are read."""

    def __init__(self, stream: IO[str], digest: Any) -> None:
        self.stream, self.digest = stream, digest

    def __iter__(self) -> Iterator[str]:
        for line in self.stream:
            self.digest.update(line.encode("utf-8", "surrogateescape"))
            yield line


def _open_bytes(path: str) -> IO[bytes]:
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")  # noqa: SIM115


def _read_once(path: str) -> bool:
    """Whether ``path`` can be read only once: standard input, a FIFO, a pipe named /dev/fd/N
    (``<(...)``), a device. Such a file is hashed while it is parsed, not read first to hash."""
    if path == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:   # reported when it is opened
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _streamed(path: str) -> bool:
    """Whether ``path`` is a pipe (standard input from ``kubectl logs -f POD |``, a FIFO, ``<(...)``)
    whose writer may keep it open for as long as it likes."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode if path == "-" else os.stat(path).st_mode
    except (OSError, ValueError, AttributeError, ClusterbenchError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _spool(path: str) -> str:
    """A pipe's content copied to a temporary file (named as ``path`` ends, so a .gz stays one),
    whose path is returned: a file is imported in one transaction, which holds the database's
    write lock, and a pipe read inside it held every other writer off (a benchmark finishing
    meanwhile) for as long as its writer kept it open. Endless binary data (``cat /dev/zero |``)
    is refused when its first MiB holds a NUL byte, as the parser refuses binary data from its
    head, not once the disk is full."""
    fd, tmp = tempfile.mkstemp(prefix="clusterbench-import-", suffix=".gz" if path.endswith(".gz") else "")
    try:
        with os.fdopen(fd, "wb") as out:
            src = (getattr(sys.stdin, "buffer", None) or _EncodedLines(sys.stdin)) if path == "-" \
                else open(path, "rb")  # noqa: SIM115 - closed below, or with the process
            try:
                first = True
                while chunk := src.read(1 << 20):
                    if first and not path.endswith(".gz") and b"\x00" in chunk:
                        raise LogFormatError("binary data, not a text log")
                    first = False
                    out.write(chunk)
            finally:
                if path != "-":
                    src.close()
    except OSError as e:
        os.unlink(tmp)
        raise ClusterbenchError(f"cannot read it to a temporary file: {e.strerror or e}") from None
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


class _EncodedLines:
    """A text standard input (a test harness, an embedding program) read as UTF-8 bytes."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines = iter(stream)

    def read(self, _: int) -> bytes:
        return next(self.lines, "").encode("utf-8", "surrogateescape")


def _file_digest(path: str) -> Any:
    """The sha256 of a file's content (of a .gz file: of what it holds, as imported)."""
    if os.path.isdir(path):
        raise ClusterbenchError("is a directory")
    digest = hashlib.sha256()
    try:
        with _open_bytes(path) as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    except (OSError, EOFError) as e:
        raise ClusterbenchError(getattr(e, "strerror", None) or str(e) or "unreadable file") from None
    except zlib.error as e:  # a .gz file whose header is valid and whose data is not
        raise ClusterbenchError(f"corrupt compressed data: {e}") from None
    return digest


def _identity(digest: Any, tool: str | None, host: str | None, tags: dict[str, str]) -> str:
    """What makes two imports the same: the content, and the options that change what is stored
    (the same log imported again with other tags or another --host is another import)."""
    options = {**({"tool": tool} if tool else {}), **({"host": host} if host else {}),
               **({"tags": tags} if tags else {})}
    return f"sha256:{digest.hexdigest()}" + (f" {json.dumps(options, sort_keys=True)}" if options else "")


def _id_ranges(ids: Sequence[int]) -> str:
    """``1-3, 7``: run ids as ranges."""
    out: list[str] = []
    for i in sorted(ids):
        if out and i == int(out[-1].rsplit("-", 1)[-1]) + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ", ".join(out)


class _AlreadyImported(Exception):
    def __init__(self, runs: list[int]) -> None:
        super().__init__(f"already imported as run(s) {_id_ranges(runs)} (same content): skipped")
        self.runs = runs


def _runs_of(path: str, tool: str | None, digest: Any = None, jobs: int = 1,
             name: str | None = None, prepare: Callable[[ImportedRun], Any] | None = None) -> Iterator[Any]:
    """The runs of the file ``path`` (named ``name`` in what is stored); ``digest``: read it once,
    hashing it as it is parsed (``_read_once``); ``prepare``: iter_runs' (what each run becomes)."""
    if path == "-":  # e.g. kubectl logs POD | clusterbench import -
        yield from iter_runs(_stdin(digest if digest is not None else hashlib.sha256()), tool, name="stdin",
                             prepare=prepare)
        return
    if os.path.isdir(path):
        raise ClusterbenchError("is a directory")
    name = name or path
    gz = path.endswith(".gz")   # rotated logs are often compressed
    try:
        if digest is not None:
            with open(path, "rb") as raw:
                data = gzip.GzipFile(fileobj=raw) if gz else raw
                yield from iter_runs(_hashed_text(data, digest), tool, name=name[:-3] if gz else name,
                                     prepare=prepare)
            return
        # errors="replace": junk bytes become U+FFFD, which the binary check then reports
        opener = gzip.open if gz else open
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as f:
            if gz:
                yield from iter_runs(f, tool, name=name[:-3], prepare=prepare)
            else:   # workers may read a large plain file again by its path
                yield from iter_runs(f, tool, name=name, jobs=jobs, path=path, prepare=prepare)
    except (OSError, EOFError) as e:  # EOFError: a .gz file cut short
        raise ClusterbenchError(getattr(e, "strerror", None) or str(e) or "unreadable file") from None
    except zlib.error as e:  # a .gz file whose header is valid and whose data is not
        raise ClusterbenchError(f"corrupt compressed data: {e}") from None


def _summary(path: str, item: ImportedRun, dry_run: bool) -> list[str]:
    run = item.run
    benches = item.benchmarks()
    where = "parsed (not stored)" if dry_run else f"run {run.id}"
    lines = [f"{path}: {where}: {run.source or run.meta.get('tool')} {','.join(benches) or '-'} "
             f"{run.status}, {len(item)} measurements"]
    if run.status != COMPLETE:
        shown = run.errors[:MAX_ERRORS_SHOWN]
        lines += [f"#   error: {e}" for e in shown]
        if len(run.errors) > len(shown):
            lines.append(f"#   ... {len(run.errors) - len(shown)} more error line(s): clusterbench results show")
    return lines


@click.command("import")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--tool", type=click.Choice(TOOLS), default=None,
              help="The tool that wrote the logs (default: detected from each file's content).")
@tag_option
@click.option("--host", default=None, metavar="NAME",
              help="Host the logs come from, for logs that do not name their hosts.")
@json_option("per imported run, a `measurement` line per result and the `run` record with its status, "
             "errors, `file` and measurement count (with --dry-run only the `run` lines), then a "
             "`summary` with the files that failed and the exit code")
@click.option("--dry-run", is_flag=True, help="Parse and print, but store nothing.")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, metavar="N",
              help="Processes that parse a large nccl-tests text log (one file of 24 MB or more) at once "
                   "(default: 2 where the machine has 2 or more CPUs; the runs are the same with any N).")
@db_option
def import_cmd(paths: tuple[str, ...], tool: str | None, tags: tuple[str, ...], host: str | None,
               as_json: bool, dry_run: bool, jobs: int | None, db: str | None) -> int:
    """Import nccl-tests/rccl-tests, TransferBench, BabelStream, rocblas-bench, hipblaslt-bench,
    perftest, iperf3 -J, OSU and vLLM serving results, and clusterbench's own --json lines
    (PATH '-' reads standard input: kubectl logs POD | clusterbench import -).

    One run is stored per file, or per run when a file holds several (concatenated nccl-tests
    logs). A file is stored whole or not at all, in one transaction (an error, Ctrl-C, SIGTERM or
    a killed process leave none of its runs); a file already imported (same content, --tag,
    --host and --tool) is skipped,
    so an import that was stopped completes when run again. Files that cannot be read are
    listed, the others are still stored. Exit code: 0 when every run imported is complete; 1 when
    a run is failed or incomplete (its log ends early or reports a failed check); 2 when a file
    could not be read or recognised.
    """
    run_tags = parse_tags(tags)
    jobs = jobs or min(2, usable_cores())
    store = None if dry_run else Store.open(db)
    if store is not None:
        # A file is still one atomic transaction, but its commit does not wait for the disk
        store.relax_durability()
    failed: list[dict[str, str]] = []
    skipped: list[dict[str, Any]] = []
    statuses: dict[str, int] = {s: 0 for s in RUN_STATUSES}
    run_ids: list[int] = []
    try:
        for path in paths:
            name = fs_text(path)   # what is stored and printed: a file name need not be UTF-8
            stored: list[int] = []
            counted: dict[str, int] = {}
            once = _read_once(path)
            source, spooled = path, None
            try:
                if store is not None and _streamed(path):
                    source = spooled = _spool(path)
                    once = False
                # a file's identity is known before it is parsed; one read once (standard input,
                # a FIFO) is known once read
                digest = _file_digest(source) if store is not None and not once else hashlib.sha256()
                if store is not None and not once and (before := store.imported_runs(
                        _identity(digest, tool, host, run_tags))):
                    raise _AlreadyImported(before)
                with store.transaction() if store is not None else nullcontext():
                    _import_file(source, tool, host, run_tags, store, dry_run, as_json,
                                 digest if once else None, stored, counted, jobs, name,
                                 stored_name="stdin" if path == "-" else None)
                    if store is not None:
                        # again inside the transaction, where a concurrent import of the same
                        # file (or standard input seen before) is caught and rolled back
                        identity = _identity(digest, tool, host, run_tags)
                        if before := store.imported_runs(identity):
                            raise _AlreadyImported(before)
                        store.note_imported(stored, identity, name)
            except _AlreadyImported as e:
                _not_stored(name, stored, as_json, "the file was imported before")
                skipped.append({"file": name, "runs": e.runs})
                if as_json:
                    emit(note_line(f"{name}: {e}"))
                else:
                    print(printable(f"{name}: {e}"))
                continue
            except ClusterbenchError as e:
                _not_stored(name, stored, as_json)
                failed.append({"file": name, "error": str(e)})
                print(printable(f"clusterbench: error: {name}: {e}"), file=sys.stderr)
                continue
            except BaseException:   # a signal (Ctrl-C, SIGTERM): the file's transaction rolled back
                _not_stored(name, stored, as_json)
                raise
            finally:
                if spooled is not None:
                    os.unlink(spooled)
            run_ids += stored
            for status, n in counted.items():
                statuses[status] += n
    finally:
        if store is not None:
            try:
                store.close()
            except ClusterbenchError:
                if sys.exc_info()[1] is None:  # never instead of the error that ended the import
                    raise
    if failed and len(paths) > 1:
        print(f"clusterbench: error: {len(failed)} of {len(paths)} files not imported", file=sys.stderr)
    code = 2 if failed else (1 if statuses[FAILED] or statuses[INCOMPLETE] or statuses[INTERRUPTED] else 0)
    if as_json:
        emit(summary_line("import", files=len(paths), stored=not dry_run, runs=run_ids, counts=statuses,
                          failed_files=failed, already_imported=skipped, exit_code=code))
    return code


def _not_stored(name: str, stored: list[int], as_json: bool,
                why: str = "a file is stored whole or not at all") -> None:
    """Say that the run ids printed for a file that was then rolled back do not exist."""
    if not stored:
        return
    text = f"{name}: run(s) {_id_ranges(stored)} printed above were not stored: {why}"
    if as_json:
        emit(note_line(text))
    else:
        print(printable(f"# note: {text}"), file=sys.stderr)


def _import_file(path: str, tool: str | None, host: str | None, run_tags: dict[str, str], store: Store | None,
                 dry_run: bool, as_json: bool, digest: Any, stored: list[int], counted: dict[str, int],
                 jobs: int = 1, name: str | None = None, stored_name: str | None = None) -> None:
    """Parse one file and save its runs (in the caller's transaction), printing each as it goes;
    ``name``: the file's name as printed, and as stored unless ``stored_name`` says otherwise
    (standard input read from a temporary copy is stored as ``stdin``, as when read directly)."""
    name = name or path
    if store is None:
        # only the lines printed for each run cross back from a worker process, not its records
        shown = partial(_shown_unstored, name=name, run_tags=run_tags, host=host, as_json=as_json)
        for status, text in _runs_of(path, tool, digest, jobs, name, shown):
            counted[status] = counted.get(status, 0) + 1
            sys.stdout.write(text)
        return
    for item in _runs_of(path, tool, digest, jobs, stored_name or name):
        run = _completed(item.run, run_tags, host)
        stored.append(store.save_run_rows(run, item.store_rows()))
        counted[run.status] = counted.get(run.status, 0) + 1
        extra = dict(file=name, stored=True, measurements=len(item), benchmarks=item.benchmarks())
        if not as_json:
            for text in _summary(name, item, dry_run):
                print(printable(text))
        else:  # streamed: a log of thousands of runs is never held whole
            emit_all(run_objects(run, item.measurements, **extra))


def _completed(run: Run, run_tags: dict[str, str], host: str | None) -> Run:
    """The run with what the import adds: its tags, the command, ``--host``."""
    run.tags.update(run_tags)
    if not run.command:  # only a re-imported clusterbench run has the command it ran
        run.command = command_line()
    if host and not run.hosts:
        run.hosts = [host]
    return run


def _shown_unstored(item: ImportedRun, name: str, run_tags: dict[str, str], host: str | None,
                    as_json: bool) -> tuple[str, str]:
    """A run that is not stored (--dry-run): its status and the text printed for it."""
    run = _completed(item.run, run_tags, host)
    if as_json:
        return run.status, dumps(run_line(run, file=name, stored=False, measurements=len(item),
                                          benchmarks=item.benchmarks())) + "\n"
    return run.status, "".join(printable(text) + "\n" for text in _summary(name, item, True))


commands = [import_cmd]
