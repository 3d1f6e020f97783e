"""The seam between the store and a database engine.

``Store`` writes its SQL once, with ``?`` placeholders and standard SQL; a ``Backend`` holds
the connection and the few things that differ between SQLite and PostgreSQL: placeholders,
the column types of migrations, how a write transaction takes its lock, inserting a row and
getting its id back, upserts, and how a batch of rows goes in (``insert_rows``: the one place
a bulk path, executemany or COPY, belongs).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from clusterbench.store.location import Location

DbRow = Sequence[Any]


class Backend(ABC):
    kind: str
    conn: Any  # the driver's connection
    # Exception types of the driver: the store turns them into one-line StoreErrors.
    errors: tuple[type[BaseException], ...]
    # Column types that migrations name as ${...} (string.Template), per engine.
    types: Mapping[str, str]

    def __init__(self, location: Location) -> None:
        self.location = location
        # write transactions this connection committed: what a command stopped by a signal
        # reads to say whether its change is in the database (store/runs.py)
        self.commits = 0

    @abstractmethod
    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """Run one statement (``?`` placeholders); the cursor iterates over result tuples."""

    @abstractmethod
    def executemany(self, sql: str, rows: Iterable[DbRow]) -> None:
        """Run one statement per row."""

    def insert_rows(self, table: str, cols: Sequence[str], rows: Iterable[DbRow]) -> None:
        """Insert many rows into ``table``: the bulk path."""
        marks = ",".join("?" * len(cols))
        self.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})", rows)

    @abstractmethod
    def write(self) -> AbstractContextManager[None]:
        """A transaction that holds the write lock from its start, committed at the end of the
        block and rolled back on any exception."""

    @abstractmethod
    def next_ids(self, table: str, n: int) -> list[int]:
        """``n`` ids for rows about to be inserted into ``table`` with explicit ids, that no
        other writer will take. Inside ``write()``."""

    @abstractmethod
    def insert_id(self, table: str, cols: Sequence[str], values: DbRow) -> int:
        """Insert one row and return its ``id``. Inside ``write()``."""

    @abstractmethod
    def insert_unique(self, table: str, cols: Sequence[str], values: DbRow, unique: str) -> int | None:
        """Insert one row and return its ``id``, or None (nothing written) when a row with the
        same value in column ``unique`` exists. Inside ``write()``."""

    @abstractmethod
    def upsert(self, table: str, cols: Sequence[str], key: Sequence[str], rows: Iterable[DbRow]) -> None:
        """Insert rows, replacing the non-key columns of rows whose ``key`` columns match."""

    @abstractmethod
    def table_exists(self, name: str) -> bool: ...

    @abstractmethod
    def lock_schema(self) -> None:
        """Inside ``write()``: keep concurrent openers from migrating at the same time."""

    @abstractmethod
    def relax_durability(self) -> None:
        """Commits still atomic, but not waiting for the disk (bulk imports)."""

    def probe_write(self) -> None:
        """Write and commit a transaction that changes nothing the store reads: where this
        database cannot take a write (a read-only server or file, a disk with no room for the
        journal), the driver's error is raised now, before a command measures what it would
        store. A statement that writes no row still needs write access to the tables."""
        with self.write():
            self.execute("UPDATE schema_migrations SET name = name WHERE 1 = 0")

    def describe(self, error: BaseException) -> str:
        """One line for a driver error."""
        return " ".join(str(error).split())

    @abstractmethod
    def close(self) -> None: ...
