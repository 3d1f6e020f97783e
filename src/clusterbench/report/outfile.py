"""Output files (a report's page, summary and plots, a Prometheus text file, JUnit XML), written so
that a reader never sees half a file and a path that cannot be written is one line naming it.

Each file is written to a temporary file beside it and renamed over it: a reader (node_exporter's
textfile collector, a CI job, a browser) sees the old file or the new one. A rename replaces
whatever the path names, so a path naming anything but a regular file (a device, a FIFO, a
directory) is refused before anything is written, and a symbolic link is written through: the
file it points to is replaced and the link stays. A replaced file keeps its permissions.
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Callable
from pathlib import Path

from clusterbench.errors import UsageError

Writer = Callable[[Path], None]
# A temporary file's name keeps this many characters (up to 4 bytes each) of the name it stands
# for: a name near the file system's limit (255 bytes) with a prefix and a suffix added would be
# one no file may have.
_TMP_STEM = 40
_serial = itertools.count()


def _label(path: Path, what: str) -> str:
    return f"{what} {path}" if what else str(path)


def _why(e: OSError) -> str:
    return e.strerror or str(e)


def _mode(path: Path, label: str, doing: str = "write") -> int | None:
    """``path``'s mode (following links), None where nothing is there; a UsageError where it
    cannot be looked up (a name too long, a component that is a file, a loop of links)."""
    try:
        return path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as e:
        raise UsageError(f"cannot {doing} {label}: {_why(e)}") from None


def _writable_dir(directory: Path, label: str) -> None:
    """A UsageError unless new files can be made in ``directory``."""
    mode = _mode(directory, label)
    if mode is None or not stat.S_ISDIR(mode):
        raise UsageError(f"cannot write {label}: directory {directory} does not exist")
    try:
        read_only = bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        raise UsageError(f"cannot write {label}: {directory} is on a read-only file system")
    if not os.access(directory, os.W_OK):
        raise UsageError(f"cannot write {label}: directory {directory} is not writable")


def target(path: str | os.PathLike[str], what: str = "") -> Path:
    """The file that writing ``path`` replaces: ``path`` itself, or the file a symbolic link
    there points to. A UsageError naming ``path`` when that is not a regular file (or nothing
    yet) in a directory that can be written; ``what`` names the file in messages (``--junit``)."""
    out = Path(path)
    label = _label(out, what)
    real = Path(os.path.realpath(out))
    mode = _mode(real, label)
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError(f"cannot write {label}: it is a directory")
    if mode is not None and not stat.S_ISREG(mode):
        what_it_is = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        raise UsageError(f"cannot write {label}: it is {what_it_is}, not a regular file")
    _writable_dir(real.parent, label)
    return real


def _stage(real: Path, label: str, write: Writer) -> Path:
    """Write through ``write`` to a temporary file beside ``real``; return that file."""
    tmp = real.with_name(f".{real.name[:_TMP_STEM]}.{os.getpid()}-{next(_serial)}.tmp")
    try:
        write(tmp)
        if real.exists():
            os.chmod(tmp, stat.S_IMODE(real.stat().st_mode))
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write {label}: {_why(e)}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def write_text(path: str | os.PathLike[str], text: str, what: str = "") -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; return the file written."""
    with Outputs() as out:
        out.add(path, lambda p: p.write_text(text, encoding="utf-8"), what)
    return Path(path)


class Outputs:
    """Files written together, all or none: every path is checked when added (``add``), each
    file is written to a temporary file when its content is given (``write``), and all are
    renamed into place when the block ends without an error. On an error the temporary files,
    and directories this made that are still empty, are removed."""

    def __init__(self) -> None:
        self._files: dict[Path, tuple[Path, str]] = {}   # the path given: (file replaced, label)
        self._staged: list[tuple[Path, Path, str]] = []  # (temporary file, file replaced, label)
        self._made: list[Path] = []

    def add(self, path: str | os.PathLike[str], write: Writer | None = None, what: str = "") -> Path:
        """Check that ``path`` can be written (``target``); with ``write``, write it now."""
        out = Path(path)
        self._files[out] = (target(out, what), _label(out, what))
        if write is not None:
            self.write(out, write)
        return out

    def directory(self, path: str | os.PathLike[str], what: str = "", make: bool = True) -> Path:
        """A directory to write files into, made if missing (removed again, when still empty,
        if the block fails); ``make=False``: only check that it can be."""
        out = Path(path)
        label = _label(out, what)
        mode = _mode(out, label, "make directory")
        if mode is not None and stat.S_ISDIR(mode):
            return out
        if mode is not None or out.is_symlink():
            raise UsageError(f"cannot make directory {label}: a file of that name exists")
        _writable_dir(out.parent, label)
        if not make:
            return out
        try:
            out.mkdir()
        except OSError as e:
            raise UsageError(f"cannot make directory {label}: {_why(e)}") from None
        self._made.append(out)
        return out

    def write(self, path: str | os.PathLike[str], write: Writer) -> None:
        """Write the file ``path`` (added before) through ``write(temporary_path)``."""
        real, label = self._files[Path(path)]
        # written again (two paths, one file): the last content wins, as it would in place
        self._staged = [s for s in self._staged if s[1] != real]
        self._staged.append((_stage(real, label, write), real, label))

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc is None:
            self._commit()
        else:
            self._discard()

    def _commit(self) -> None:
        for i, (tmp, real, label) in enumerate(self._staged):
            try:
                os.replace(tmp, real)
            except OSError as e:
                self._staged = self._staged[i:]
                self._discard()
                raise UsageError(f"cannot write {label}: {_why(e)}") from None
        self._staged = []

    def _discard(self) -> None:
        for tmp, _, _ in self._staged:
            tmp.unlink(missing_ok=True)
        self._staged = []
        for d in reversed(self._made):
            try:
                d.rmdir()
            except OSError:   # something else was put there meanwhile: leave it
                pass
