"""Issue 18: the disk fills up while a run or an import is being stored.

The database lives on a real, size-limited file system (a tmpfs mounted for the test: root
only, skipped where mount is refused). The error must say "no space left" and where, the
database must still open and pass ``PRAGMA integrity_check``, no partial run may remain, and no
error of the cleanup may take the place of the first one.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from tmpfs_helpers import small_tmpfs

from clusterbench.store import Store

DATA = Path(__file__).parent / "data" / "nccl-tests"
SMALL_LOG = DATA / "seed-tensorwave-mi355x-4node-all_reduce.txt"
BIG_LOG = DATA / "a3mega-h100-2node-all_reduce.txt"


@pytest.fixture
def tiny_fs(tmp_path):
    """A directory on a 1 MiB tmpfs."""
    with small_tmpfs(tmp_path / "tiny", "1m") as mnt:
        yield mnt


def _cb(*argv: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clusterbench", *argv], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _fill(where: Path, leave: int) -> None:
    """Fill the file system of ``where`` up to ``leave`` bytes."""
    st = os.statvfs(where)
    free = st.f_bavail * st.f_frsize
    with open(where / "filler", "wb") as f:
        f.write(b"\0" * max(0, free - leave))


def _healthy(db: Path) -> list[tuple]:
    """The database opens, passes its integrity check; its runs and measurement counts."""
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        orphans = conn.execute("SELECT count(*) FROM measurement_packs WHERE run_id NOT IN (SELECT id FROM runs)")
        assert orphans.fetchone() == (0,)
        return conn.execute("SELECT r.id, r.status, coalesce(sum(m.count), 0) FROM runs r"
                            " LEFT JOIN measurement_packs m ON m.run_id = r.id GROUP BY r.id ORDER BY r.id").fetchall()


def test_import_onto_a_full_disk(tiny_fs):
    db = tiny_fs / "results.db"
    first = _cb("import", str(SMALL_LOG), "--db", str(db))
    assert first.returncode == 0, first.stderr
    before = _healthy(db)
    big = tiny_fs.parent / "big.log"
    big.write_text(BIG_LOG.read_text() * 200)  # 200 runs, several MB of rows: more than is left
    p = _cb("import", str(big), str(SMALL_LOG), "--db", str(db), "--tag", "second=yes")
    assert p.returncode == 2, p.stderr
    errors = [e for e in p.stderr.splitlines() if e.startswith("clusterbench: error:")]
    assert errors[0].startswith(f"clusterbench: error: {big}: cannot write to results database {db}: "
                                f"no space left on the file system holding it"), p.stderr
    assert f"free in {tiny_fs}" in errors[0] and "Traceback" not in p.stderr
    assert "no transaction is active" not in p.stderr and "cannot rollback" not in p.stderr
    after = _healthy(db)
    # the big file left nothing; the small one, with its new tag another import, fit or failed whole
    assert after[:len(before)] == before
    assert all(n == before[0][2] for _, _, n in after[len(before):])
    again = _cb("results", "list", "--db", str(db))
    assert again.returncode == 0, again.stderr


def test_opening_on_a_full_disk_says_so(tiny_fs):
    db = tiny_fs / "results.db"
    Store.open(str(db)).close()
    _fill(tiny_fs, 0)
    p = _cb("coll", "all_reduce", "-b", "8", "-e", "64", "--np", "2", "--device", "cpu", "--db", str(db))
    assert p.returncode == 2 and p.stdout == ""  # refused before any rank ran
    assert p.stderr.startswith(f"clusterbench: error: cannot open results database {db}: no space left on the "
                               f"file system holding it: 0 bytes free in {tiny_fs}"), p.stderr
    assert p.stderr.count("\n") == 1
    (tiny_fs / "filler").unlink()
    assert _healthy(db) == []


def test_a_run_stored_onto_a_full_disk(tiny_fs):
    """A measuring command whose run no longer fits: one line saying so and where, nothing half
    stored, and the database as it was."""
    db = tiny_fs / "results.db"
    Store.open(str(db)).close()
    _fill(tiny_fs, 48 * 1024)  # room to open it (the WAL index takes 32 KiB), not to store the run
    p = _cb("coll", "all_reduce", "-b", "8", "-e", "16M", "-f", "2", "--np", "2", "--device", "cpu",
            "--telemetry-interval", "0.01", "--db", str(db))
    assert p.returncode == 2, p.stderr
    errors = [e for e in p.stderr.splitlines() if e.startswith("clusterbench: error:")]
    assert len(errors) == 1, p.stderr
    assert errors[0].startswith(f"clusterbench: error: cannot write to results database {db}: no space left"), p.stderr
    assert "Traceback" not in p.stderr
    assert any(line.split()[:1] == ["16777216"] for line in p.stdout.splitlines())  # its rows were shown
    assert _healthy(db) == []
    (tiny_fs / "filler").unlink()  # with room again, the same database takes the next run
    ok = _cb("coll", "all_reduce", "-b", "8", "-e", "64", "--np", "2", "--device", "cpu", "--db", str(db))
    assert ok.returncode == 0, ok.stderr
    assert [(s, n > 0) for _, s, n in _healthy(db)] == [("complete", True)]
