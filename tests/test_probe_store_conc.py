"""The store under concurrency, and the matching of parameters, probed (SQLite).

A write lock held by another process for longer than the busy timeout (``import -`` takes it
before it reads standard input, so ``kubectl logs -f POD | clusterbench import -`` holds it for as
long as the pod runs) made a benchmark that finished meanwhile lose the run it had measured, with
"database is locked". A writer killed mid-run leaves nothing of that run. Parameters compare as
numbers the same whichever side holds the text.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from clusterbench.errors import StoreError
from clusterbench.judge.select import params_match
from clusterbench.records import Measurement, Run
from clusterbench.store import Store
from clusterbench.store import sqlite as sqlite_backend

SRC = str(Path(__file__).resolve().parent.parent / "src")


def _ms(n: int) -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", float(i), "GB/s", {"bytes": 8 << i}) for i in range(n)]


def _runs(db: Path) -> list[tuple[int, int]]:
    """(run id, measurements stored) of every run, read outside clusterbench."""
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return conn.execute("SELECT r.id, coalesce((SELECT sum(count) FROM measurement_packs p"
                            " WHERE p.run_id = r.id), 0) FROM runs r ORDER BY r.id").fetchall()
    finally:
        conn.close()


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


_KILLED_WRITER = """
import os, signal, sys
from clusterbench.records import Measurement, Run
from clusterbench.store import Store

def rows():
    for i in range(5000):
        if i == 4000:   # the run's row and 4000 of its measurements are in the transaction
            os.kill(os.getpid(), signal.SIGKILL)
        yield ("all_reduce", "busbw", float(i), "GB/s", '{"bytes": %d}' % i)

with Store.open(sys.argv[1]) as s:
    s.save_run(Run(benchmark="all_reduce"), [Measurement("all_reduce", "busbw", 1.0, "GB/s", {})])
    if sys.argv[2] == "batch":
        with s.transaction():
            for _ in range(3):
                s.save_run(Run(benchmark="all_reduce"), [Measurement("all_reduce", "busbw", 1.0, "GB/s", {})])
            s._batch.flush()   # three runs written, not committed
            s.save_run_rows(Run(benchmark="all_reduce"), rows())
    else:
        s.save_run_rows(Run(benchmark="all_reduce"), rows())
"""


@pytest.mark.parametrize("how", ["one run", "batch"])
def test_a_writer_killed_mid_run_leaves_no_part_of_it(tmp_path, how):
    db = tmp_path / "k.db"
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(db), how], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SRC}, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert _runs(db) == [(1, 1)]
    with Store.open(db) as s:   # the next writer goes on where the first stopped
        s.save_run(Run(benchmark="all_reduce"), _ms(2))
    assert [n for _, n in _runs(db)] == [1, 2]


@pytest.mark.parametrize(("want", "have", "same"), [
    (1, "1.0", True),
    ("1.0", 1, True),              # was False: a number written as text matched one way only
    (2**53 + 1, 2**53, False),     # was True: integers compared as floats
    (2**53 + 1, str(2**53), False),
    (2**53 + 1, 2**53 + 1, True),
    (1000, "1_000", False),        # was True: float() reads Python's digit separators
    ("1_000", 1000, False),
    (8, 8.0, True),
    ("in", "in", True),
    (True, 1, False),
    ("true", True, True),
    ([1, 2], "2", True),
])
def test_params_compare_as_numbers_whichever_side_is_text(want, have, same):
    assert params_match({"p": want}, {"p": have}) is same


NCCL_LOG = Path(__file__).resolve().parent / "data" / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"


def _cb(*args: object, env: dict[str, str], **kw: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clusterbench", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120, **kw)


def test_import_from_a_pipe_held_open_leaves_the_write_lock_to_others(tmp_path):
    """``kubectl logs -f POD | clusterbench import -``: the pipe stays open while the pod runs. The
    import reads it to a temporary file before its transaction, so another writer is not held off
    meanwhile (it was, for as long as the pipe stayed open), and the log is stored once the pipe
    ends, under the name stdin, its temporary copy removed."""
    db = tmp_path / "r.db"
    Store.open(db).close()
    spool = tmp_path / "spool"
    spool.mkdir()
    env = {**os.environ, "PYTHONPATH": SRC, "TMPDIR": str(spool)}
    read_end, write_end = os.pipe()
    importer = subprocess.Popen([sys.executable, "-m", "clusterbench", "import", "-", "--db", str(db)],
                                stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    os.close(read_end)
    try:
        os.write(write_end, NCCL_LOG.read_bytes())   # the whole log, and the pipe still open
        other = _cb("stream", "--sizes", "1K:1K", "-n", "2", "--device", "cpu", "--db", db, env=env)
        assert other.returncode == 0, other.stderr
        assert importer.poll() is None           # the import still waits for the end of its input
        assert "write lock" not in other.stderr  # and never held the other writer off
    finally:
        os.close(write_end)
    _, err = importer.communicate(timeout=120)
    assert importer.returncode == 0, err
    assert len(_runs(db)) == 2
    assert list(spool.iterdir()) == []            # the temporary copy is gone
    shown = _cb("results", "show", "2", "--json", "--db", db, env=env)
    assert '"stdin"' in shown.stdout and "clusterbench-import-" not in shown.stdout


def test_endless_binary_data_on_a_pipe_is_refused_at_once(tmp_path):
    """``cat /dev/zero | clusterbench import -``: refused at the first NUL, as the parser refuses
    binary data, not once the temporary copy has filled the disk."""
    db = tmp_path / "r.db"
    env = {**os.environ, "PYTHONPATH": SRC, "TMPDIR": str(tmp_path)}
    zeros = subprocess.Popen(["cat", "/dev/zero"], stdout=subprocess.PIPE)
    try:
        p = subprocess.run([sys.executable, "-m", "clusterbench", "import", "-", "--db", str(db)],
                           stdin=zeros.stdout, capture_output=True, text=True, env=env, timeout=60)
    finally:
        zeros.kill()
        zeros.wait()
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == ["clusterbench: error: -: binary data, not a text log"]
    assert [f.name for f in tmp_path.iterdir() if f.name.startswith("clusterbench-import-")] == []


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


def test_a_database_on_a_read_only_file_system_says_so(tmp_path):
    """Writing to a database on a read-only mount (a backup snapshot, a read-only NFS export):
    SQLite says only "unable to open database file"; the line names the read-only file system
    and what still works, and reading still works."""
    from tmpfs_helpers import small_tmpfs

    with small_tmpfs(tmp_path / "mnt", "4m") as mnt:
        db = mnt / "r.db"
        store = Store.open(db)
        store.save_run(Run(benchmark="all_reduce", status="complete"), _ms(2))
        store.close()
        r = subprocess.run(["mount", "-o", "remount,ro", str(mnt)], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"remount read-only is not allowed here: {r.stderr.strip()}")
        env = {**os.environ, "PYTHONPATH": SRC}
        wrote = _cb("results", "tag", "1", "site=a", "--db", db, env=env)
        assert wrote.returncode == 2
        (line,) = wrote.stderr.strip().splitlines()
        assert "read-only file system" in line and "still open it" in line, line
        read = _cb("results", "list", "--db", db, env=env)
        assert read.returncode == 0, read.stderr
