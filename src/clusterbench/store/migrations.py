"""Named, ordered schema migrations, each applied once in its own transaction.

To change the schema, append a new ``(name, sql)`` pair; never edit one that has shipped.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_runs_and_measurements",
        """
        CREATE TABLE runs (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
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
            run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            key     TEXT NOT NULL,
            value   TEXT NOT NULL,
            PRIMARY KEY (run_id, key)
        );
        CREATE INDEX run_tags_kv ON run_tags(key, value);
        CREATE TABLE measurements (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            benchmark  TEXT NOT NULL,
            metric     TEXT NOT NULL,
            value      REAL NOT NULL,
            unit       TEXT NOT NULL,
            params     TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX measurements_run ON measurements(run_id);
        CREATE INDEX measurements_bm ON measurements(benchmark, metric);
        """,
    ),
    (
        "0002_telemetry",
        """
        CREATE TABLE telemetry (
            id      INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            t       REAL NOT NULL,
            host    TEXT NOT NULL DEFAULT '',
            device  TEXT NOT NULL DEFAULT '',
            metric  TEXT NOT NULL,
            value   REAL NOT NULL,
            unit    TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX telemetry_run ON telemetry(run_id);
        """,
    ),
    (
        # Every query selects measurements by run first; the (benchmark, metric) index only cost
        # about a quarter of the insert time of a large import.
        "0003_drop_measurements_bm_index",
        "DROP INDEX IF EXISTS measurements_bm",
    ),
]
