"""The results store: an embedded SQLite database holding every run with its context.

A run is written in one transaction with all its measurements (and telemetry), so a
crash or a full disk never leaves half a run behind. WAL mode and a busy timeout let
several processes write to one database at once.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterbench.errors import StoreError, UsageError
from clusterbench.records import Measurement, Run
from clusterbench.store.migrations import MIGRATIONS

BUSY_TIMEOUT_S = 30.0


def default_db_path() -> Path:
    env = os.environ.get("CLUSTERBENCH_DB")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "clusterbench" / "results.db"


@dataclass(frozen=True)
class TelemetrySample:
    t: float
    metric: str
    value: float
    unit: str = ""
    host: str = ""
    device: str = ""


def _connect(path: Path) -> sqlite3.Connection:
    if str(path) != ":memory:":
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create database directory {path.parent}: {e.strerror or e}") from None
        if path.exists() and path.is_dir():
            raise StoreError(f"database path {path} is a directory")
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if str(path) != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as e:
        raise StoreError(f"cannot open results database {path}: {e}") from None
    return conn


class Store:
    """Results database. Open with ``Store.open(path)``; use as a context manager."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None) -> Store:
        p = Path(path) if path is not None else default_db_path()
        store = cls(_connect(p), p)
        store.migrate()
        return store

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rollback(self) -> None:
        # SQLite has already rolled back on some errors (a full disk): rolling back again would
        # replace the real error with "no transaction is active".
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    # -- schema -------------------------------------------------------------------------
    def migrate(self) -> None:
        try:
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            done = {r[0] for r in self.conn.execute("SELECT name FROM schema_migrations")}
            for name, sql in MIGRATIONS:
                if name in done:
                    continue
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    # Another process may have applied it while we waited for the lock.
                    if self.conn.execute("SELECT 1 FROM schema_migrations WHERE name=?", (name,)).fetchone():
                        self.conn.execute("COMMIT")
                        continue
                    for stmt in sql.split(";"):
                        if stmt.strip():
                            self.conn.execute(stmt)
                    self.conn.execute(
                        "INSERT INTO schema_migrations VALUES (?, datetime('now'))", (name,)
                    )
                    self.conn.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise
        except sqlite3.DatabaseError as e:
            raise StoreError(f"results database {self.path} is not usable: {e}") from None

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM schema_migrations ORDER BY name")]

    # -- writing ------------------------------------------------------------------------
    def save_run(
        self,
        run: Run,
        measurements: Iterable[Measurement],
        telemetry: Iterable[TelemetrySample] = (),
    ) -> int:
        """Store a run with all its records in one transaction; return its id."""
        rows = ((m.benchmark, m.metric, float(m.value), m.unit, json.dumps(m.params, default=str))
                for m in measurements)
        return self.save_run_rows(run, rows, telemetry)

    def save_run_rows(
        self,
        run: Run,
        rows: Iterable[tuple[str, str, float, str, str]],
        telemetry: Iterable[TelemetrySample] = (),
    ) -> int:
        """``save_run`` with measurements as (benchmark, metric, value, unit, params JSON) rows, for
        producers that serialize a parameter set once and share it (log importers)."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                cur = self.conn.execute(
                    "INSERT INTO runs (benchmark, source, command, started_at, ended_at, status, hosts,"
                    " ranks, devices, versions, env, errors, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        run.benchmark, run.source, json.dumps(run.command), run.started_at,
                        run.ended_at, run.status, json.dumps(run.hosts), run.ranks,
                        json.dumps(run.devices), json.dumps(run.versions), json.dumps(run.env),
                        json.dumps(run.errors), json.dumps(run.meta, default=str),
                    ),
                )
                run_id = int(cur.lastrowid)
                self.conn.executemany(
                    "INSERT INTO run_tags (run_id, key, value) VALUES (?,?,?)",
                    [(run_id, k, str(v)) for k, v in run.tags.items()],
                )
                self.conn.executemany(
                    "INSERT INTO measurements (run_id, benchmark, metric, value, unit, params)"
                    " VALUES (?,?,?,?,?,?)",
                    ((run_id, *row) for row in rows),
                )
                self.conn.executemany(
                    "INSERT INTO telemetry (run_id, t, host, device, metric, value, unit)"
                    " VALUES (?,?,?,?,?,?,?)",
                    ((run_id, s.t, s.host, s.device, s.metric, s.value, s.unit) for s in telemetry),
                )
                self.conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        except sqlite3.DatabaseError as e:
            raise StoreError(f"cannot write to results database {self.path}: {e}") from None
        run.id = run_id
        return run_id

    def delete_run(self, run_id: int) -> None:
        self.get_run(run_id)
        try:
            with self.conn:
                self.conn.execute("BEGIN IMMEDIATE")
                self.conn.execute("DELETE FROM runs WHERE id=?", (run_id,))
        except sqlite3.DatabaseError as e:
            raise StoreError(f"cannot delete run {run_id}: {e}") from None

    def set_tags(self, run_id: int, tags: dict[str, str]) -> None:
        self.get_run(run_id)
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany(
                "INSERT OR REPLACE INTO run_tags (run_id, key, value) VALUES (?,?,?)",
                [(run_id, k, str(v)) for k, v in tags.items()],
            )

    # -- reading ------------------------------------------------------------------------
    def _run_from_row(self, row: sqlite3.Row | tuple[Any, ...]) -> Run:
        (rid, benchmark, source, command, started, ended, status, hosts, ranks, devices,
         versions, env, errors, meta) = row
        tags = dict(self.conn.execute("SELECT key, value FROM run_tags WHERE run_id=? ORDER BY key", (rid,)))
        return Run(
            id=rid, benchmark=benchmark, source=source, command=json.loads(command),
            started_at=started, ended_at=ended, status=status, hosts=json.loads(hosts),
            ranks=ranks, devices=json.loads(devices), versions=json.loads(versions),
            env=json.loads(env), errors=json.loads(errors), meta=json.loads(meta), tags=tags,
        )

    _RUN_COLS = ("id, benchmark, source, command, started_at, ended_at, status, hosts, ranks,"
                 " devices, versions, env, errors, meta")

    def get_run(self, run_id: int) -> Run:
        row = self.conn.execute(f"SELECT {self._RUN_COLS} FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise UsageError(f"no run {run_id} in {self.path}")
        return self._run_from_row(row)

    def list_runs(self, limit: int | None = None, benchmark: str | None = None) -> list[Run]:
        sql = f"SELECT {self._RUN_COLS} FROM runs"
        args: list[Any] = []
        if benchmark:
            sql += " WHERE benchmark=?"
            args.append(benchmark)
        sql += " ORDER BY id DESC"
        if limit:
            sql += " LIMIT ?"
            args.append(limit)
        return [self._run_from_row(r) for r in self.conn.execute(sql, args).fetchall()]

    def runs_with_tags(self, tags: dict[str, str]) -> list[Run]:
        """Runs carrying every given tag (key=value); ordered by id."""
        sql = f"SELECT {self._RUN_COLS} FROM runs WHERE 1=1"
        args: list[Any] = []
        for k, v in tags.items():
            sql += " AND id IN (SELECT run_id FROM run_tags WHERE key=? AND value=?)"
            args += [k, v]
        sql += " ORDER BY id"
        return [self._run_from_row(r) for r in self.conn.execute(sql, args).fetchall()]

    def select(self, selector: str) -> list[Run]:
        """Resolve a selector: a run id (``12``), ``last``, or tag filters (``env=container,node=gpu-07``)."""
        selector = selector.strip()
        if selector.isdigit():
            return [self.get_run(int(selector))]
        if selector == "last":
            runs = self.list_runs(limit=1)
            if not runs:
                raise UsageError(f"no runs in {self.path}")
            return runs
        tags: dict[str, str] = {}
        for part in selector.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise UsageError(f"invalid selector {selector!r}: expected a run id, 'last' or key=value tags")
            tags[key.strip()] = value.strip()
        runs = self.runs_with_tags(tags)
        if not runs:
            raise UsageError(f"selector {selector!r} matches no run")
        return runs

    def measurements(self, run_id: int, benchmark: str | None = None,
                     metric: str | None = None) -> list[Measurement]:
        return list(self.iter_measurements([run_id], benchmark, metric))

    def iter_measurements(self, run_ids: Sequence[int], benchmark: str | None = None,
                          metric: str | None = None) -> Iterator[Measurement]:
        if not run_ids:
            return
        sql = (f"SELECT benchmark, metric, value, unit, params FROM measurements WHERE run_id IN"
               f" ({','.join('?' * len(run_ids))})")
        args: list[Any] = list(run_ids)
        if benchmark:
            sql += " AND benchmark=?"
            args.append(benchmark)
        if metric:
            sql += " AND metric=?"
            args.append(metric)
        sql += " ORDER BY id"
        for b, m, v, u, p in self.conn.execute(sql, args):
            yield Measurement(b, m, v, u, json.loads(p))

    def telemetry(self, run_id: int) -> list[TelemetrySample]:
        rows = self.conn.execute(
            "SELECT t, metric, value, unit, host, device FROM telemetry WHERE run_id=? ORDER BY id",
            (run_id,),
        )
        return [TelemetrySample(*r) for r in rows]
