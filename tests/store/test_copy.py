"""Tests of clusterbench.store.copy."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from clusterbench.records import Measurement, Run
from clusterbench.store import Store
from clusterbench.store.copy import copy_databases


def _source(path: Path, runs: int = 2) -> str:
    with Store.open(path) as s:
        for i in range(runs):
            s.save_run(Run("coll", hosts=[f"h{i}"], started_at=f"2026-01-0{i + 1}T00:00:00.000Z"),
                       [Measurement("all_reduce", "busbw", 1.5 + i, "GB/s", {"bytes": 8})])
    return str(path)


def _edit(db: str, sql: str, *args: object) -> None:
    con = sqlite3.connect(db)
    with con:
        con.execute(sql, args)
    con.close()


@pytest.mark.parametrize("sql", [
    "UPDATE measurement_packs SET body='not json'",
    "UPDATE runs SET meta='{'",
])
def test_a_copy_that_copies_nothing_makes_no_destination(tmp_path, sql):
    src = _source(tmp_path / "src.db", runs=1)
    _edit(src, sql)
    dest = tmp_path / "dest.db"
    with pytest.raises(Exception, match="run 1") as e:
        copy_databases(src, dest)
    assert type(e.value).__name__ == "StoreError"
    assert not list(tmp_path.glob("dest.db*"))
