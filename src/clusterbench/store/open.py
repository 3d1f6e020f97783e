"""Where a results database is and how it is opened: the default file, the name messages give
it, and the engine's connection (``Store.open`` migrates it)."""

from __future__ import annotations

import os
from pathlib import Path

from clusterbench.store import location as loc
from clusterbench.store.backend import Backend
from clusterbench.store.location import Location
from clusterbench.store.warn import warn_once


def default_db_path() -> Path:
    """The SQLite file used when no ``--db`` is given: ``CLUSTERBENCH_DB`` when that is a path."""
    where = loc.parse(os.environ.get("CLUSTERBENCH_DB"))
    return where.path if where.kind == loc.SQLITE and where.path else loc.default_db_path()


def describe(db: str | os.PathLike[str] | None) -> str:
    """How messages name a database: its path, or its URL without the password."""
    return loc.parse(db).display


def connect(where: Location, readonly: bool = False) -> Backend:
    """An open connection to the database at ``where``, not migrated (``Store.open`` migrates);
    ``readonly``: to an existing database, through a connection that cannot write to it."""
    if where.kind == loc.POSTGRESQL:
        from clusterbench.store.postgres import PostgresBackend

        if where.has_password:
            warn_once("the database URL holds a password, which shows in process lists and shell "
                      "history: put it in a passfile (--db-passfile FILE or PGPASSFILE)")
        return PostgresBackend.connect_readonly(where) if readonly else PostgresBackend.connect(where)
    from clusterbench.store.sqlite import SqliteBackend

    return SqliteBackend.connect_readonly(where) if readonly else SqliteBackend.connect(where)
