"""Named, ordered schema migrations, each applied once in its own transaction.

To change the schema, append a new ``Migration``; never change what one that has shipped does.
SQL is shared by every backend: where engines differ, a migration names a column type as
``${serial_pk}``, ``${ref}`` or ``${double}`` and each backend fills in its own (an SQLite
``INTEGER PRIMARY KEY AUTOINCREMENT`` is a PostgreSQL identity column; SQLite's ``REAL`` is
8 bytes, PostgreSQL's 4, so there it is ``DOUBLE PRECISION``). A step may also be a function
of the backend, for data changes that SQL cannot express the same way on both.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from string import Template
from typing import Any

from clusterbench.store.backend import Backend
from clusterbench.store.packs import pack_rows

Step = str | Callable[[Backend], None]


@dataclass(frozen=True)
class Migration:
    name: str
    steps: tuple[Step, ...]


def new_uid() -> str:
    """The identity of a run everywhere it is copied to."""
    return str(uuid.uuid4())


# Fixed forever: derived uids must come out the same from every clusterbench version.
_DERIVED_UIDS = uuid.UUID("5d0c6a9e-7f0b-4c52-9a57-c1b5e0a3d2f4")


def derived_uid(stored: Sequence[Any]) -> str:
    """A uid for a run stored without one, from its stored columns (its id included): the same
    for the same stored run every time, different for different runs."""
    return str(uuid.uuid5(_DERIVED_UIDS, json.dumps(list(stored), default=str)))


def statements(sql: str, backend: Backend) -> list[str]:
    text = Template(sql).substitute(backend.types)
    return [s for s in text.split(";") if s.strip()]


def _pack_measurements(db: Backend) -> None:
    """Move every run's rows of ``measurements`` into one ``rows`` pack, in their order."""
    run_ids = [r[0] for r in db.execute("SELECT DISTINCT run_id FROM measurements ORDER BY run_id").fetchall()]
    for run_id in run_ids:
        rows = db.execute("SELECT benchmark, metric, value, unit, params FROM measurements WHERE run_id=?"
                          " ORDER BY id", (run_id,)).fetchall()
        pack = pack_rows((b, m, float(v), u, p) for b, m, v, u, p in rows)
        db.execute("INSERT INTO measurement_packs (run_id, format, count, body) VALUES (?, ?, ?, ?)",
                   (run_id, pack.format, pack.count, pack.body))


_STATUS_CHECK = "CHECK (status IN ('complete', 'incomplete', 'failed'))"
_STATUS_CHECK_WIDE = "CHECK (status IN ('complete', 'incomplete', 'failed', 'interrupted'))"


def _allow_interrupted(db: Backend) -> None:
    """Widen the ``runs.status`` check by ``interrupted`` (a run stopped by a signal).

    PostgreSQL replaces the constraint. SQLite cannot alter a CHECK, and rebuilding ``runs``
    would cascade-delete every measurement (its children reference it); a CHECK that only
    accepts more values does not change what is stored, so the table's SQL text is edited in
    place, the procedure SQLite's ALTER TABLE documentation gives for exactly this (section
    "Making Other Kinds Of Table Schema Changes"), inside this migration's transaction."""
    if db.kind != "sqlite":
        db.execute("ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_status_check")
        db.execute(f"ALTER TABLE runs ADD CONSTRAINT runs_status_check {_STATUS_CHECK_WIDE}")
        return
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name='runs'").fetchone()
    if _STATUS_CHECK_WIDE in sql:
        return
    if _STATUS_CHECK not in sql:
        raise db.errors[0](f"unexpected runs table, cannot widen its status check: {sql}")
    (version,) = db.execute("PRAGMA schema_version").fetchone()
    db.execute("PRAGMA writable_schema = ON")
    try:
        db.execute("UPDATE sqlite_master SET sql=? WHERE type='table' AND name='runs'",
                   (sql.replace(_STATUS_CHECK, _STATUS_CHECK_WIDE),))
        # other connections re-read the schema when its version changes
        db.execute(f"PRAGMA schema_version = {int(version) + 1}")
    finally:
        db.execute("PRAGMA writable_schema = OFF")


def _backfill_uids(db: Backend) -> None:
    ids = [r[0] for r in db.execute("SELECT id FROM runs WHERE uid IS NULL").fetchall()]
    db.executemany("UPDATE runs SET uid=? WHERE id=?", [(new_uid(), i) for i in ids])


def _widen_ranks(db: Backend) -> None:
    """``runs.ranks`` as a 64-bit integer, as every other count and id is: PostgreSQL's INTEGER
    is 32 bits (SQLite's already holds 64), so a run SQLite stored could not be copied there."""
    if db.kind != "sqlite":
        db.execute("ALTER TABLE runs ALTER COLUMN ranks TYPE BIGINT")


_RANKS_NOT_NULL = re.compile(r"\branks(\s+)INTEGER\s+NOT\s+NULL", re.IGNORECASE)


def _ranks_nullable(db: Backend) -> None:
    """``runs.ranks`` may be NULL: an imported log that does not prove its rank count stores
    none rather than 0 (docs/import.md). PostgreSQL drops the constraint; SQLite's table SQL is
    edited in place, as ``_allow_interrupted`` does (dropping a NOT NULL is one of the changes
    SQLite's ALTER TABLE documentation allows that way: nothing stored becomes invalid)."""
    if db.kind != "sqlite":
        db.execute("ALTER TABLE runs ALTER COLUMN ranks DROP NOT NULL")
        return
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name='runs'").fetchone()
    if not _RANKS_NOT_NULL.search(sql):
        return   # already nullable
    (version,) = db.execute("PRAGMA schema_version").fetchone()
    db.execute("PRAGMA writable_schema = ON")
    try:
        db.execute("UPDATE sqlite_master SET sql=? WHERE type='table' AND name='runs'",
                   (_RANKS_NOT_NULL.sub(r"ranks\1INTEGER", sql, count=1),))
        db.execute(f"PRAGMA schema_version = {int(version) + 1}")
    finally:
        db.execute("PRAGMA writable_schema = OFF")


MIGRATIONS: list[Migration] = [
    Migration("0001_runs_and_measurements", ("""
        CREATE TABLE runs (
            id          ${serial_pk},
            benchmark   TEXT NOT NULL,
            source      TEXT NOT NULL DEFAULT '',
            command     TEXT NOT NULL DEFAULT '[]',
            started_at  TEXT NOT NULL,
            ended_at    TEXT,
            status      TEXT NOT NULL CHECK (status IN ('complete', 'incomplete', 'failed')),
            hosts       TEXT NOT NULL DEFAULT '[]',
            ranks       INTEGER NOT NULL DEFAULT 0,
            devices     TEXT NOT NULL DEFAULT '[]',
            versions    TEXT NOT NULL DEFAULT '{}',
            env         TEXT NOT NULL DEFAULT '{}',
            errors      TEXT NOT NULL DEFAULT '[]',
            meta        TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE run_tags (
            run_id  ${ref} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            key     TEXT NOT NULL,
            value   TEXT NOT NULL,
            PRIMARY KEY (run_id, key)
        );
        CREATE INDEX run_tags_kv ON run_tags(key, value);
        CREATE TABLE measurements (
            id         ${serial_pk},
            run_id     ${ref} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            benchmark  TEXT NOT NULL,
            metric     TEXT NOT NULL,
            value      ${double} NOT NULL,
            unit       TEXT NOT NULL,
            params     TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX measurements_run ON measurements(run_id);
        CREATE INDEX measurements_bm ON measurements(benchmark, metric);
        """,)),
    Migration("0002_telemetry", ("""
        CREATE TABLE telemetry (
            id      ${serial_pk},
            run_id  ${ref} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            t       ${double} NOT NULL,
            host    TEXT NOT NULL DEFAULT '',
            device  TEXT NOT NULL DEFAULT '',
            metric  TEXT NOT NULL,
            value   ${double} NOT NULL,
            unit    TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX telemetry_run ON telemetry(run_id);
        """,)),
    # Every query selects measurements by run first; the (benchmark, metric) index only cost
    # about a quarter of the insert time of a large import.
    Migration("0003_drop_measurements_bm_index", ("DROP INDEX IF EXISTS measurements_bm",)),
    # A run's identity across databases (``results copy`` skips runs whose uid is there).
    # Runs written before this get one now; new runs get theirs when they are saved.
    Migration("0004_run_uid", (
        "ALTER TABLE runs ADD COLUMN uid TEXT",
        _backfill_uids,
        "CREATE UNIQUE INDEX runs_uid ON runs(uid)",
    )),
    # What each run measured (its distinct benchmark names), kept at write time: selectors and
    # ``results list`` ask it without reading a run's measurements, and without an index on
    # measurements that would slow every insert of a large import.
    Migration("0005_run_benchmarks", ("""
        CREATE TABLE run_benchmarks (
            run_id     ${ref} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            benchmark  TEXT NOT NULL,
            PRIMARY KEY (run_id, benchmark)
        );
        CREATE INDEX run_benchmarks_benchmark ON run_benchmarks(benchmark);
        INSERT INTO run_benchmarks (run_id, benchmark) SELECT DISTINCT run_id, benchmark FROM measurements
        """,)),
    # Measurements in packs (store/packs.py): one row per run instead of one per measurement,
    # which made storing large imports slow. Existing rows move into one pack per run.
    Migration("0006_measurement_packs", ("""
        CREATE TABLE measurement_packs (
            id      ${serial_pk},
            run_id  ${ref} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            format  TEXT NOT NULL,
            count   INTEGER NOT NULL,
            body    TEXT NOT NULL
        );
        CREATE INDEX measurement_packs_run ON measurement_packs(run_id)
        """,
        _pack_measurements,
        "DROP TABLE measurements",
    )),
    # A run stopped by a signal keeps the rows measured before it, marked for what it is.
    Migration("0007_run_status_interrupted", (_allow_interrupted,)),
    # Which file (by content digest) each imported run came from: an import of one file is one
    # transaction, and importing the same file again finds its runs here instead of storing
    # them twice. Deleting the runs forgets the file.
    Migration("0008_imported_files", ("""
        CREATE TABLE imported_files (
            run_id  ${ref} NOT NULL PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
            digest  TEXT NOT NULL,
            name    TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX imported_files_digest ON imported_files(digest);
        """,)),
    Migration("0009_runs_ranks_bigint", (_widen_ranks,)),
    # An imported run whose log does not prove its rank count stores NULL, not 0.
    Migration("0010_runs_ranks_nullable", (_ranks_nullable,)),
]
