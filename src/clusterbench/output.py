"""Standard output that fails: closed by its reader (``| head -1``) or full (``> /dev/full``).

A measuring command keeps measuring and stores its run when its output fails; it stops printing,
says once which output failed, and ends with ``OUTPUT_FAILED``. Other commands end with the same
one line and code.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

# sysexits.h EX_IOERR: an error while doing I/O on a file; not 1 (the thing measured is bad)
# nor 2 (bad input): the results were measured, and stored, only not shown
OUTPUT_FAILED = 74


def stdout_name() -> str:
    """How messages name standard output: with what it is, where the system says (a file, a
    device, a pipe)."""
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
