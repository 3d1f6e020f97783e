"""Tests of clusterbench.store.sqlite: sQLite."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from store_raw import _ms, _runs

from clusterbench.errors import StoreError
from clusterbench.records import Run
from clusterbench.store import Store
from clusterbench.store import sqlite as sqlite_backend


@pytest.fixture
def short_busy_timeout(monkeypatch):
    """A busy timeout of a fraction of a second, so that a lock outlasting it takes no 30 s."""
    monkeypatch.setattr(sqlite_backend, "BUSY_TIMEOUT_S", 0.05)


def test_a_write_waits_for_a_writer_that_holds_the_lock_past_the_busy_timeout(tmp_path, short_busy_timeout,
                                                                             monkeypatch, capsys):
    """Another process's transaction outlasting the busy timeout: the run is stored once that
    transaction ends, after one warning saying what it waits for (it was lost: "database is
    locked")."""
    monkeypatch.setattr(sqlite_backend, "WRITE_WAIT_S", 60.0)
    db = tmp_path / "r.db"
    Store.open(db).close()
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")   # as `import -` holds it while it waits for its input
    warned = threading.Event()
    real_warn = sqlite_backend.warn_once

    def warn(message: str) -> None:
        real_warn(message)
        warned.set()

    monkeypatch.setattr(sqlite_backend, "warn_once", warn)

    def release() -> None:
        # the lock goes once the writer has said it waits: it waited past its busy timeout
        if warned.wait(60):
            holder.execute("COMMIT")

    t = threading.Thread(target=release)
    t.start()
    try:
        with Store.open(db) as s:
            run_id = s.save_run(Run(benchmark="all_reduce"), _ms(3))
    finally:
        t.join()
        holder.close()
    assert warned.is_set()
    err = capsys.readouterr().err
    assert "another process holds the write lock" in err and err.count("\n") == 1, err
    assert _runs(db) == [(run_id, 3)]


def test_a_lock_held_past_the_wait_is_one_line_naming_why(tmp_path, short_busy_timeout, monkeypatch):
    monkeypatch.setattr(sqlite_backend, "WRITE_WAIT_S", 0.2)
    db = tmp_path / "r.db"
    Store.open(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with Store.open(db) as s, pytest.raises(StoreError) as e:
            s.save_run(Run(benchmark="all_reduce"), _ms(3))
    finally:
        holder.close()
    assert "\n" not in str(e.value)
    assert "another process held the write lock" in str(e.value), e.value
    assert _runs(db) == []


def test_a_writer_makes_no_directory_but_the_default_databases(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("CLUSTERBENCH_DB", raising=False)
    typo = tmp_path / "no" / "dir" / "x.db"
    with pytest.raises(StoreError, match=r"the directory of database .*x\.db does not exist"):
        Store.open(typo)
    assert not (tmp_path / "no").exists()
    with Store.open() as store:   # the default: its directory is made on the first run
        assert store.path == tmp_path / "xdg" / "clusterbench" / "results.db"
    assert store.path.is_file()
