"""System tests (store): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

import multiprocessing as mp
import sqlite3

import pytest

from clusterbench.errors import StoreError
from clusterbench.records import Measurement, Run
from clusterbench.store import Store
from clusterbench.store.migrations import MIGRATIONS


@pytest.fixture
def db(any_db):
    return any_db


def _ms(n, bench="all_reduce"):
    return [Measurement(bench, "busbw", float(i), "GB/s", {"bytes": 8 << i, "placement": "out"}) for i in range(n)]


def _writer(db, tag, n_runs, n_meas):
    with Store.open(db) as s:
        for i in range(n_runs):
            s.save_run(Run(benchmark="coll", tags={"writer": tag, "i": str(i)}), _ms(n_meas))


def _opener(db, tag):
    with Store.open(db) as s:
        s.save_run(Run(benchmark="coll", tags={"writer": tag}), _ms(10))


def _at_once(target, args: list[tuple]) -> None:
    """``target`` in one spawned process for each of ``args``, all started before any is joined;
    each must exit 0."""
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=target, args=a) for a in args]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0


def test_two_concurrent_writers(db):
    Store.open(db).close()
    _at_once(_writer, [(db, t, 20, 200) for t in ("a", "b")])
    with Store.open(db) as s:
        per_run = s.measurement_counts()
        assert len(per_run) == 40 and all(c == 200 for c in per_run.values())
        writers = s.db.execute("SELECT value, count(*) FROM run_tags WHERE key='writer' GROUP BY value").fetchall()
        assert dict(writers) == {"a": 20, "b": 20}
        assert len(s.uids()) == 40


def test_full_disk_is_one_error_and_stores_nothing(tmp_path):
    """A database on a full file system: StoreError with SQLite's reason, no run left behind."""
    import os
    import subprocess

    mnt = tmp_path / "tiny"
    mnt.mkdir()
    # room for an empty database and its migrations (about 100 KB, with their journal), not for the run
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a small tmpfs")
    try:
        db = mnt / "r.db"
        Store.open(db).close()
        with Store.open(db) as s:
            # 2 MB that no compression shrinks
            big = [Measurement("all_reduce", "busbw", float(i), "GB/s", {"pad": os.urandom(100).hex(), "i": i})
                   for i in range(10000)]
            with pytest.raises(StoreError, match="full"):
                s.save_run(Run(benchmark="coll"), big)
        con = sqlite3.connect(db)
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM measurement_packs").fetchone()[0] == 0
        con.close()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_concurrent_first_opens_migrate_once(db):
    """Four processes open a brand-new database at the same moment: one migrates, all write."""
    _at_once(_opener, [(db, str(i)) for i in range(4)])
    with Store.open(db) as s:
        names = s.applied_migrations()
        assert len(names) == len(set(names)) == len(MIGRATIONS)
        assert sorted(r.tags["writer"] for r in s.list_runs()) == ["0", "1", "2", "3"]
