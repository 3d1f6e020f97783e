"""Standard streams that fail: an output closed by its reader (``| head -1``), full (``> /dev/full``)
or closed before the command started (``>&-``); a closed standard input or error; an output
encoding that cannot hold the text (``PYTHONIOENCODING=ascii``, the C locale).

A measuring command keeps measuring and stores its run when its output fails; it stops printing,
says once which output failed, and ends with ``OUTPUT_FAILED``. Other commands end with the same
one line and code. ``standard_streams`` sets all of this up once, for every command.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from clusterbench.errors import UsageError

# sysexits.h EX_IOERR: an error while doing I/O on a file; not 1 (the thing measured is bad)
# nor 2 (bad input): the results were measured, and stored, only not shown
OUTPUT_FAILED = 74


def stdout_name() -> str:
    """How messages name standard output: with what it is, where the system says (a file, a
    device, a pipe)."""
    if getattr(sys.stdout, "closed_at_start", False):
        return "standard output (closed)"
    try:
        target = os.readlink(f"/proc/self/fd/{sys.stdout.fileno()}")
    except (OSError, ValueError, AttributeError):
        return "standard output"
    if target.startswith("pipe:"):
        return "standard output (a pipe)"
    return f"standard output ({target})"


def why(error: OSError) -> str:
    if error.errno == errno.EPIPE:
        return "its reader closed it (broken pipe)"
    return error.strerror or str(error)


def discard_stdout() -> None:
    """Send what is still to be written to standard output (Python's buffer, later prints, the
    flush at exit) to /dev/null: the output failed once and said so; every later write failing
    again would only add noise, or a traceback at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


class OutputGuard:
    """Printing that stops at the first failure of standard output (``| head -1``, ``> /dev/full``)
    and never ends the work it reports on: a run being stored, a file's transaction being
    committed. ``error`` says what failed; what is still to be printed goes to /dev/null."""

    def __init__(self) -> None:
        self.error: str | None = None

    def __call__(self, show: Callable[..., object], *args: Any) -> None:
        if self.error is not None:
            return
        try:
            show(*args)
        except OSError as e:
            self.error = f"cannot write to {stdout_name()}: {why(e)}"
            discard_stdout()


class WatchedStdout:
    """Standard output, remembering the error a write or flush to it raised: the CLI then tells
    a failed standard output from any other I/O error, wherever in a command it surfaced."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.failed: OSError | None = None

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except OSError as e:
            self.failed = e
            raise

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as e:
            self.failed = e
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class ClosedStdout:
    """Standard output that was closed before the command started (``clusterbench ... >&-``),
    where Python leaves ``sys.stdout`` None and a print is silently dropped: every write fails as
    a write to a closed descriptor does, so the one path for a failed output names it. A command
    that writes nothing succeeds, as ``true >&-`` does."""

    closed_at_start = True
    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return 1


class ClosedStdin:
    """Standard input that was closed before the command started (``<&-``): reading it (``import
    -``) is a one-line usage error, not Python's None."""

    closed_at_start = True
    encoding = "utf-8"

    def _closed(self, *_: Any) -> Any:
        raise UsageError("standard input is closed: nothing to read")

    read = readline = readlines = __iter__ = _closed

    @property
    def buffer(self) -> Any:
        return self._closed()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return 0


class QuietStderr:
    """Standard error for diagnostics only: a note or an error line that cannot be written there
    (``2>/dev/full``, or closed with ``2>&-``) is lost, as Python itself drops a failed flush of
    standard error at exit. The exit code still says how the command ended; a failed write must
    never turn a complete run into exit 1, nor, with ``sys.stderr`` None, send the line to
    standard output (where ``print(file=None)`` writes), among the JSON lines."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is not None:
            with contextlib.suppress(OSError):
                self._stream.write(text)
        return len(text)

    def flush(self) -> None:
        if self._stream is not None:
            with contextlib.suppress(OSError):
                self._stream.flush()

    def isatty(self) -> bool:
        return self._stream is not None and bool(self._stream.isatty())

    def fileno(self) -> int:
        return 2

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def reserve_standard_fds() -> None:
    """Open /dev/null on each of descriptors 0, 1 and 2 that is closed. The kernel gives a new file
    the lowest free number: with 1 closed, the results database would become descriptor 1, and
    whatever writes there (a child process, a library's diagnostics) would write into it."""
    for fd, mode in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            with contextlib.suppress(OSError):
                null = os.open(os.devnull, mode)   # the lowest free number: fd, those below are open
                if null == fd:
                    # Python opens files close-on-exec: a child (a rank, a tool) would start with
                    # the descriptor closed again, and fail as this command did
                    os.set_inheritable(fd, True)
                else:   # one below could not be reserved: put it in place (dup2's copy is inherited)
                    os.dup2(null, fd)
                    os.close(null)


# Error handlers that fail on a character the encoding cannot hold. surrogateescape is what Python
# picks for the C locale without UTF-8 mode: it writes undecodable bytes back, and refuses ``µ``.
_FAILING_HANDLERS = ("strict", "surrogateescape")


def escape_unencodable(stream: Any) -> None:
    """Write each character ``stream``'s encoding cannot hold as its Python escape (``\\xb5``,
    ``\\u2192``), as ``printable`` writes a control character, instead of ending the command with
    an internal UnicodeEncodeError halfway through a table: an ASCII or latin-1 output
    (``PYTHONIOENCODING``, ``LANG=C`` with UTF-8 mode off) and a host named ``nœud``. JSON lines
    are ASCII already (JSON escapes the rest); a handler the user chose (``ascii:replace``) is
    kept."""
    if getattr(stream, "errors", None) in _FAILING_HANDLERS and hasattr(stream, "reconfigure"):
        with contextlib.suppress(OSError, ValueError):
            stream.reconfigure(errors="backslashreplace")


@contextlib.contextmanager
def standard_streams() -> Iterator[WatchedStdout | None]:
    """The process's standard streams made safe for a command, restored after it: closed
    descriptors reserved, a closed standard input or output replaced by one that says so, standard
    output watched (``WatchedStdout``) and escaping what its encoding cannot hold, standard error
    best effort. Streams a caller replaced (a test's capture) are left as they are; the watched
    standard output is yielded (None when left alone)."""
    reserve_standard_fds()
    saved = sys.stdin, sys.stdout, sys.stderr
    if sys.stdin is None:
        sys.stdin = ClosedStdin()  # type: ignore[assignment]
    watched = None
    if sys.stdout is sys.__stdout__:
        real = sys.stdout if sys.stdout is not None else ClosedStdout()
        escape_unencodable(real)
        watched = WatchedStdout(real)
        sys.stdout = watched  # type: ignore[assignment]
    if sys.stderr is sys.__stderr__:
        sys.stderr = QuietStderr(sys.stderr)  # type: ignore[assignment]
    try:
        yield watched
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
