"""Migration 0010: a run's rank count may be NULL (an imported log that does not prove it), on a
new database and on one made before the migration; every reader of the rank count copes."""

import shutil
import sqlite3
from pathlib import Path

import pytest

from clusterbench.cli import main
from clusterbench.records import Measurement, Run
from clusterbench.store import Store

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
