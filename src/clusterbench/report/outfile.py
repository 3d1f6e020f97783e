"""Output files (a report's page, summary and plots, a Prometheus text file, JUnit XML), written so
that a reader never sees half a file and a path that cannot be written is one line naming it.

Each file is written to a temporary file beside it and renamed over it: a reader (node_exporter's
textfile collector, a CI job, a browser) sees the old file or the new one. A rename replaces
whatever the path names, so a path naming anything but a regular file (a device, a FIFO, a
directory) is refused before anything is written, and a symbolic link is written through: the
file it points to is replaced and the link stays. A replaced file keeps its permissions.

A directory written into (a report's ``NAME_plots/``) keeps a list of the files written there,
``.clusterbench-written``: writing it again removes the files the list names that were not
written this time (a figure the report no longer has), and nothing else, so a reader of the
folder never takes an old figure for a current one and a user's own files there stay.
"""

from __future__ import annotations

import itertools
import json
import os
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from clusterbench.errors import UsageError
from clusterbench.printable import printable

Writer = Callable[[Path], None]
# A temporary file's name keeps this many characters (up to 4 bytes each) of the name it stands
# for: a name near the file system's limit (255 bytes) with a prefix and a suffix added would be
# one no file may have.
_TMP_STEM = 40
_serial = itertools.count()
MANIFEST = ".clusterbench-written"   # in a directory written into: the files written there last
_MANIFEST_OF = "clusterbench"        # its "written_by": a file of that name without it is not ours
_MANIFEST_MAX = 1 << 20              # bytes read of it: a report writes a few hundred names


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
        self._dirs: dict[Path, str] = {}                 # directories written into: their labels
        self._written: set[Path] = set()                 # the paths given of the files written

    def add(self, path: str | os.PathLike[str], write: Writer | None = None, what: str = "") -> Path:
        """Check that ``path`` can be written (``target``); with ``write``, write it now."""
        out = Path(path)
        self._files[out] = (target(out, what), _label(out, what))
        if write is not None:
            self.write(out, write)
        return out

    def directory(self, path: str | os.PathLike[str], what: str = "", make: bool = True) -> Path:
        """A directory to write files into, made if missing (removed again, when still empty,
        if the block fails); ``make=False``: only check that it can be. Either way, when the
        block ends without an error, the files written there before (its ``MANIFEST``) that were
        not written this time are removed."""
        out = Path(path)
        label = _label(out, what)
        self._dirs.setdefault(out, label)
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
        self._written.add(Path(path))

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
        # after the renames: a failed block leaves the files of the last one that worked
        for directory, label in self._dirs.items():
            _tidy(directory, label, {p.name for p in self._written if p.parent == directory})

    def _discard(self) -> None:
        for tmp, _, _ in self._staged:
            tmp.unlink(missing_ok=True)
        self._staged = []
        for d in reversed(self._made):
            try:
                d.rmdir()
            except OSError:   # something else was put there meanwhile: leave it
                pass


def _warn(message: str) -> None:
    print(f"clusterbench: warning: {printable(message)}", file=sys.stderr)


def _plain_name(name: object) -> bool:
    """Whether ``name`` names a file in the directory itself: no path, no '..', no dot file (the
    temporary files and the manifest are dot files, written files never are)."""
    return isinstance(name, str) and bool(name) and not name.startswith(".") \
        and "/" not in name and "\0" not in name


def _previous(fd: int, label: str) -> list[str] | None:
    """The names the manifest in the directory ``fd`` lists; [] without one; None (said in one
    line) where a file of its name is not one clusterbench wrote."""
    try:
        mfd = os.open(MANIFEST, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except FileNotFoundError:
        return []
    except OSError as e:   # a link (ELOOP) or unreadable: not ours to trust
        _warn(f"old files in {label} are not removed: cannot read its {MANIFEST}: {_why(e)}")
        return None
    try:
        if not stat.S_ISREG(os.fstat(mfd).st_mode):
            raise ValueError
        with os.fdopen(mfd, "rb", closefd=False) as f:
            raw = f.read(_MANIFEST_MAX + 1)
        if len(raw) > _MANIFEST_MAX:
            raise ValueError
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict) or data.get("written_by") != _MANIFEST_OF \
                or not isinstance(data.get("files"), list):
            raise ValueError
    except (OSError, ValueError):   # UnicodeDecodeError and JSONDecodeError are ValueErrors
        _warn(f"old files in {label} are not removed: its {MANIFEST} is not a list clusterbench wrote")
        return None
    finally:
        os.close(mfd)
    return [n for n in data["files"] if _plain_name(n)]


def _remove_stale(fd: int, label: str, stale: Iterable[str]) -> list[str]:
    """Remove the regular files named ``stale`` from the directory ``fd``; the names that could
    not be removed (said in one line each), to try again next time."""
    kept = []
    for name in stale:
        try:
            # lstat, relative to the directory: a link is never followed out of it
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            continue
        except OSError as e:
            _warn(f"old file {label}/{name} not removed: {_why(e)}")
            kept.append(name)
            continue
        if not stat.S_ISREG(mode):   # something else put there since: not clusterbench's
            _warn(f"old file {label}/{name} not removed: it is no longer a regular file")
            continue
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
        except OSError as e:
            _warn(f"old file {label}/{name} not removed: {_why(e)}")
            kept.append(name)
    return kept


def _save_manifest(fd: int, label: str, names: list[str], had_one: bool) -> None:
    if not names:
        if had_one:
            try:
                os.unlink(MANIFEST, dir_fd=fd)
            except FileNotFoundError:
                pass
            except OSError as e:
                _warn(f"cannot remove {label}/{MANIFEST}: {_why(e)}")
        return
    tmp = f"{MANIFEST}.{os.getpid()}-{next(_serial)}.tmp"
    text = json.dumps({"written_by": _MANIFEST_OF, "files": names}, indent=1) + "\n"
    try:
        wfd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd)
        with os.fdopen(wfd, "w", encoding="utf-8") as f:
            f.write(text)
        os.rename(tmp, MANIFEST, src_dir_fd=fd, dst_dir_fd=fd)
    except OSError as e:
        try:
            os.unlink(tmp, dir_fd=fd)
        except OSError:
            pass
        _warn(f"cannot write {label}/{MANIFEST}: {_why(e)}; files written there now stay when a later "
              "report leaves them out")


def _tidy(directory: Path, label: str, written: set[str]) -> None:
    """Remove from ``directory`` the files its manifest lists and this block did not write,
    then list the ones it wrote. Whatever fails is a warning: the files written are in place."""
    try:
        # a link to a directory is followed, as writing the files did; nothing below it is
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:   # nothing written there, nothing there before
        return
    except OSError as e:
        _warn(f"old files in {label} are not removed: {_why(e)}")
        return
    try:
        previous = _previous(fd, label)
        if previous is None:
            return
        kept = _remove_stale(fd, label, [n for n in dict.fromkeys(previous) if n not in written])
        names = sorted(n for n in written | set(kept) if _plain_name(n))
        _save_manifest(fd, label, names, had_one=_exists(fd, MANIFEST))
    finally:
        os.close(fd)


def _exists(fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return False
    return True
