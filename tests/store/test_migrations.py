"""Tests of clusterbench.store.migrations: named, ordered schema migrations, each applied once in its own transaction."""

import shutil
import sqlite3
from pathlib import Path

import pytest

from clusterbench.cli import main
from clusterbench.records import Measurement, Run
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
        assert not s.db.table_exists("measurements")
        assert s.measurement_counts() == {1: 3, 2: 1}
        assert list(s.measurement_rows(1)) == written[1] and list(s.measurement_rows(2)) == written[2]
        assert [m.value for m in s.measurements(1)] == [315.84, 0.1 + 0.2, 1e-300]
        assert s.measurements(1)[2].params == {"kernel": "Copy", "big": 2**62}


# -- 0010: a rank count no log proved is NULL ------------------------------------------------
GOLDEN = Path(__file__).parent.parent / "data" / "golden" / "pre-redesign.db"


def _unknown_ranks() -> Run:
    return Run(benchmark="import", source="nccl-tests", ranks=None, meta={"tool": "nccl-tests"})


def test_a_run_without_a_rank_count_is_stored_as_null(any_db):
    with Store.open(any_db) as s:
        rid = s.save_run(_unknown_ranks(), [Measurement("all_reduce", "busbw", 1.5, "GB/s", {"ranks": None})])
        got = s.get_run(rid)
        assert got.ranks is None and s.measurements(rid)[0].params == {"ranks": None}
        assert s.get_run(s.save_run(Run(benchmark="coll", ranks=8), [])).ranks == 8


def test_a_database_made_before_the_migration_takes_null(tmp_path):
    path = tmp_path / "old.db"
    shutil.copy(GOLDEN, path)
    before = sqlite3.connect(path).execute("SELECT sql FROM sqlite_master WHERE name='runs'").fetchone()[0]
    assert "ranks       INTEGER NOT NULL" in before
    with Store.open(str(path)) as s:
        old = s.get_run(1)
        rid = s.save_run(_unknown_ranks(), [])
        assert s.get_run(rid).ranks is None and s.get_run(1).ranks == old.ranks
    with sqlite3.connect(path) as db:
        sql = db.execute("SELECT sql FROM sqlite_master WHERE name='runs'").fetchone()[0]
        assert "ranks       INTEGER DEFAULT 0" in sql and db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        # the other columns keep their constraints
        assert sql.count("NOT NULL") == before.count("NOT NULL") - 1


def test_listings_and_reports_print_an_unknown_rank_count(tmp_path, capsys):
    db = str(tmp_path / "r.db")
    with Store.open(db) as s:
        s.save_run(_unknown_ranks(), [Measurement("all_reduce", "busbw", 1.5, "GB/s",
                                                  {"bytes": 8, "placement": "out", "ranks": None})])
    with pytest.raises(SystemExit) as e:
        main(["results", "list", "--db", db])
    assert e.value.code == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[5] == "?"
    with pytest.raises(SystemExit) as e:
        main(["report", "1", "--db", db, "-o", str(tmp_path / "rep.html")])
    assert e.value.code == 0
    assert '<td class="n">?</td>' in (tmp_path / "rep.html").read_text()
    assert "| ? |" in (tmp_path / "rep.md").read_text()
