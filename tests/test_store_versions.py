"""Issue 18: a database written by a newer clusterbench is refused when it is opened, before
any benchmark runs, naming both schema versions; the ``interrupted`` status migration widens the
status check on both engines, including databases made by earlier versions."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from clusterbench.errors import StoreError
from clusterbench.records import INTERRUPTED, RUN_STATUSES, Measurement, Run
from clusterbench.store import Store
from clusterbench.store.migrations import MIGRATIONS

FUTURE = "9999_from_a_newer_clusterbench"
GOLDEN = Path(__file__).parent / "data" / "golden" / "pre-redesign.db"


def _make_newer(db: str) -> None:
    with Store.open(db) as store:
        with store.db.write():
            store.db.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                             (FUTURE, "2099-01-01 00:00:00"))


def test_newer_database_is_refused_on_open(any_db):
    _make_newer(any_db)
    with pytest.raises(StoreError) as e:
        Store.open(any_db)
    text = str(e.value)
    assert "newer clusterbench" in text and FUTURE in text and MIGRATIONS[-1].name in text


def _cb(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clusterbench", *argv], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("argv", [
    ("coll", "all_reduce", "-b", "8", "-e", "8", "--np", "2", "--device", "cpu"),
    ("coll", "all_reduce", "-b", "8", "-e", "8", "--np", "2", "--device", "cpu", "--repeat", "3"),
    ("stream", "-s", "1K", "-n", "2", "--device", "cpu"),
    ("sweep", "--hosts", "n1,n2", "--agent", "false", "--", "net"),
    ("qualify", "--profile", "cpu-smoke"),
], ids=lambda a: " ".join(a[:2]) + (" --repeat" if "--repeat" in a else ""))
def test_benchmark_commands_refuse_before_running(tmp_path, argv):
    db = str(tmp_path / "newer.db")
    _make_newer(db)
    p = _cb(argv[0], "--db", db, *argv[1:])
    assert p.returncode == 2, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("clusterbench: error: results database"), p.stderr
    assert FUTURE in lines[0] and MIGRATIONS[-1].name in lines[0]
    assert p.stdout == ""  # no table header, no step, no node: nothing ran
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_import_refuses_a_newer_database(tmp_path):
    db = str(tmp_path / "newer.db")
    _make_newer(db)
    log = next((Path(__file__).parent / "data" / "nccl-tests").glob("*.txt"))
    p = _cb("import", str(log), "--db", db)
    assert p.returncode == 2 and "newer clusterbench" in p.stderr and p.stdout == ""


def test_interrupted_runs_store_on_every_engine(any_db):
    assert INTERRUPTED in RUN_STATUSES
    with Store.open(any_db) as store:
        assert "0007_run_status_interrupted" in store.applied_migrations()
        rid = store.save_run(Run(benchmark="coll", status=INTERRUPTED),
                             [Measurement("all_reduce", "busbw", 1.0, "GB/s", {"bytes": 8})])
        assert store.get_run(rid).status == INTERRUPTED
        with pytest.raises(StoreError):  # the check still refuses what is not a status
            store.save_run(Run(benchmark="coll", status="exploded"), [])
        assert [r.status for r in store.list_runs()] == [INTERRUPTED]


def test_an_old_sqlite_database_is_migrated_in_place(tmp_path):
    db = tmp_path / "old.db"
    shutil.copy(GOLDEN, db)
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT count(*) FROM measurements").fetchone()[0]
    with Store.open(str(db)) as store:
        rid = store.save_run(Run(benchmark="coll", status=INTERRUPTED), [])
        assert store.get_run(rid).status == INTERRUPTED
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        # every measurement survived, now in packs (0006) and under the widened check (0007)
        assert conn.execute("SELECT sum(count) FROM measurement_packs").fetchone()[0] == before
        # another connection, opened after the change, also accepts the new status
        conn.execute("INSERT INTO runs (benchmark, started_at, status, uid) VALUES ('x', 't', 'interrupted', 'u')")
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("INSERT INTO runs (benchmark, started_at, status, uid) VALUES ('x', 't', 'bad', 'v')")
