"""A writer held inside its COMMIT, for tests of a signal that comes as a transaction commits.

In SQLite's rollback-journal mode a COMMIT needs the file to itself: it takes the PENDING lock
(from then on no new reader gets in) and waits for the readers there are. A test that holds a
read transaction open keeps another process's writer inside its COMMIT for as long as it likes,
and sees that it is there: the writer holds the PENDING lock byte as a write lock. A database in
that mode stays in it while someone reads it (clusterbench switches it to WAL only when nobody
uses it), so the command under test commits this way.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import struct
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from process_helpers import wait_until

# SQLite's lock bytes (os_unix.c): a writer in its COMMIT holds PENDING_BYTE as a write lock (a
# reader takes it as a read lock, for a moment, to get its shared lock)
PENDING_BYTE = 0x40000000
_FLOCK = "@hhqqi"   # struct flock: l_type, l_whence, l_start, l_len, l_pid


def rollback_journal(db: Path) -> None:
    """Switch the database (nobody else using it) to the rollback journal."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        assert conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    finally:
        conn.close()


class HeldCommit:
    """The read lock that holds a writer in its COMMIT, and the question whether one is there."""

    def __init__(self, db: Path) -> None:
        # One descriptor for the whole hold: closing any descriptor of a file drops every POSIX
        # lock this process has on it, the reader's too
        self._fd = os.open(db, os.O_RDONLY)
        self._reader = sqlite3.connect(db, isolation_level=None)
        self._reader.execute("BEGIN")
        self._reader.execute("SELECT count(*) FROM sqlite_master").fetchone()   # the SHARED lock, held

    def writer_at_commit(self) -> bool:
        """Whether another process holds the PENDING lock as a writer does in its COMMIT. Asked
        of the kernel (F_GETLK), not through SQLite: a connection of this process would be let
        in under the read lock this process holds, without asking."""
        query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, PENDING_BYTE, 1, 0)
        return struct.unpack(_FLOCK, fcntl.fcntl(self._fd, fcntl.F_GETLK, query))[0] == fcntl.F_WRLCK

    def wait_for_commit(self, proc: subprocess.Popen, within: float = 120) -> None:
        """Until ``proc`` is inside its COMMIT."""
        wait_until(lambda: proc.poll() is not None or self.writer_at_commit(), within,
                   "the writer reached its COMMIT")
        assert proc.poll() is None, "the writer ended before its COMMIT"

    def release(self) -> None:
        self._reader.execute("ROLLBACK")
        self._reader.close()
        os.close(self._fd)


@contextmanager
def commit_held(db: Path) -> Iterator[HeldCommit]:
    """A read transaction on ``db`` for the block: a writer that reaches its COMMIT waits there
    until the block ends."""
    held = HeldCommit(db)
    try:
        yield held
    finally:
        held.release()
