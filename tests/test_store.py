"""The store's API on both backends: every test taking ``db`` runs against an SQLite file and
against a real PostgreSQL database (``any_db`` in conftest.py)."""

import json
import multiprocessing as mp
import sqlite3

import pytest

from clusterbench.errors import StoreError, UsageError
from clusterbench.records import INCOMPLETE, Measurement, Run
from clusterbench.store import Store, TelemetrySample
from clusterbench.store.migrations import MIGRATIONS


@pytest.fixture
def db(any_db):
    return any_db


def _ms(n, bench="all_reduce"):
    return [Measurement(bench, "busbw", float(i), "GB/s", {"bytes": 8 << i, "placement": "out"}) for i in range(n)]


def _count(store, table):
    return store.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_roundtrip(db):
    with Store.open(db) as s:
        run = Run(benchmark="coll", command=["clusterbench", "coll"], hosts=["a", "b"], ranks=2,
                  devices=["cpu", "cpu"], versions={"torch": "2"}, env={"NCCL_DEBUG": "INFO"},
                  tags={"env": "container"})
        rid = s.save_run(run, _ms(3), [TelemetrySample(0.5, "power", 300.0, "W", "a", "0")])
        got = s.get_run(rid)
        assert got.hosts == ["a", "b"] and got.tags == {"env": "container"} and got.env["NCCL_DEBUG"] == "INFO"
        ms = s.measurements(rid)
        assert [m.value for m in ms] == [0.0, 1.0, 2.0]
        assert ms[1].params == {"bytes": 16, "placement": "out"}
        assert s.telemetry(rid)[0].value == 300.0
        assert [r.id for r in s.select("env=container")] == [rid]
        assert s.select(str(rid))[0].id == rid
        assert s.select("last")[0].id == rid


def test_selectors_reject(db):
    with Store.open(db) as s:
        s.save_run(Run(benchmark="x"), [])
        with pytest.raises(UsageError):
            s.select("env=nothing")
        with pytest.raises(UsageError):
            s.select("garbage")
        with pytest.raises(UsageError):
            s.get_run(999)


def test_failed_write_leaves_nothing(db):
    with Store.open(db) as s:
        bad = _ms(2) + [Measurement("x", "y", 1.0, "", {"obj": object()})]
        # params that cannot be serialized are stringified, so force a failure another way:
        run = Run(benchmark="coll", status="not-a-status")
        with pytest.raises(StoreError):
            s.save_run(run, bad)
        assert s.list_runs() == []
        assert _count(s, "measurement_packs") == 0 and _count(s, "runs") == 0


def test_delete_cascades(db):
    with Store.open(db) as s:
        rid = s.save_run(Run(benchmark="coll", tags={"a": "b"}), _ms(4))
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


def test_migrations_recorded_once(db):
    Store.open(db).close()
    with Store.open(db) as s:
        names = s.applied_migrations()
        assert names == sorted(set(names)) and "0001_runs_and_measurements" in names


def _writer(db, tag, n_runs, n_meas):
    with Store.open(db) as s:
        for i in range(n_runs):
            s.save_run(Run(benchmark="coll", tags={"writer": tag, "i": str(i)}), _ms(n_meas))


def test_two_concurrent_writers(db):
    Store.open(db).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(db, t, 20, 200)) for t in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with Store.open(db) as s:
        per_run = s.measurement_counts()
        assert len(per_run) == 40 and all(c == 200 for c in per_run.values())
        writers = s.db.execute("SELECT value, count(*) FROM run_tags WHERE key='writer' GROUP BY value").fetchall()
        assert dict(writers) == {"a": 20, "b": 20}
        assert len(s.uids()) == 40


def test_json_contract():
    m = Measurement("all_reduce", "busbw", 1.5, "GB/s", {"bytes": 8})
    d = json.loads(m.to_json(run=3))
    assert d == {"run": 3, "benchmark": "all_reduce", "metric": "busbw", "value": 1.5, "unit": "GB/s",
                 "params": {"bytes": 8}}
    with pytest.raises(ValueError):
        Measurement("a", "b", float("nan"), "")
    assert Run(benchmark="x", status=INCOMPLETE).to_dict()["status"] == "incomplete"


def test_full_disk_is_one_error_and_stores_nothing(tmp_path):
    """A database on a full file system: StoreError with SQLite's reason, no run left behind."""
    import os
    import subprocess

    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a small tmpfs")
    try:
        db = mnt / "r.db"
        Store.open(db).close()
        with Store.open(db) as s:
            big = [Measurement("all_reduce", "busbw", float(i), "GB/s", {"pad": "x" * 200, "i": i})
                   for i in range(5000)]
            with pytest.raises(StoreError, match="full"):
                s.save_run(Run(benchmark="coll"), big)
        con = sqlite3.connect(db)
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM measurement_packs").fetchone()[0] == 0
        con.close()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_tags_are_replaced_not_duplicated(db):
    with Store.open(db) as s:
        rid = s.save_run(Run(benchmark="coll", tags={"node": "gpu-01", "env": "bare"}), _ms(1))
        s.tag_runs([rid], {"node": "gpu-07", "rack": "r3"})
        assert s.get_run(rid).tags == {"env": "bare", "node": "gpu-07", "rack": "r3"}
        with pytest.raises(UsageError, match="no run 99"):
            s.tag_runs([99], {"a": "b"})


def test_values_come_back_exactly(db):
    """8-byte floats on both engines (PostgreSQL's REAL would be 4 bytes)."""
    values = [315.84, 1e-300, 1.7976931348623157e308, 0.1 + 0.2, -0.0, 123456789.123456789]
    with Store.open(db) as s:
        rid = s.save_run(Run(benchmark="x"), [Measurement("b", "m", v, "GB/s", {"i": i, "big": 2**62})
                                              for i, v in enumerate(values)],
                         [TelemetrySample(1722.000001, "power", 612.345678901, "W", "h", "0")])
        assert [m.value for m in s.measurements(rid)] == values
        assert s.measurements(rid)[0].params == {"i": 0, "big": 2**62}
        assert s.telemetry(rid) == [TelemetrySample(1722.000001, "power", 612.345678901, "W", "h", "0")]


def test_every_run_gets_a_unique_uid(db):
    with Store.open(db) as s:
        ids = [s.save_run(Run(benchmark="x"), []) for _ in range(5)]
        uids = s.uids()
        assert sorted(uids.values()) == ids and len(set(uids)) == 5
        assert all(len(u) == 36 and u.count("-") == 4 for u in uids)  # uuid4 text
        assert s.uid_of(ids[0]) in uids


def _old_database(db, n_runs):
    """A database as the previous release left it: migrations 0001-0003 applied, runs without uid."""
    from clusterbench.store import connect, location
    from clusterbench.store.migrations import MIGRATIONS, statements

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


def _opener(db, tag):
    with Store.open(db) as s:
        s.save_run(Run(benchmark="coll", tags={"writer": tag}), _ms(10))


def test_concurrent_first_opens_migrate_once(db):
    """Four processes open a brand-new database at the same moment: one migrates, all write."""
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_opener, args=(db, str(i))) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with Store.open(db) as s:
        names = s.applied_migrations()
        assert len(names) == len(set(names)) == len(MIGRATIONS)
        assert sorted(r.tags["writer"] for r in s.list_runs()) == ["0", "1", "2", "3"]


def test_rank_counts_past_32_bits_are_stored_by_both_backends(db):
    """PostgreSQL's INTEGER is 32 bits: a run with more ranks than that, stored by SQLite (or
    imported from a log that says so), could not be stored or copied there."""
    with Store.open(db) as s:
        rid = s.save_run(Run(benchmark="coll", ranks=2**40), _ms(1))
        assert s.get_run(rid).ranks == 2**40


def test_passwords_in_urls_are_never_stored(db):
    secret = "s3cr3t-pw"
    run = Run(benchmark="coll",
              command=["clusterbench", "coll", "--db", f"postgresql://cb:{secret}@db1:5432/cb?sslmode=require",
                       f"--db=postgres://cb@db1/cb?password={secret}&application_name=x"],
              meta={"db": f"postgresql://cb:{secret}@db1/cb", "notes": ["plain text stays"]},
              errors=[f"could not reach postgresql://u:{secret}@h/db"])
    with Store.open(db) as s:
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
