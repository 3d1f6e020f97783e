"""Tests of clusterbench.store.migrations: named, ordered schema migrations, each applied once in its own transaction."""

import pytest

from clusterbench.records import Run
from clusterbench.store import Store
from clusterbench.store.migrations import MIGRATIONS


@pytest.fixture
def db(any_db):
    return any_db


def _old_database(db, n_runs):
    """A database as the previous release left it: migrations 0001-0003 applied, runs without uid."""
    from clusterbench.store import connect, location
    from clusterbench.store.migrations import statements

    backend = connect(location.parse(db))
    with backend.write():
        backend.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        for m in MIGRATIONS[:3]:
            for step in m.steps:
                for stmt in statements(step, backend):
                    backend.execute(stmt)
            backend.execute("INSERT INTO schema_migrations VALUES (?, ?)", (m.name, "2024-01-01 00:00:00"))
        for i in range(n_runs):
            backend.execute("INSERT INTO runs (benchmark, started_at, status) VALUES (?, ?, 'complete')",
                            (f"b{i}", "2024-01-01T00:00:00Z"))
    backend.close()


def test_uid_migration_backfills_existing_runs(db):
    _old_database(db, 4)
    with Store.open(db) as s:
        assert "0004_run_uid" in s.applied_migrations()
        uids = s.uids()
        assert len(uids) == 4 and None not in uids and sorted(uids.values()) == [1, 2, 3, 4]
        first = dict(uids)
    with Store.open(db) as s:
        assert s.uids() == first  # stable: backfilled once, not on every open
        s.save_run(Run(benchmark="new"), [])
        assert len(s.uids()) == 5


def test_packs_migration_keeps_every_measurement_in_order(db):
    """0005 moves the one-row-per-measurement table of older databases into packs: the records
    read back are the ones written, in their order, on both engines."""
    _old_database(db, 2)
    from clusterbench.store import connect, location

    written = {1: [("all_reduce", "busbw", 315.84, "GB/s", '{"bytes": 8, "placement": "in"}'),
                   ("all_reduce", "time_us", 0.1 + 0.2, "us", '{"bytes": 8, "placement": "in"}'),
                   ("stream", "bandwidth", 1e-300, "GB/s", '{"kernel": "Copy", "big": 4611686018427387904}')],
               2: [("x", "y", -0.0, "", "{}")]}
    backend = connect(location.parse(db))
    with backend.write():
        for run_id in (2, 1):   # interleaved ids: order within a run is by measurement id
            for row in written[run_id]:
                backend.execute("INSERT INTO measurements (run_id, benchmark, metric, value, unit, params)"
                                " VALUES (?, ?, ?, ?, ?, ?)", (run_id, *row))
    backend.close()
    with Store.open(db) as s:
        assert "0006_measurement_packs" in s.applied_migrations()
        # the table is gone; ``measurements`` is the view over the packs now (0010)
        assert s.db.execute("SELECT count(*) FROM measurement_packs").fetchone()[0] == 2
        assert s.db.execute("SELECT count(*) FROM measurements").fetchone()[0] == 4
        assert s.measurement_counts() == {1: 3, 2: 1}
        assert list(s.measurement_rows(1)) == written[1] and list(s.measurement_rows(2)) == written[2]
        assert [m.value for m in s.measurements(1)] == [315.84, 0.1 + 0.2, 1e-300]
        assert s.measurements(1)[2].params == {"kernel": "Copy", "big": 2**62}
