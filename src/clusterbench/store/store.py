"""The results store: every run with its context, in SQLite (the default, one file) or
PostgreSQL (one database a whole cluster writes to).

A run is written in one transaction with all its measurements (and telemetry), so a crash,
a killed writer or a full disk never leaves half a run behind. Engine differences live in
``Backend`` (``store/backend.py``): ``sqlite.py`` and ``postgres.py``; the SQL here is shared.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any, TypeVar

from clusterbench import collector
from clusterbench.errors import StoreError, UsageError
from clusterbench.records import Measurement, Run, TelemetrySample
from clusterbench.store import location as loc
from clusterbench.store.backend import Backend
from clusterbench.store.batch import Batch
from clusterbench.store.headlines import RunHeadlines
from clusterbench.store.headlines import derive as derive_headlines
from clusterbench.store.migrations import MIGRATIONS, new_uid, statements
from clusterbench.store.nul import refuse_nul, refuse_nul_in_run, refuse_nul_in_tags
from clusterbench.store.open import connect
from clusterbench.store.packs import (
    Keep,
    MeasurementRow,
    Pack,
    Packs,
    UnreadablePack,
    measurements_of,
    packs_to_store,
    param_values,
    rows_of,
)
from clusterbench.store.run_columns import (
    RUN_COLS,
    RUN_WRITE_COLS,
    UID_COLS,
    read_field,
    read_text,
    run_values,
    uid_of_row,
)
from clusterbench.store.selector_sql import filters, nul_in_selector
from clusterbench.store.selectors import MAX_RUN_ID, Selector, bench_filter, parse_selector

_T = TypeVar("_T")


def _id_list(ids: Sequence[int]) -> str:
    """Run ids for a message: a few, then how many more."""
    shown = ",".join(map(str, ids[:5]))
    return shown if len(ids) <= 5 else f"{shown} and {len(ids) - 5} more"


class Store:
    """Results database. Open with ``Store.open(path_or_url)``; use as a context manager."""

    def __init__(self, db: Backend) -> None:
        self.db = db
        self._batch: Batch | None = None   # inside transaction(): runs join it, written in bulk
        self.location = db.location
        self.where = db.location.display          # for messages: never a password
        self.path = db.location.path              # SQLite file, None for PostgreSQL

    @classmethod
    def open(cls, db: str | os.PathLike[str] | None = None, create: bool = True) -> Store:
        """Open (and migrate) the database ``db`` names: a path, ``sqlite:///PATH`` or
        ``postgresql://...``; None: ``CLUSTERBENCH_DB`` or the default file. ``create=False``:
        a missing SQLite file is an error instead of a new database."""
        where = loc.parse(db)
        if not create and where.kind == loc.SQLITE and where.path and not where.path.is_file():
            raise StoreError(f"no results database at {where.display}: nothing is stored there yet "
                             "(check --db or CLUSTERBENCH_DB)")
        store = cls(connect(where))
        try:
            store.migrate()
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def open_to_read(cls, db: str | os.PathLike[str] | None = None) -> Store:
        """``open``, for a command that only reads; where this process cannot write the SQLite
        file or its directory (a read-only mount, a backup snapshot, another user's file), the
        database is read as ``open_readonly`` reads it: opening for writing would fail there
        (a WAL database's -shm file cannot be made), though reading needs none of it. A missing
        SQLite file is an error, never made: a mistyped ``--db`` would read as an empty database
        and leave a stray file behind."""
        try:
            return cls.open(db, create=False)
        except StoreError:
            where = loc.parse(db)
            path = where.path
            if where.kind != loc.SQLITE or path is None or not path.is_file() \
                    or (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
                raise
        return cls.open_readonly(db)

    @classmethod
    def open_readonly(cls, db: str | os.PathLike[str] | None) -> Store:
        """Open the existing database ``db`` names only to read it (``results copy --from``):
        nothing is created, migrated or written there; a missing database, or one that is not
        clusterbench's, is an error.

        A database of an older schema is read through a migrated copy, so that one set of
        queries reads every schema. SQLite: the file is copied (SQLite's backup, consistent
        even while another process writes it) to a temporary file, removed when the store
        closes. PostgreSQL: a shared server's schema is not this command's to change, and a
        copy of a server database is not cheap, so it is refused with the way to migrate it."""
        store = cls(connect(loc.parse(db), readonly=True))
        try:
            pending = store._pending_migrations()
            if pending:
                store = store._migrated_copy()
        except BaseException:
            store.close()
            raise
        return store

    def _pending_migrations(self) -> list[str]:
        """The migrations this database lacks; an error if it is not a clusterbench database, or
        one of a newer clusterbench."""
        db = self.db
        try:
            if not db.table_exists("schema_migrations"):   # every clusterbench database has it
                raise StoreError(f"{self.where} is not a clusterbench results database")
            done = {r[0] for r in db.execute("SELECT name FROM schema_migrations").fetchall()}
        except db.errors as e:
            raise StoreError(f"results database {self.where} is not usable: {db.describe(e)}") from None
        self._refuse_newer(done)
        return [m.name for m in MIGRATIONS if m.name not in done]

    def _migrated_copy(self) -> Store:
        """This (read-only, older) database migrated in a temporary copy; closes this one."""
        from clusterbench.store.sqlite import SqliteBackend

        if not isinstance(self.db, SqliteBackend):
            raise StoreError(f"results database {self.where} has an older schema than this clusterbench "
                             f"and is only read here: migrate it first by opening it once, e.g. "
                             f"clusterbench results list --db {self.where}")
        try:
            had_uids = any(r[1] == "uid" for r in self.db.execute("PRAGMA table_info(runs)"))
        except self.db.errors as e:
            raise StoreError(f"results database {self.where} is not usable: {self.db.describe(e)}") from None
        copy = Store(self.db.snapshot())
        self.close()
        try:
            copy.migrate()
            if not had_uids:
                # The migration gave every run a random uid, a new one each time this file is
                # copied: without one, uids() derives the same uid for a run on every copy.
                with copy.db.write():
                    copy.db.execute("UPDATE runs SET uid=NULL")
        except copy.db.errors as e:
            copy.close()
            raise StoreError(f"results database {self.where} is not usable: {copy.db.describe(e)}") from None
        except BaseException:
            copy.close()
            raise
        return copy

    @property
    def conn(self) -> Any:
        """The driver's connection (sqlite3 or psycopg), for engine-specific work."""
        return self.db.conn

    def close(self) -> None:
        try:
            self.db.close()
        except self.db.errors as e:
            raise StoreError(f"cannot close results database {self.where}: {self.db.describe(e)}") from None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            self.close()
        except StoreError:
            if exc is None:  # closing must not hide the error that ended the block
                raise

    def check_writable(self) -> None:
        """A StoreError now where this database cannot take a write (an immutable or read-only
        file, a full disk that still holds a WAL file, a read-only server): opening it succeeds
        there, and the run a command measured would be lost when it is stored."""
        try:
            self.db.probe_write()
        except self.db.errors as e:
            raise StoreError(f"cannot write to results database {self.where}: {self.db.describe(e)}") from None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Store every run saved inside the block in one transaction: all of them or none (an
        import of one file); also much faster than a commit per run."""
        if self._batch is not None:
            yield
            return
        try:
            with self.db.write():
                self._batch = Batch(self.db)
                try:
                    yield
                    self._batch.flush()
                finally:
                    self._batch = None
        except self.db.errors as e:
            raise StoreError(f"cannot write to results database {self.where}: {self.db.describe(e)}") from None

    def relax_durability(self) -> None:
        """Commits stay atomic but stop waiting for the disk: for storing many runs at once."""
        try:
            self.db.relax_durability()
        except self.db.errors as e:
            raise StoreError(f"results database {self.where}: {self.db.describe(e)}") from None

    # -- schema -------------------------------------------------------------------------
    def migrate(self) -> None:
        db = self.db
        try:
            if db.table_exists("schema_migrations"):
                done = {r[0] for r in db.execute("SELECT name FROM schema_migrations").fetchall()}
                self._refuse_newer(done)
                if all(m.name in done for m in MIGRATIONS):
                    return  # the common case: no write, no lock
            for m in MIGRATIONS:
                with db.write():
                    db.lock_schema()
                    db.execute("CREATE TABLE IF NOT EXISTS schema_migrations"
                               " (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
                    # Another process may have applied it while we waited for the lock.
                    if db.execute("SELECT 1 FROM schema_migrations WHERE name=?", (m.name,)).fetchone():
                        continue
                    for step in m.steps:
                        if isinstance(step, str):
                            for stmt in statements(step, db):
                                db.execute(stmt)
                        else:
                            step(db)
                    db.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                               (m.name, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())))
        except db.errors as e:
            raise StoreError(f"results database {self.where} is not usable: {db.describe(e)}") from None

    def _refuse_newer(self, done: set[str]) -> None:
        """A database holding a migration this version does not know was written by a newer
        clusterbench: this one would misread or break what it stores, so it stops here, before
        any benchmark runs (commands open their store first)."""
        unknown = sorted(done - {m.name for m in MIGRATIONS})
        if unknown:
            from clusterbench import __version__

            raise StoreError(f"results database {self.where} was written by a newer clusterbench: its schema "
                             f"is {unknown[-1]}, this clusterbench {__version__} knows schemas up to "
                             f"{MIGRATIONS[-1].name}; upgrade clusterbench (or use another --db)")

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT name FROM schema_migrations ORDER BY name")]

    # -- writing ------------------------------------------------------------------------
    def imported_runs(self, digest: str) -> list[int]:
        """The runs stored from the file whose content digest is ``digest`` (none: not imported)."""
        return [r[0] for r in self._query("SELECT run_id FROM imported_files WHERE digest=? ORDER BY run_id",
                                          (digest,))]

    def note_imported(self, run_ids: Sequence[int], digest: str, name: str) -> None:
        """Record that ``run_ids`` came from the file ``name`` with content ``digest``; inside
        the import's ``transaction``, so runs and file identity commit together."""
        try:
            with nullcontext() if self._batch is not None else self.db.write():
                if self._batch is not None:
                    self._batch.flush()   # the runs first: the rows below refer to them
                self.db.insert_rows("imported_files", ("run_id", "digest", "name"),
                                    [(rid, digest, name) for rid in run_ids])
        except self.db.errors as e:
            raise StoreError(f"cannot write to results database {self.where}: {self.db.describe(e)}") from None

    def save_run(
        self,
        run: Run,
        measurements: Iterable[Measurement],
        telemetry: Iterable[TelemetrySample] = (),
    ) -> int:
        """Store a run with all its records in one transaction; return its id."""
        rows = ((m.benchmark, m.metric, float(m.value), m.unit, m.params) for m in measurements)
        return self._save(run, rows, telemetry)

    def save_run_rows(
        self,
        run: Run,
        rows: Iterable[MeasurementRow],
        telemetry: Iterable[TelemetrySample] = (),
    ) -> int:
        """``save_run`` with measurements as (benchmark, metric, value, unit, params JSON) rows, or
        as ``Packs`` a producer packed already (log importers: ``ImportedRun.store_rows``)."""
        return self._save(run, rows, telemetry)

    def _save(self, run: Run, rows: Iterable[Any] | Packs, telemetry: Iterable[TelemetrySample]) -> int:
        run_id = self._write_run(run, new_uid(), rows, telemetry, fresh=True)
        assert run_id is not None  # a fresh uuid4 is never taken
        return run_id

    def imported_file_of(self, run_id: int) -> tuple[str, str] | None:
        """The identity (content digest) and name of the file the run was imported from, as
        ``note_imported`` recorded them; None for a run that was measured, or read once."""
        rows = self._query("SELECT digest, name FROM imported_files WHERE run_id=?", (run_id,))
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def add_copied_run(self, run: Run, uid: str, rows: Iterable[MeasurementRow] | Packs,
                       telemetry: Iterable[TelemetrySample] = (),
                       imported_from: tuple[str, str] | None = None) -> int | None:
        """Store a run from another database under its uid; None (nothing written) when a run
        with that uid is here already. ``imported_from``: the (digest, name) of the file it was
        imported from (``imported_file_of``), so importing that file here again is skipped as it
        is where the run was imported."""
        return self._write_run(run, uid, rows, telemetry, imported_from=imported_from)

    def _write_run(self, run: Run, uid: str, rows: Iterable[Any] | Packs,
                   telemetry: Iterable[TelemetrySample], fresh: bool = False,
                   imported_from: tuple[str, str] | None = None) -> int | None:
        db = self.db
        # the headline records are kept as the rows are packed, or read from a producer's packs
        found = RunHeadlines(run)
        if isinstance(rows, Packs) and rows.decoded is not None:
            found.take(rows.decoded, rows.params)   # what the producer decoded: no pack is read again
        packs = packs_to_store(rows if isinstance(rows, Packs) else found.tap(rows))
        telemetry = list(telemetry)
        refuse_nul_in_run(run, uid, telemetry)
        for text in imported_from or ():
            refuse_nul(text, f"imported file {text!r}")
        values = run_values(run, uid)
        try:
            if self._batch is not None and fresh:
                run_id = self._batch.add(values, run.tags, packs, telemetry, found)
            else:
                with nullcontext() if self._batch is not None else db.write():
                    if self._batch is not None:
                        self._batch.flush()   # earlier runs first: this one may refer to them
                    if fresh:   # a new uuid4: no run has it, no need to look
                        run_id = db.insert_id("runs", RUN_WRITE_COLS, values)
                    else:
                        run_id = db.insert_unique("runs", RUN_WRITE_COLS, values, unique="uid")
                    if run_id is None:
                        return None
                    Batch.write_rows(db, run_id, run.tags, packs, telemetry, found)
                    if imported_from is not None:
                        db.insert_rows("imported_files", ("run_id", "digest", "name"), [(run_id, *imported_from)])
        except db.errors as e:
            raise StoreError(f"cannot write to results database {self.where}: {db.describe(e)}") from None
        except UnreadablePack as e:
            raise StoreError(f"run not stored in {self.where}: unreadable measurements: {e}") from None
        run.id = run_id
        return run_id

    def delete_runs(self, run_ids: Sequence[int]) -> None:
        """Delete the runs, with everything stored with them, in one transaction: all of them
        or none (a failed write, Ctrl-C), never the first half of a range."""
        ids = self._existing(run_ids)
        try:
            with self.db.write():
                for chunk in self._chunks(ids):
                    self.db.execute(f"DELETE FROM runs WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        except self.db.errors as e:
            what = f"run {ids[0]}" if len(ids) == 1 else f"runs {_id_list(ids)}"
            raise StoreError(f"cannot delete {what} from {self.where}: {self.db.describe(e)}") from None

    def _existing(self, run_ids: Sequence[int]) -> list[int]:
        """``run_ids`` once each, in order, or a UsageError naming the first that is not stored:
        a write over several runs checks them all before it changes any."""
        ids = list(dict.fromkeys(int(r) for r in run_ids))
        found = {rid for chunk in self._chunks(ids) for (rid,) in self._query(
            f"SELECT id FROM runs WHERE id IN ({','.join('?' * len(chunk))})", chunk)}
        missing = [rid for rid in ids if rid not in found]
        if missing:
            raise UsageError(f"no run {missing[0]} in {self.where}")
        return ids

    def _chunks(self, ids: Sequence[int]) -> Iterator[list[int]]:
        # ids out of the engines' range match no run: never bound (SQLite overflows on them)
        ids = [rid for rid in ids if 0 <= rid <= MAX_RUN_ID]
        for i in range(0, len(ids), self._CHUNK):
            yield ids[i:i + self._CHUNK]

    def tag_runs(self, run_ids: Sequence[int], tags: dict[str, str]) -> None:
        """Add or change ``tags`` on every run of ``run_ids``, in one transaction: all of them
        or none."""
        refuse_nul_in_tags(tags)
        ids = self._existing(run_ids)
        try:
            with self.db.write():
                self.db.upsert("run_tags", ("run_id", "key", "value"), ("run_id", "key"),
                               [(rid, k, str(v)) for rid in ids for k, v in tags.items()])
                if "node" in tags:   # the host a run's values without a host param belong to
                    for chunk in self._chunks(ids):
                        self.db.execute(f"DELETE FROM headlines WHERE run_id IN ({','.join('?' * len(chunk))})", chunk)
                    derive_headlines(self.db, ids)
        except self.db.errors as e:
            what = f"run {ids[0]}" if len(ids) == 1 else f"runs {_id_list(ids)}"
            raise StoreError(f"cannot tag {what} in {self.where}: {self.db.describe(e)}") from None

    # -- reading ------------------------------------------------------------------------
    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return list(self.db.execute(sql, args).fetchall())
        except self.db.errors as e:
            raise StoreError(f"cannot read results database {self.where}: {self.db.describe(e)}") from None

    def _stream(self, sql: str, args: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        try:
            yield from self.db.execute(sql, args)
        except self.db.errors as e:
            raise StoreError(f"cannot read results database {self.where}: {self.db.describe(e)}") from None

    # Runs per ``IN (...)`` query of a batched read: few round trips, far below every engine's
    # limit on bound parameters (SQLite's was 999 before 3.32).
    _CHUNK = 500

    def _runs_from_rows(self, rows: list[tuple[Any, ...]]) -> list[Run]:
        # One tag query per few hundred runs, not one per run: each is a round trip to a server.
        tags: dict[int, dict[str, str]] = {r[0]: {} for r in rows}
        ids = list(tags)
        for i in range(0, len(ids), self._CHUNK):
            chunk = ids[i:i + self._CHUNK]
            for rid, key, value in self._query(
                    f"SELECT run_id, key, value FROM run_tags WHERE run_id IN ({','.join('?' * len(chunk))})",
                    chunk):
                tags[rid][read_text(key)] = read_text(value)
        # keys in code point order, sorted here: ORDER BY would follow the database's collation,
        # which on PostgreSQL is its locale's ("_x, a, B" in en_US, "B, _x, a" in C and SQLite)
        tags = {rid: dict(sorted(found.items())) for rid, found in tags.items()}
        return [
            Run(id=rid, benchmark=read_text(benchmark), source=read_text(source),
                command=self._field(rid, "command", command), started_at=read_text(started),
                ended_at=None if ended is None else read_text(ended), status=read_text(status),
                hosts=self._field(rid, "hosts", hosts),
                ranks=ranks, devices=self._field(rid, "devices", devices),
                versions=self._field(rid, "versions", versions), env=self._field(rid, "env", env),
                errors=self._field(rid, "errors", errors), meta=self._field(rid, "meta", meta), tags=tags[rid])
            for (rid, benchmark, source, command, started, ended, status, hosts, ranks, devices,
                 versions, env, errors, meta) in rows
        ]

    def _field(self, run_id: int, name: str, text: Any) -> Any:
        return read_field(self.where, run_id, name, text)

    def non_text_tags(self) -> dict[int, tuple[str, Any]]:
        """Per run, a tag whose key or value is stored as something other than text (SQLite
        keeps any type in any column: ``x'ff00'`` put in by hand), as stored; runs read show
        it escaped (``read_text``). A PostgreSQL text column holds only text."""
        if self.db.kind != "sqlite":
            return {}
        found: dict[int, tuple[str, Any]] = {}
        for rid, key, value in self._query("SELECT run_id, key, value FROM run_tags "
                                           "WHERE typeof(key) != 'text' OR typeof(value) != 'text'"):
            found.setdefault(int(rid), (read_text(key), value))
        return found

    def get_run(self, run_id: int) -> Run:
        if not 0 <= run_id <= MAX_RUN_ID:
            raise UsageError(f"no run {run_id} in {self.where}")
        rows = self._query(f"SELECT {RUN_COLS} FROM runs WHERE id=?", (run_id,))
        if not rows:
            raise UsageError(f"no run {run_id} in {self.where}")
        return self._runs_from_rows(rows)[0]

    def runs_by_ids(self, run_ids: Sequence[int]) -> list[Run]:
        """The runs of these ids that are stored, in id order, one query per ``_CHUNK`` ids."""
        rows: list[tuple[Any, ...]] = []
        for chunk in self._chunks(sorted(set(int(r) for r in run_ids))):
            rows += self._query(f"SELECT {RUN_COLS} FROM runs WHERE id IN ({','.join('?' * len(chunk))})"
                                " ORDER BY id", chunk)
        return self._runs_from_rows(rows)

    def list_runs(self, limit: int | None = None, benchmark: str | None = None,
                  oldest_first: bool = False, since: str | None = None) -> list[Run]:
        """Runs, newest first; ``benchmark``: only runs that measured it (``bench:NAME`` of the
        selector grammar: a benchmark, a family or an import's tool); ``since``: ``--since``."""
        # ``is not None``: an empty name is refused (bench_filter), as the selector ``bench:`` is
        sel = Selector("", benchmarks=(bench_filter(benchmark),)) if benchmark is not None else Selector("")
        if self._cannot_match(sel):
            return []
        where, args = filters(sel, since)
        sql = f"SELECT {RUN_COLS} FROM runs WHERE {where}"
        sql += " ORDER BY id" if oldest_first else " ORDER BY id DESC"
        if limit:
            sql += " LIMIT ?"
            args.append(limit)
        return self._runs_from_rows(self._query(sql, args))

    def iter_list_runs(self, limit: int | None = None, benchmark: str | None = None, since: str | None = None,
                       chunk: int = _CHUNK) -> Iterator[list[Run]]:
        """``list_runs``' runs, newest first, ``chunk`` at a time: a listing of a million runs
        holds one chunk (each read after the last one's smallest id)."""
        sel = Selector("", benchmarks=(bench_filter(benchmark),)) if benchmark is not None else Selector("")
        if self._cannot_match(sel):
            return iter(())
        return self._list_chunks(sel, since, limit, chunk)

    def _list_chunks(self, sel: Selector, since: str | None, limit: int | None, chunk: int) -> Iterator[list[Run]]:
        where, args = filters(sel, since)
        left = limit
        below: int | None = None
        while left is None or left > 0:
            n = chunk if left is None else min(chunk, left)
            more = [] if below is None else [below]
            rows = self._query(f"SELECT {RUN_COLS} FROM runs WHERE {where}"
                               + ("" if below is None else " AND id < ?") + " ORDER BY id DESC LIMIT ?",
                               [*args, *more, n])
            if not rows:
                return
            yield self._runs_from_rows(rows)
            below = int(rows[-1][0])
            left = None if left is None else left - len(rows)
            if len(rows) < n:
                return

    def runs_with_tags(self, tags: dict[str, str]) -> list[Run]:
        """Runs carrying every given tag (key=value); ordered by id."""
        if self._cannot_match(Selector("", tags=dict(tags))):
            return []
        where, args = filters(Selector("", tags=dict(tags)), None)
        return self._runs_from_rows(self._query(f"SELECT {RUN_COLS} FROM runs WHERE {where} ORDER BY id",
                                                args))

    def select(self, selector: str | Selector, since: str | None = None) -> list[Run]:
        """The runs a selector picks (``clusterbench.store.selectors``), in id order; ``since``:
        an ISO timestamp (``parse_since``). A selector that picks nothing is a UsageError."""
        sel = parse_selector(selector) if isinstance(selector, str) else selector
        return self._runs_from_rows(self._selected(sel, since, RUN_COLS))

    def select_ids(self, selectors: Iterable[str | Selector], since: str | None = None) -> list[int]:
        """The ids of every run any of the selectors picks, in id order, without reading the runs:
        ``results delete`` removes a run whose stored fields no longer read (a database edited by
        hand, or copied from one)."""
        ids: set[int] = set()
        for selector in selectors:
            sel = parse_selector(selector) if isinstance(selector, str) else selector
            ids.update(int(rid) for (rid,) in self._selected(sel, since, "id"))
        return sorted(ids)

    def _selected(self, sel: Selector, since: str | None, cols: str) -> list[tuple[Any, ...]]:
        where, args = filters(sel, since)
        sql = f"SELECT {cols} FROM runs WHERE {where}"
        if sel.last is not None:
            sql += " ORDER BY id DESC LIMIT 1 OFFSET ?"
            args.append(sel.last)
        else:
            sql += " ORDER BY id"
        rows = [] if self._cannot_match(sel) else self._query(sql, args)
        if not rows:
            window = f" since {since}" if since else ""
            if sel.text == "last" and not self._query("SELECT 1 FROM runs LIMIT 1"):
                raise UsageError(f"no runs in {self.where}")
            if sel.text == str(sel.ids[0] if sel.ids else "") and not since:
                raise UsageError(f"no run {sel.text} in {self.where}")
            raise UsageError(f"selector {sel.text!r} matches no run{window} in {self.where}")
        return rows

    def select_all(self, selectors: Iterable[str | Selector], since: str | None = None) -> list[Run]:
        """Every run any of the selectors picks, once each, in id order."""
        runs: dict[int, Run] = {}
        for sel in selectors:
            for r in self.select(sel, since):
                runs.setdefault(int(r.id or 0), r)
        return [runs[i] for i in sorted(runs)]

    def _cannot_match(self, sel: Selector) -> bool:
        """Whether ``sel`` names a tag or benchmark with a NUL where no run can hold one: a
        PostgreSQL database, which would refuse the query itself. (An SQLite file written before
        such runs were refused may hold one: it is looked up there.)"""
        return self.location.kind != loc.SQLITE and nul_in_selector(sel)

    def run_benchmarks(self, run_ids: Sequence[int]) -> dict[int, list[str]]:
        """What each run measured: its distinct benchmark names, sorted."""
        found: dict[int, list[str]] = {rid: [] for rid in run_ids}
        ids = list(found)
        for i in range(0, len(ids), self._CHUNK):
            chunk = ids[i:i + self._CHUNK]
            for rid, bench in self._query(
                    f"SELECT run_id, benchmark FROM run_benchmarks WHERE run_id IN ({','.join('?' * len(chunk))})",
                    chunk):
                found[rid].append(bench)
        for benches in found.values():   # in code point order on every engine, as the tags above
            benches.sort()
        return found

    def measurement_counts(self, run_ids: Sequence[int] | None = None) -> dict[int, int]:
        """Measurements per run id (runs without any are left out); ``run_ids``: only those runs'
        (``results list`` shows 50 of a database of thousands)."""
        if run_ids is None:
            return {rid: int(n) for rid, n in self._query(
                "SELECT run_id, sum(count) FROM measurement_packs GROUP BY run_id") if n}
        counts: dict[int, int] = {}
        ids = list(dict.fromkeys(run_ids))
        for i in range(0, len(ids), self._CHUNK):
            chunk = ids[i:i + self._CHUNK]
            counts.update((rid, int(n)) for rid, n in self._query(
                f"SELECT run_id, sum(count) FROM measurement_packs WHERE run_id IN ({','.join('?' * len(chunk))})"
                " GROUP BY run_id", chunk) if n)
        return counts

    def uids(self) -> dict[str, int]:
        """Every run's uid and its id here."""
        found = dict(self._query("SELECT uid, id FROM runs WHERE uid IS NOT NULL"))
        found.update((uid_of_row(row), row[1]) for row in self._query(
            f"SELECT {UID_COLS} FROM runs WHERE uid IS NULL"))
        return found

    def uid_of(self, run_id: int) -> str:
        rows = self._query(f"SELECT {UID_COLS} FROM runs WHERE id=?", (run_id,))
        if not rows:
            raise UsageError(f"no run {run_id} in {self.where}")
        return uid_of_row(rows[0])

    def measurements(self, run_id: int, benchmark: str | None = None,
                     metric: str | None = None) -> list[Measurement]:
        return list(self.iter_measurements([run_id], benchmark, metric))

    def measurement_rows(self, run_id: int) -> Iterator[MeasurementRow]:
        """A run's measurements as stored (params as JSON text), in order."""
        for p in self.measurement_packs(run_id).packs:
            yield from rows_of(p.format, p.body)

    def measurement_packs(self, run_id: int) -> Packs:
        """A run's measurements as stored, still packed: for copying them to another store."""
        return Packs([Pack(f, int(n), body) for f, n, body in self._query(
            "SELECT format, count, body FROM measurement_packs WHERE run_id=? ORDER BY id", (run_id,))])

    def iter_measurements(self, run_ids: Sequence[int], benchmark: str | None = None,
                          metric: str | None = None) -> Iterator[Measurement]:
        """The runs' measurements, in the order they were stored (a run's in its order)."""
        if not run_ids:
            return
        sql = (f"SELECT format, body FROM measurement_packs WHERE run_id IN ({','.join('?' * len(run_ids))})"
               " ORDER BY id")
        for fmt, body in self._stream(sql, list(run_ids)):
            for m in self._unpacked(fmt, body):
                if (benchmark is None or m.benchmark == benchmark) and (metric is None or m.metric == metric):
                    yield m

    def measurements_by_run(self, run_ids: Sequence[int], keep: Keep | None = None,
                            shared: bool = False) -> dict[int, list[Measurement]]:
        """Each run's measurements, as ``measurements(run_id)`` gives them, read with one query per
        ``_CHUNK`` runs: a command that judges thousands of runs must not pay a round trip each.
        ``keep`` and ``shared`` as ``packs.measurements_of``: the records a judgement wants, made
        as each pack is decoded (one pack's text held at a time, never every run's records)."""
        found: dict[int, list[Measurement]] = {int(rid): [] for rid in run_ids}
        with collector.paused():   # records and their params: hundreds of thousands, no cycle
            for rid, fmt, body in self._packs_of(list(found)):
                found[int(rid)] += self._unpacked(fmt, body, keep, shared)
        return found

    def param_values_by_run(self, run_ids: Sequence[int], key: str) -> dict[int, list[Any]]:
        """Per run, the distinct values of the param ``key`` over all its records, in the order
        they first come (None for records without it): what ``measured_on`` needs of the records
        a judgement did not keep (the devices a baseline's runs were measured on), without making
        them. Values that are lists or objects are kept once per record set they come in."""
        found: dict[int, list[Any]] = {int(rid): [] for rid in run_ids}
        seen: dict[int, set[Any]] = {rid: set() for rid in found}
        for rid, fmt, body in self._packs_of(list(found)):
            values, done = found[int(rid)], seen[int(rid)]
            for v in self._decoded(param_values, fmt, body, key):
                mark = (type(v), v) if isinstance(v, (str, int, float, bool)) or v is None else None
                if mark is None or mark not in done:
                    if mark is not None:
                        done.add(mark)
                    values.append(v)
        return found

    def _packs_of(self, ids: list[int]) -> Iterator[tuple[Any, str, str]]:
        """(run id, format, body) of the runs' packs in the order stored, ``_CHUNK`` runs a query."""
        for i in range(0, len(ids), self._CHUNK):
            chunk = ids[i:i + self._CHUNK]
            sql = (f"SELECT run_id, format, body FROM measurement_packs WHERE run_id IN"
                   f" ({','.join('?' * len(chunk))}) ORDER BY id")
            yield from self._stream(sql, chunk)

    def _unpacked(self, fmt: str, body: str, keep: Keep | None = None, shared: bool = False) -> list[Measurement]:
        """One pack's measurements, or a StoreError saying why they cannot be read."""
        return self._decoded(measurements_of, fmt, body, keep, shared)

    def _decoded(self, read: Callable[..., Iterable[_T]], *args: Any) -> list[_T]:
        """What ``read(*args)`` decodes of a pack, or a StoreError saying why it cannot be read."""
        try:
            return list(read(*args))
        except (ValueError, KeyError, TypeError) as e:
            raise StoreError(f"results database {self.where}: unreadable measurements: {e}") from None
        except RecursionError:   # params nested thousands deep: Python's parser gives up
            raise StoreError(f"results database {self.where}: unreadable measurements: nested more than "
                             f"{sys.getrecursionlimit()} levels deep") from None

    def telemetry(self, run_id: int) -> list[TelemetrySample]:
        rows = self._query("SELECT t, metric, value, unit, host, device FROM telemetry WHERE run_id=?"
                           " ORDER BY id", (run_id,))
        return [TelemetrySample(*r) for r in rows]

    def telemetry_by_run(self, run_ids: Sequence[int]) -> dict[int, list[TelemetrySample]]:
        """Each run's telemetry, as ``telemetry(run_id)`` gives it, one query per ``_CHUNK`` runs."""
        found: dict[int, list[TelemetrySample]] = {int(rid): [] for rid in run_ids}
        ids = list(found)
        for i in range(0, len(ids), self._CHUNK):
            chunk = ids[i:i + self._CHUNK]
            for rid, *sample in self._query(
                    f"SELECT run_id, t, metric, value, unit, host, device FROM telemetry WHERE run_id IN"
                    f" ({','.join('?' * len(chunk))}) ORDER BY id", chunk):
                found[int(rid)].append(TelemetrySample(*sample))
        return found
