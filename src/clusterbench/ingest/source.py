"""Where an import's text comes from: a file, a .gz file, a FIFO or standard input, read once or
twice, hashed for its identity, and a pipe copied to a temporary file first.

A file already imported is known by ``identity``: the sha256 of its content (of a .gz file: of
what it holds) with the options that change what is stored. A file that can be read twice is
hashed before it is parsed; one that can be read only once (standard input, a FIFO, ``<(...)``)
is hashed while it is parsed (``runs_of`` with a digest)."""

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
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import IO, Any

from clusterbench.errors import ClusterbenchError
from clusterbench.ingest.common import ImportedRun, LogFormatError


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
        return _HashedText(sys.stdin, digest)  # type: ignore[return-value]
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


def new_digest() -> Any:
    """The hash an import's identity is made of."""
    return hashlib.sha256()


def read_once(path: str) -> bool:
    """Whether ``path`` can be read only once: standard input, a FIFO, a pipe named /dev/fd/N
    (``<(...)``), a device. Such a file is hashed while it is parsed, not read first to hash."""
    if path == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:   # reported when it is opened
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def read_in_parts(path: str, jobs: int) -> bool:
    """Whether the parser of the plain file ``path`` may read it with ``jobs`` worker processes:
    it is as large as the smaller of the parallel readers' thresholds (jsonl_parallel,
    nccl_parallel: which one reads it is known once its head is read)."""
    from clusterbench.ingest import jsonl_parallel, nccl_parallel, workers

    if path == "-" or path.endswith(".gz"):
        return False
    return workers.usable(SimpleNamespace(path=path, jobs=jobs), min(jsonl_parallel.MIN_BYTES, nccl_parallel.MIN_BYTES))


def streamed(path: str) -> bool:
    """Whether ``path`` is a pipe (standard input from ``kubectl logs -f POD |``, a FIFO, ``<(...)``)
    whose writer may keep it open for as long as it likes."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode if path == "-" else os.stat(path).st_mode
    except (OSError, ValueError, AttributeError, ClusterbenchError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def spool(path: str) -> str:
    """A pipe's content copied to a temporary file (named as ``path`` ends, so a .gz stays one),
    whose path is returned: a file is imported in one transaction, which holds the database's
    write lock, and a pipe read inside it held every other writer off (a benchmark finishing
    meanwhile) for as long as its writer kept it open. Endless binary data (``cat /dev/zero |``)
    is refused when its first MiB holds a NUL byte, as the parser refuses binary data from its
    head, not once the disk is full. The caller removes the file."""
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


def file_digest(path: str) -> Any:
    """The sha256 of a file's content (of a .gz file: of what it holds, as imported)."""
    if os.path.isdir(path):
        raise ClusterbenchError("is a directory")
    digest = new_digest()
    try:
        with _open_bytes(path) as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    except (OSError, EOFError) as e:
        raise ClusterbenchError(getattr(e, "strerror", None) or str(e) or "unreadable file") from None
    except zlib.error as e:  # a .gz file whose header is valid and whose data is not
        raise ClusterbenchError(f"corrupt compressed data: {e}") from None
    return digest


def identity(digest: Any, tool: str | None, host: str | None, tags: dict[str, str]) -> str:
    """What makes two imports the same: the content, and the options that change what is stored
    (the same log imported again with other tags or another --host is another import)."""
    options = {**({"tool": tool} if tool else {}), **({"host": host} if host else {}),
               **({"tags": tags} if tags else {})}
    return f"sha256:{digest.hexdigest()}" + (f" {json.dumps(options, sort_keys=True)}" if options else "")


def runs_of(path: str, tool: str | None, digest: Any = None, jobs: int = 1,
            name: str | None = None, prepare: Callable[[ImportedRun], Any] | None = None,
            meanwhile: Callable[[], None] | None = None) -> Iterator[Any]:
    """The runs of the file ``path`` (named ``name`` in what is stored); ``digest``: read it once,
    hashing it as it is parsed (``read_once``); ``prepare``, ``meanwhile``: iter_runs'."""
    # here, not at the top: the package imports this module while it looks for importers,
    # before it has defined iter_runs
    from clusterbench.ingest import iter_runs

    if path == "-":  # e.g. kubectl logs POD | clusterbench import -
        yield from iter_runs(_stdin(digest if digest is not None else new_digest()), tool, name="stdin",
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
                yield from iter_runs(f, tool, name=name, jobs=jobs, path=path, prepare=prepare,
                                     meanwhile=meanwhile)
    except (OSError, EOFError) as e:  # EOFError: a .gz file cut short
        raise ClusterbenchError(getattr(e, "strerror", None) or str(e) or "unreadable file") from None
    except zlib.error as e:  # a .gz file whose header is valid and whose data is not
        raise ClusterbenchError(f"corrupt compressed data: {e}") from None
