"""SQLite: the default backend, one file on this machine.

WAL mode and a busy timeout let several local processes write at once. On a shared file
system WAL is unsafe (its index lives in shared memory that other hosts cannot see), so there
the rollback journal with its file locks is used, and the user is told once that writers on
many hosts belong in PostgreSQL.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from clusterbench.errors import CommittedWhenInterrupted, StoreError
from clusterbench.store import fstype
from clusterbench.store import location as loc
from clusterbench.store.backend import Backend, DbRow
from clusterbench.store.location import EXAMPLE_URL, SQLITE, Location
from clusterbench.store.migrations import MIGRATIONS
from clusterbench.store.warn import warn_once

BUSY_TIMEOUT_S = 30.0
# How long a write waits for another process's write transaction in all. Past the busy timeout it
# says so once and waits on: an import holds the lock for a whole file (``import -`` while its
# input lasts), and a benchmark that gave up after 30 s lost the run it had measured.
WRITE_WAIT_S = 600.0


def _open_retrying(path: Path, mode: str | None, *, retry: bool) -> sqlite3.Connection:
    """A connection to ``path`` in journal ``mode``. Switching a brand-new file to WAL, or
    reading a WAL file another process is switching or recovering, can fail at once with
    "database is locked": SQLite does not call its busy handler there. So when several
    processes open one new database at the same moment (ranks, parallel imports), that is
    retried until the busy timeout, as a lock held by a writer is."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.01
    pragmas = ["PRAGMA foreign_keys = ON", *([f"PRAGMA journal_mode = {mode}"] if mode else [])]
    while True:
        try:
            return _ready(sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None), pragmas)
        except sqlite3.OperationalError as e:
            if not (retry and "locked" in str(e) and time.monotonic() + pause < deadline):
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


def _has_data(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:   # (a dangling link: the open says why)
        return False


def _to_wal(conn: sqlite3.Connection) -> None:
    """Switch an existing database in rollback-journal mode to WAL, if no other process is using
    it right now; otherwise use it as it is (a later opener switches it). The switch needs every
    other connection out: while a writer held the file, a reader (``results list``, a metrics
    scrape) waited the whole busy timeout and then failed with "database is locked", though a
    rollback-journal database reads well beside a writer that has not started to commit."""
    if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
        return
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        conn.execute("PRAGMA journal_mode = WAL")
    except sqlite3.OperationalError as e:
        if "locked" not in str(e) and "busy" not in str(e):
            raise
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")


def _ready(conn: sqlite3.Connection, pragmas: Sequence[str] = ()) -> sqlite3.Connection:
    """``conn`` with its busy timeout and ``pragmas`` set and the schema read once (where a
    locked, unreadable or non-database file shows); closed when any of that fails."""
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        for pragma in pragmas:
            conn.execute(pragma)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def journal_mode(shared: str | None) -> str:
    return "DELETE" if shared else "WAL"


class SqliteBackend(Backend):
    kind = "sqlite"
    errors = (sqlite3.DatabaseError,)
    types = {"serial_pk": "INTEGER PRIMARY KEY AUTOINCREMENT", "ref": "INTEGER", "double": "REAL", "json": "TEXT"}

    def __init__(self, location: Location, conn: sqlite3.Connection) -> None:
        super().__init__(location)
        self.conn = conn
        self._reserved: dict[str, int] = {}   # highest id next_ids gave in this transaction
        self.remove_on_close: Path | None = None   # a temporary copy (``snapshot``)
        # The files opening this database made (a new database and its journals): removed again
        # on close when a write failed before its schema was all there (``_abandoned``).
        self.created: list[Path] = []
        self._write_failed = False

    @classmethod
    def connect(cls, location: Location) -> SqliteBackend:
        path = location.path or Path(location.display)
        memory = str(path) == ":memory:"
        if not memory:
            missing = loc.missing_directory(location)
            if missing is not None:
                raise StoreError(loc.missing_directory_text(location, missing))
            try:
                path.parent.mkdir(parents=True, exist_ok=True)   # the default database's
            except OSError as e:
                raise StoreError(f"cannot create database directory {path.parent}: {e.strerror or e}") from None
            if path.exists() and path.is_dir():
                raise StoreError(f"database path {path} is a directory")
        shared = None if memory else fstype.shared_fs(path)
        # Anything already at one of these names (a database, a link, a journal) is never ours to remove.
        new = [] if memory else [f for f in _files(path) if not os.path.lexists(f)]
        # An existing rollback-journal database (another tool's, or one left on a shared file
        # system) is switched to WAL only when nobody is writing it: see _to_wal.
        switch = not memory and not shared and path not in new and _has_data(path)
        try:
            conn = _open_retrying(path, None if memory or switch else journal_mode(shared), retry=not shared)
            if switch:
                try:
                    _to_wal(conn)
                except BaseException:
                    conn.close()
                    raise
        except sqlite3.DatabaseError as e:
            if path in new and "locked" not in str(e):   # (locked: another process made it meanwhile)
                _remove_new(new)   # a refused open (a full disk) leaves no empty database behind
            why = str(e)
            if shared and "locked" in why:
                # a WAL database cannot leave WAL while another process has it open
                why += f" (it is in WAL mode, unsafe on {shared}: close its other users once)"
            elif _full(e, None if memory else path):
                # opening creates the WAL index and log: on a full disk that is an "I/O error"
                why = f"no space left on the file system holding it{_free_space(path)} ({why})"
            elif not memory and _read_only(path):
                # SQLite only says "unable to open database file" or "attempt to write a readonly
                # database": name the cause and what still works
                why = (f"{path.parent} is on a read-only file system ({why}); commands that only read "
                       "(results, report, compare, validate) still open it")
            raise StoreError(f"cannot open results database {path}: {why}") from None
        except BaseException:   # Ctrl-C while the new file was being set up
            if path in new:
                _remove_new(new)
            raise
        if shared:
            warn_once(f"results database {path} is on {shared}: using SQLite's rollback journal, not WAL "
                      f"(unsafe there); concurrent writers from many hosts belong in PostgreSQL "
                      f"(--db {EXAMPLE_URL})")
        backend = cls(location, conn)
        if path in new:
            backend.created = new
        return backend

    @classmethod
    def connect_readonly(cls, location: Location) -> SqliteBackend:
        """The existing database file at ``location``, opened so that nothing can write to it
        (``mode=ro``): no directory, file or journal mode is created or changed. SQLite may
        still create the ``-wal``/``-shm`` files of a WAL database beside it to read it."""
        path = location.path or Path(location.display)
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            raise StoreError(f"no results database at {location.display}") from None
        except OSError as e:
            raise StoreError(f"cannot open results database {location.display}: {e.strerror or e}") from None
        if stat.S_ISDIR(mode):
            raise StoreError(f"database path {location.display} is a directory")
        if not stat.S_ISREG(mode):   # a FIFO or a device: SQLite would block on it or read junk
            raise StoreError(f"{location.display} is not a results database: not a regular file")
        # a URI, for mode=ro: the path's bytes percent-encoded, so '?', '#' and '%' in a file
        # name, or bytes that are not UTF-8, still name that file
        uri = f"file:{quote(os.fsencode(path.absolute()))}?mode=ro"
        try:
            conn = _open_readonly(uri)
        except sqlite3.DatabaseError as e:
            # A WAL database is read through its -shm file, which SQLite cannot create in a
            # directory nobody may write (a read-only mount, a backup snapshot). With no -wal
            # file beside it every committed run is in the database file itself, and no writer
            # can be using it (it would need those files there): read it as immutable.
            if Path(f"{path}-wal").exists() or os.access(path.parent, os.W_OK):
                raise StoreError(f"cannot open results database {location.display}: {e}") from None
            try:
                conn = _open_readonly(uri + "&immutable=1")
            except sqlite3.DatabaseError as e2:
                raise StoreError(f"cannot open results database {location.display}: {e2}") from None
        return cls(location, conn)

    def snapshot(self) -> SqliteBackend:
        """A writable copy of this database in a temporary file that is removed when the copy
        is closed; messages still name this database."""
        try:
            fd, name = tempfile.mkstemp(prefix="clusterbench-", suffix=".db")
        except OSError as e:
            raise StoreError(f"cannot copy results database {self.location.display} to a temporary file in "
                             f"{tempfile.gettempdir()}: {e.strerror or e}") from None
        os.close(fd)
        tmp = Path(name)
        try:
            target = sqlite3.connect(name)
            try:
                self.conn.backup(target)   # consistent even while another process writes
            finally:
                target.close()
            copy = SqliteBackend.connect(Location(SQLITE, display=self.location.display, path=tmp))
        except sqlite3.DatabaseError as e:
            _remove(tmp)
            why = f"no space left on the file system holding it{_free_space(tmp)} ({e})" if _full(e, tmp) else e
            raise StoreError(f"cannot copy results database {self.location.display} to {tmp}: {why}") from None
        except BaseException:
            _remove(tmp)
            raise
        copy.remove_on_close = tmp
        return copy

    def execute(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, args)

    def executemany(self, sql: str, rows: Iterable[DbRow]) -> None:
        self.conn.executemany(sql, rows)

    @contextmanager
    def write(self) -> Iterator[None]:
        self._begin_write()
        self._reserved.clear()
        committing = False
        try:
            yield
            committing = True
            self.conn.execute("COMMIT")
            self.commits += 1
        except KeyboardInterrupt as e:
            # Python raises a signal's exception only between two steps of Python code, never
            # inside the C call: after COMMIT began, no transaction left means it committed
            if committing and not self.conn.in_transaction:
                if not isinstance(e, CommittedWhenInterrupted):   # (not counted yet)
                    self.commits += 1
                raise CommittedWhenInterrupted(e) from None
            self._write_failed = True
            self._roll_back()
            raise
        except BaseException:
            self._write_failed = True
            # SQLite has already rolled back on some errors (a full disk): rolling back again
            # would replace the real error with "no transaction is active". A rollback that
            # fails itself (an I/O error) must not hide the error that made it necessary either:
            # the journal undoes the transaction when the database is next opened.
            self._roll_back()
            raise

    def _roll_back(self) -> None:
        if self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def _begin_write(self) -> None:
        """BEGIN IMMEDIATE: the write lock is taken now, so a transaction never fails half-way on
        a lock another writer took after our first read. Each try waits the busy timeout; a lock
        held longer is waited for up to ``WRITE_WAIT_S`` (a signal still stops the wait between
        tries), saying so once."""
        start = time.monotonic()
        while True:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                waited = time.monotonic() - start
                if waited >= WRITE_WAIT_S:
                    raise sqlite3.OperationalError(
                        f"{e}: another process held the write lock for {waited:.0f} s (an import holds it "
                        f"for a whole file, one reading standard input until its input ends)") from None
                warn_once(f"results database {self.location.display}: another process holds the write lock "
                          f"(an import holds it for a whole file, one reading standard input until its input "
                          f"ends); waiting up to {WRITE_WAIT_S:.0f} s for it")
                # SQLite answers "locked" at once, without its busy handler, in some states (a WAL
                # file being recovered): never spin on it
                time.sleep(0.05)

    def next_ids(self, table: str, n: int) -> list[int]:
        # The write lock is held (BEGIN IMMEDIATE) until commit: no other writer takes ids
        # meanwhile. AUTOINCREMENT never reuses an id, so start after the highest ever given.
        seq = self.conn.execute("SELECT seq FROM sqlite_sequence WHERE name=?", (table,)).fetchone()
        top = self.conn.execute(f"SELECT max(id) FROM {table}").fetchone()[0]
        first = max(seq[0] if seq else 0, top or 0, self._reserved.get(table, 0)) + 1
        self._reserved[table] = first + n - 1
        return list(range(first, first + n))

    def insert_id(self, table: str, cols: Sequence[str], values: DbRow) -> int:
        cur = self.conn.execute(
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})", values)
        return int(cur.lastrowid)

    def insert_unique(self, table: str, cols: Sequence[str], values: DbRow, unique: str) -> int | None:
        # The write lock is held since BEGIN IMMEDIATE, so look-then-insert cannot race. (Not
        # INSERT OR IGNORE: that would also skip rows failing a CHECK constraint.)
        pos = list(cols).index(unique)
        if self.conn.execute(f"SELECT 1 FROM {table} WHERE {unique}=?", (values[pos],)).fetchone():
            return None
        cur = self.conn.execute(
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})", values)
        return int(cur.lastrowid)

    def upsert(self, table: str, cols: Sequence[str], key: Sequence[str], rows: Iterable[DbRow]) -> None:
        self.conn.executemany(
            f"INSERT OR REPLACE INTO {table} ({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})", rows)

    def table_exists(self, name: str) -> bool:
        return self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() is not None

    def lock_schema(self) -> None:
        pass  # BEGIN IMMEDIATE in write() already excludes every other writer

    def relax_durability(self) -> None:
        # In WAL mode a commit then no longer waits for fsync; each run is still atomic.
        self.conn.execute("PRAGMA synchronous = NORMAL")

    def probe_write(self) -> None:
        # SQLite writes nothing for an UPDATE of no row; setting user_version (no clusterbench
        # reader uses it) to its own value writes the header page: a frame appended to the WAL
        # (or the rollback journal) and committed, which a file that is immutable or read-only
        # refuses, and a full disk has no room for even when a WAL file was left behind
        with self.write():
            (version,) = self.conn.execute("PRAGMA user_version").fetchone()
            self.conn.execute(f"PRAGMA user_version = {int(version)}")

    def describe(self, error: BaseException) -> str:
        text = super().describe(error)
        path = self.location.path
        if _full(error, path):
            return f"no space left on the file system holding it{_free_space(path)} ({text})"
        if "readonly" in text and path is not None:
            if _read_only(path):
                return (f"{path.parent} is on a read-only file system ({text}); commands that only read "
                        "(results, report, compare, validate) still open it")
            if path.exists() and not os.access(path, os.W_OK):
                # as root only an immutable file (chattr +i) refuses this process a write
                return (f"the file cannot be written ({text}): it is read-only or immutable "
                        "(lsattr shows an 'i'); commands that only read still open it")
        return text

    def _abandoned(self) -> bool:
        """Whether the database this connection created is left unready: a write failed (a
        migration of ``Store.open``: a full disk, Ctrl-C), its migrations did not all commit,
        and no other process is migrating or writing it now (it would hold the write lock)."""
        if not (self.created and self._write_failed):
            return False
        conn = self.conn
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.execute("PRAGMA busy_timeout = 0")
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            if "locked" in str(e) or "busy" in str(e):
                return False
        try:
            done = {r[0] for r in conn.execute("SELECT name FROM schema_migrations")}
        except sqlite3.Error as e:
            if "no such table" not in str(e):
                return False   # what it holds cannot be read: it is kept, never guessed empty
            done = set()
        finally:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
        return any(m.name not in done for m in MIGRATIONS)

    def close(self) -> None:
        discard = self._abandoned()
        try:
            self.conn.close()
        finally:
            if self.remove_on_close is not None:
                _remove(self.remove_on_close)
            if discard:
                _remove_new(self.created)


def _open_readonly(uri: str) -> sqlite3.Connection:
    return _ready(sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None))


def _files(path: Path) -> list[Path]:
    """A database file and the journal files SQLite keeps beside it."""
    return [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")]


def _remove(path: Path) -> None:
    """A temporary database file and the journal files SQLite keeps beside it."""
    for f in _files(path):
        f.unlink(missing_ok=True)


def _remove_new(files: list[Path]) -> None:
    """The files opening a new database made; one that cannot be removed (its directory became
    read-only meanwhile) stays: the error that got us here is the one to say."""
    for f in files:
        try:
            f.unlink(missing_ok=True)
        except OSError:
            pass


NEARLY_FULL_BYTES = 1 << 20


def _full(error: BaseException, path: Path | None) -> bool:
    """SQLite's "database or disk is full", or an I/O error on a file system with (next to) no
    space left, which is how a full disk shows while the WAL files are created."""
    if getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(error):
        return True
    if path is None or "disk I/O error" not in str(error):
        return False
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < NEARLY_FULL_BYTES


def _read_only(path: Path) -> bool:
    """Whether the file system holding ``path`` is mounted read-only."""
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _free_space(path: Path | None) -> str:
    """``: 0 bytes free in /mnt/x``, where the file system can say."""
    if path is None:
        return ""
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return ""
    return f": {st.f_bavail * st.f_frsize} bytes free in {path.parent}"
