import json
import multiprocessing as mp
import sqlite3

import pytest

from clusterbench.errors import StoreError, UsageError
from clusterbench.records import INCOMPLETE, Measurement, Run
from clusterbench.store import Store, TelemetrySample


def _ms(n, bench="all_reduce"):
    return [Measurement(bench, "busbw", float(i), "GB/s", {"bytes": 8 << i, "placement": "out"}) for i in range(n)]


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
        assert s.conn.execute("SELECT count(*) FROM measurements").fetchone()[0] == 0


def test_delete_cascades(db):
    with Store.open(db) as s:
        rid = s.save_run(Run(benchmark="coll", tags={"a": "b"}), _ms(4))
        s.delete_run(rid)
        assert s.conn.execute("SELECT count(*) FROM measurements").fetchone()[0] == 0
        assert s.conn.execute("SELECT count(*) FROM run_tags").fetchone()[0] == 0


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
    con = sqlite3.connect(db)
    per_run = con.execute("SELECT run_id, count(*) FROM measurements GROUP BY run_id").fetchall()
    assert len(per_run) == 40 and all(c == 200 for _, c in per_run)
    writers = con.execute("SELECT value, count(*) FROM run_tags WHERE key='writer' GROUP BY value").fetchall()
    assert dict(writers) == {"a": 20, "b": 20}


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
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(mnt)],
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
        assert con.execute("SELECT count(*) FROM measurements").fetchone()[0] == 0
        con.close()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
