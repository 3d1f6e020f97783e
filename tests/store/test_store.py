"""Tests of clusterbench.store: the results store."""

import os
import shutil
import sqlite3

import pytest
from child_cli import FUTURE, _make_newer
from store_raw import _ms
from stored_runs import (
    AWKWARD,
    GOLDEN,
    NUL,
    _m,
    _run,
    _source,
    _tag_selectors_run,
)

from clusterbench.errors import StoreError, UsageError
from clusterbench.records import INTERRUPTED, RUN_STATUSES, Measurement, Run
from clusterbench.records import TelemetrySample as TelemetrySample_store_nul
from clusterbench.store import Store, TelemetrySample, fstype, warn
from clusterbench.store import sqlite as sqlite_backend
from clusterbench.store.copy import copy_databases
from clusterbench.store.migrations import MIGRATIONS
from clusterbench.store.selectors import tag_term


def _failing_migration(monkeypatch, exc: BaseException) -> None:
    def fail(self):
        # what a full disk does half-way: the first migration committed, the next one fails
        with self.db.write():
            self.db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
        with self.db.write():
            self.db.execute("CREATE TABLE IF NOT EXISTS half (x TEXT)")
            raise exc

    monkeypatch.setattr(Store, "migrate", fail)


@pytest.fixture
def db_store(any_db):
    return any_db


def _store_ms(n, bench="all_reduce"):
    return [Measurement(bench, "busbw", float(i), "GB/s", {"bytes": 8 << i, "placement": "out"}) for i in range(n)]


def _count(store, table):
    return store.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def _sample(**kw) -> TelemetrySample_store_nul:
    return TelemetrySample_store_nul(**{"t": 0.0, "metric": "power", "value": 300.0, "unit": "W", "host": "h1",
                              "device": "0", **kw})


def test_copy_databases_copies_and_makes_the_destination_as_needed(tmp_path):
    src = _source(tmp_path / "src.db")
    dest = tmp_path / "dest.db"
    assert copy_databases(src, dest).copied == 2
    again = copy_databases(src, dest)   # the destination is there now: every run is skipped
    assert (again.copied, again.skipped) == (0, 2)
    empty = tmp_path / "empty.db"
    Store.open(empty).close()
    assert copy_databases(empty, tmp_path / "new.db").copied == 0 and (tmp_path / "new.db").is_file()


def test_a_new_database_that_could_not_be_migrated_is_removed(tmp_path, monkeypatch):
    db = tmp_path / "new.db"
    _failing_migration(monkeypatch, StoreError("results database is not usable: database or disk is full"))
    with pytest.raises(StoreError):
        Store.open(str(db))
    assert sorted(os.listdir(tmp_path)) == []


def test_ctrl_c_while_a_new_database_is_migrated_removes_it(tmp_path, monkeypatch):
    db = tmp_path / "new.db"
    _failing_migration(monkeypatch, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        Store.open(str(db))
    assert sorted(os.listdir(tmp_path)) == []


def test_a_database_that_existed_is_never_removed(tmp_path, monkeypatch):
    ready, empty = tmp_path / "ready.db", tmp_path / "empty.db"
    with Store.open(str(ready)) as store:
        store.save_run(Run(benchmark="selftest"), [Measurement("selftest", "value", 1.0, "", {})])
    empty.touch()
    _failing_migration(monkeypatch, StoreError("results database is not usable: database or disk is full"))
    for db in (ready, empty):
        with pytest.raises(StoreError):
            Store.open(str(db))
    monkeypatch.undo()
    assert empty.exists()
    with Store.open(str(ready)) as store:
        assert len(store.list_runs()) == 1


def test_a_new_database_made_ready_stays(tmp_path):
    Store.open(str(tmp_path / "new.db")).close()
    with Store.open(str(tmp_path / "new.db"), create=False) as store:
        assert store.list_runs() == []


def test_a_reader_of_a_rollback_journal_database_a_writer_holds_does_not_wait(tmp_path, monkeypatch):
    """A database in rollback-journal mode (another tool's, or once on a shared file system) and a
    writer in the middle of its transaction: opening it to read tried to switch it to WAL, which
    needs every other user out, so the reader waited the whole busy timeout and failed with
    "database is locked". Now it reads at once, and the switch is made by a later opener once the
    writer is gone."""
    monkeypatch.setattr(sqlite_backend, "BUSY_TIMEOUT_S", 2.0)
    db = tmp_path / "r.db"
    store = Store.open(db)
    store.save_run(Run(benchmark="all_reduce", status="complete"), _ms(3))
    store.close()
    conn = sqlite3.connect(db, isolation_level=None)
    assert conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    conn.execute("BEGIN IMMEDIATE")   # a writer that has not started to commit
    conn.execute("UPDATE runs SET status = status")
    try:
        reader = Store.open(db)
        try:
            assert len(reader.list_runs()) == 1
        finally:
            reader.close()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"   # left as it was
    finally:
        conn.execute("ROLLBACK")
        conn.close()
    Store.open(db).close()   # nobody else: switched now
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_roundtrip(db_store):
    with Store.open(db_store) as s:
        run = Run(benchmark="coll", command=["clusterbench", "coll"], hosts=["a", "b"], ranks=2,
                  devices=["cpu", "cpu"], versions={"torch": "2"}, env={"NCCL_DEBUG": "INFO"},
                  tags={"env": "container"})
        rid = s.save_run(run, _store_ms(3), [TelemetrySample(0.5, "power", 300.0, "W", "a", "0")])
        got = s.get_run(rid)
        assert got.hosts == ["a", "b"] and got.tags == {"env": "container"} and got.env["NCCL_DEBUG"] == "INFO"
        ms = s.measurements(rid)
        assert [m.value for m in ms] == [0.0, 1.0, 2.0]
        assert ms[1].params == {"bytes": 16, "placement": "out"}
        assert s.telemetry(rid)[0].value == 300.0
        assert [r.id for r in s.select("env=container")] == [rid]
        assert s.select(str(rid))[0].id == rid
        assert s.select("last")[0].id == rid


def test_selectors_reject(db_store):
    with Store.open(db_store) as s:
        s.save_run(Run(benchmark="x"), [])
        with pytest.raises(UsageError):
            s.select("env=nothing")
        with pytest.raises(UsageError):
            s.select("garbage")
        with pytest.raises(UsageError):
            s.get_run(999)


def test_failed_write_leaves_nothing(db_store):
    with Store.open(db_store) as s:
        bad = _store_ms(2) + [Measurement("x", "y", 1.0, "", {"obj": object()})]
        # params that cannot be serialized are stringified, so force a failure another way:
        run = Run(benchmark="coll", status="not-a-status")
        with pytest.raises(StoreError):
            s.save_run(run, bad)
        assert s.list_runs() == []
        assert _count(s, "measurement_packs") == 0 and _count(s, "runs") == 0


def test_delete_cascades(db_store):
    with Store.open(db_store) as s:
        rid = s.save_run(Run(benchmark="coll", tags={"a": "b"}), _store_ms(4))
        s.delete_runs([rid])
        assert _count(s, "measurement_packs") == 0 and _count(s, "run_tags") == 0


def test_corrupt_database(tmp_path):
    p = tmp_path / "bad.db"
    p.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError):
        Store.open(p)


def test_unwritable_path(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError):
        Store.open(tmp_path / "file" / "results.db")


def test_migrations_recorded_once(db_store):
    Store.open(db_store).close()
    with Store.open(db_store) as s:
        names = s.applied_migrations()
        assert names == sorted(set(names)) and "0001_runs_and_measurements" in names


def test_tags_are_replaced_not_duplicated(db_store):
    with Store.open(db_store) as s:
        rid = s.save_run(Run(benchmark="coll", tags={"node": "gpu-01", "env": "bare"}), _store_ms(1))
        s.tag_runs([rid], {"node": "gpu-07", "rack": "r3"})
        assert s.get_run(rid).tags == {"env": "bare", "node": "gpu-07", "rack": "r3"}
        with pytest.raises(UsageError, match="no run 99"):
            s.tag_runs([99], {"a": "b"})


def test_values_come_back_exactly(db_store):
    """8-byte floats on both engines (PostgreSQL's REAL would be 4 bytes)."""
    values = [315.84, 1e-300, 1.7976931348623157e308, 0.1 + 0.2, -0.0, 123456789.123456789]
    with Store.open(db_store) as s:
        rid = s.save_run(Run(benchmark="x"), [Measurement("b", "m", v, "GB/s", {"i": i, "big": 2**62})
                                              for i, v in enumerate(values)],
                         [TelemetrySample(1722.000001, "power", 612.345678901, "W", "h", "0")])
        assert [m.value for m in s.measurements(rid)] == values
        assert s.measurements(rid)[0].params == {"i": 0, "big": 2**62}
        assert s.telemetry(rid) == [TelemetrySample(1722.000001, "power", 612.345678901, "W", "h", "0")]


def test_every_run_gets_a_unique_uid(db_store):
    with Store.open(db_store) as s:
        ids = [s.save_run(Run(benchmark="x"), []) for _ in range(5)]
        uids = s.uids()
        assert sorted(uids.values()) == ids and len(set(uids)) == 5
        assert all(len(u) == 36 and u.count("-") == 4 for u in uids)  # uuid4 text
        assert s.uid_of(ids[0]) in uids


def test_rank_counts_past_32_bits_are_stored_by_both_backends(db_store):
    """PostgreSQL's INTEGER is 32 bits: a run with more ranks than that, stored by SQLite (or
    imported from a log that says so), could not be stored or copied there."""
    with Store.open(db_store) as s:
        rid = s.save_run(Run(benchmark="coll", ranks=2**40), _store_ms(1))
        assert s.get_run(rid).ranks == 2**40


def test_passwords_in_urls_are_never_stored(db_store):
    secret = "s3cr3t-pw"
    run = Run(benchmark="coll",
              command=["clusterbench", "coll", "--db", f"postgresql://cb:{secret}@db1:5432/cb?sslmode=require",
                       f"--db=postgres://cb@db1/cb?password={secret}&application_name=x"],
              meta={"db": f"postgresql://cb:{secret}@db1/cb", "notes": ["plain text stays"]},
              errors=[f"could not reach postgresql://u:{secret}@h/db"])
    with Store.open(db_store) as s:
        rid = s.save_run(run, [])
        got = s.get_run(rid)
        stored = s.db.execute("SELECT command, meta, errors FROM runs WHERE id=?", (rid,)).fetchone()
    assert secret not in "".join(stored)
    assert got.command[3] == "postgresql://cb@db1:5432/cb?sslmode=require"
    assert got.command[4] == "--db=postgres://cb@db1/cb?application_name=x"
    assert got.meta == {"db": "postgresql://cb@db1/cb", "notes": ["plain text stays"]}


def test_missing_source_is_an_error_not_a_new_file(tmp_path):
    with pytest.raises(StoreError, match="no results database at"):
        Store.open(tmp_path / "nothing.db", create=False)
    assert not (tmp_path / "nothing.db").exists()


@pytest.mark.parametrize("magic,mode", [(0x6969, "delete"), (0x0BD00BD0, "delete"), (0x47504653, "delete"),
                                        (0x19830326, "delete"), (0xFF534D42, "delete"), (0xEF53, "wal")])
def test_journal_mode_follows_the_file_system(magic, mode, tmp_path, monkeypatch, capsys):
    warn.forget()
    monkeypatch.setattr(fstype, "statfs_magic", lambda path: magic)
    db = tmp_path / "r.db"
    for _ in range(2):
        Store.open(db).close()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == mode
    con.close()
    err = capsys.readouterr().err
    if mode == "delete":
        assert err.count("clusterbench: warning:") == 1  # once, however often the store opens
        assert "not WAL" in err and "PostgreSQL" in err and str(db) in err
    else:
        assert err == ""


def test_a_wal_database_moved_to_nfs_leaves_wal(tmp_path, monkeypatch):
    db = tmp_path / "r.db"
    Store.open(db).close()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    monkeypatch.setattr(fstype, "statfs_magic", lambda path: 0x6969)
    with Store.open(db) as s:
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


@pytest.mark.parametrize("run, m, sample, words", [
    (_run(tags={"k": NUL}), _m(), _sample(), "tag 'k' holds a NUL character"),
    (_run(tags={NUL: "v"}), _m(), _sample(), "tag name 'a\\x00b' holds a NUL character"),
    (_run(benchmark=NUL), _m(), _sample(), "run benchmark 'a\\x00b' holds a NUL character"),
    (_run(source=NUL), _m(), _sample(), "run source 'a\\x00b' holds a NUL character"),
    (_run(started_at="2026-01-01T00:00:00Z\x00"), _m(), _sample(), "run started_at"),
    (_run(), _m(benchmark=NUL), _sample(), "benchmark 'a\\x00b' holds a NUL character"),
    (_run(), _m(), _sample(host=NUL), "telemetry host 'a\\x00b' holds a NUL character"),
])
def test_raw_text_with_nul_is_refused_on_both_backends(any_db, run, m, sample, words):
    with Store.open(any_db) as s:
        with pytest.raises(UsageError, match=words.replace("\\", "\\\\")) as e:
            s.save_run(run, [m], [sample])
        assert "\n" not in str(e.value) and "\x00" not in str(e.value)
        assert s.list_runs() == []   # nothing of it stored
        # the store is usable after the refusal, in and out of a transaction
        with s.transaction():
            with pytest.raises(UsageError):
                s.save_run(run, [m], [sample])
            rid = s.save_run(_run(), [_m()])
        assert [r.id for r in s.list_runs()] == [rid]
        assert s.measurements(rid) == [_m()]


@pytest.mark.parametrize("selector, ids", [
    ("3", [3]),
    ("2..4", [2, 3, 4]),
    ("2-4", [2, 3, 4]),
    ("2 .. 4", [2, 3, 4]),
    ("last", [6]),
    ("last~0", [6]),
    ("last~2", [4]),
    ("env=a", [1, 2, 6]),
    ("env=b,node=n1", [5]),
    ("last,env=b", [5]),            # last of those the other terms match
    ("last~1,env=a", [2]),
    ("bench:all_reduce", [1, 3]),
    ("bench:allreduce", [1, 3]),    # an alias of a benchmark
    ("bench:collectives", [1, 3, 6]),  # a family
    ("bench:osu", [4]),             # a family known by a prefix (osu_*) and a tool
    ("bench:osu_bw", [4]),
    ("bench:rccl-tests", [3]),      # an imported log's tool
    ("bench:babelstream", [5]),
    ("bench:stream", [2, 5, 6]),
    ("bench:stream,env=a", [2, 6]),
    ("bench:stream,bench:gemm", [6]),
    ("1..6,bench:collectives,env=b", [3]),
    ("4,env=b", [4]),
])
def test_selectors(store_store_selectors, selector, ids):
    assert [r.id for r in store_store_selectors.select(selector)] == ids


@pytest.mark.parametrize("selector, msg", [
    ("env=nothing", "matches no run"),
    ("9", "no run 9 in"),
    ("99999999999999999999", "run id 99999999999999999999 is out of range"),
    ("7..3", "runs backwards"),
    ("last~x", "is not a run id"),
    ("last~99999999999999999999", "out of range"),
    ("last,last~1", "last given twice"),
    ("garbage", "'garbage' is not a run id"),
    ("bench:", "empty benchmark name"),
    ("", "empty selector"),
    ("bench:nothing", "matches no run"),
])
def test_bad_selectors(store_store_selectors, selector, msg):
    with pytest.raises(UsageError, match=msg):
        store_store_selectors.select(selector)


def test_run_benchmarks_are_kept_and_backfilled(store_store_selectors):
    assert store_store_selectors.run_benchmarks([1, 6]) == {1: ["all_gather", "all_reduce"], 6: ["gemm", "sendrecv", "stream"]}
    store_store_selectors.delete_runs([1])
    assert store_store_selectors.db.execute("SELECT count(*) FROM run_benchmarks WHERE run_id=1").fetchone()[0] == 0


def test_newer_database_is_refused_on_open(any_db):
    _make_newer(any_db)
    with pytest.raises(StoreError) as e:
        Store.open(any_db)
    text = str(e.value)
    assert "newer clusterbench" in text and FUTURE in text and MIGRATIONS[-1].name in text


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


def test_every_stored_tag_selects_exactly_its_runs(any_db):
    """For each awkward tag, a run holding it and decoys holding its pieces (team=a and team=b
    for team="a,b", bench-looking and trimmed keys): the tag's term picks only the first."""
    with Store.open(any_db) as store:
        expect: dict[tuple[str, str], list[int]] = {}
        for key, value in AWKWARD:
            decoys = [{key.strip(): value.strip()}, {key: value + "x"}, {key + "x": value},
                      *({key: part} for part in value.split(","))]
            for tags in decoys:
                if tags != {key: value}:
                    store.save_run(_tag_selectors_run(tags), [])
            rid = store.save_run(_tag_selectors_run({key: value, "other": "1"}), [])
            expect.setdefault((key, value), []).append(rid)
        # PostgreSQL cannot hold NUL in text: neither backend stores such a tag, and its term
        # matches no run on both
        nul = ("k", "a\x00b")
        with pytest.raises(UsageError, match="tag 'k' holds a NUL character"):
            store.save_run(_tag_selectors_run(dict([nul])), [])
        with pytest.raises(UsageError, match="matches no run"):
            store.select(tag_term(*nul))
        for (key, value), ids in expect.items():
            assert [r.id for r in store.select(tag_term(key, value))] == ids, (key, value)
            assert [r.tags[key] for r in store.select(tag_term(key, value))] == [value] * len(ids)
