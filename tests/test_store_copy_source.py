"""``results copy --from`` only reads its source: the file is never created, migrated or written,
whatever it is; a source of an older schema is still copied whole, including runs an older
clusterbench stored without a uid, and copying it again stores nothing twice."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from string import Template

import pytest

from clusterbench.cli import main
from clusterbench.records import Measurement, Run
from clusterbench.store import Store
from clusterbench.store.migrations import MIGRATIONS
from clusterbench.store.sqlite import SqliteBackend

GOLDEN = Path(__file__).parent / "data" / "golden" / "pre-redesign.db"


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _migrations(path: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
    finally:
        conn.close()


def _stored(db: Path) -> list[tuple]:
    """Each run's record and measurements, in order, without ids or uids."""
    with Store.open(db) as s:
        return [(r.benchmark, r.started_at, r.status, r.hosts, r.tags, r.meta,
                 [m.to_dict() for m in s.measurements(int(r.id or 0))])
                for r in s.list_runs(oldest_first=True)]


def test_copy_of_the_pre_redesign_database_copies_every_run_and_leaves_it_as_it_was(capsys, tmp_path):
    src = tmp_path / "old.db"
    shutil.copy(GOLDEN, src)
    before, schema = _md5(src), _migrations(src)
    assert schema[-1] != MIGRATIONS[-1].name   # the fixture is of an older schema
    conn = sqlite3.connect(f"file:{src}?mode=ro", uri=True)   # runs an older clusterbench stored without a uid
    assert conn.execute("SELECT count(*) FROM runs WHERE uid IS NULL").fetchone()[0] == 9
    conn.close()
    dest = tmp_path / "copy.db"

    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", dest)
    assert rc == 0, err
    assert out.splitlines()[-1] == f"copied 25 run(s) (1076 measurements), skipped 0 already present: {src} -> {dest}"
    assert _md5(src) == before and _migrations(src) == schema
    migrated = tmp_path / "migrated.db"   # what a migration in place would have made of it
    shutil.copy(GOLDEN, migrated)
    assert _stored(dest) == _stored(migrated)

    # the runs without a uid got the same one again: a second copy, also from a copy of the
    # file under another name, stores nothing twice
    again = tmp_path / "again.db"
    shutil.copy(GOLDEN, again)
    for source in (src, again):
        rc, out, err = cli(capsys, "results", "copy", "--from", source, "--to", dest, "--json")
        summary = json.loads(out)
        assert rc == 0 and (summary["copied"], summary["skipped"]) == (0, 25), err
    assert [t for t in tmp_path.iterdir() if t.name.startswith("clusterbench-")] == []


def _pre_uid_database(path: Path) -> None:
    """A database of migrations 0001-0003 only (before runs had uids), with two runs that
    differ in nothing but their id."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for m in MIGRATIONS[:3]:
        assert m.name < "0004"
        for step in m.steps:
            for stmt in Template(step).substitute(SqliteBackend.types).split(";"):
                if stmt.strip():
                    conn.execute(stmt)
        conn.execute("INSERT INTO schema_migrations VALUES (?, '2025-01-01 00:00:00')", (m.name,))
    for rid in (1, 2):
        conn.execute("INSERT INTO runs (id, benchmark, started_at, status) VALUES (?, 'coll', '2025-01-01', 'complete')",
                     (rid,))
        conn.execute("INSERT INTO measurements (run_id, benchmark, metric, value, unit, params) "
                     "VALUES (?, 'all_reduce', 'busbw', 1.5, 'GB/s', '{\"bytes\": 8}')", (rid,))
    conn.commit()
    conn.close()


def test_copy_of_a_database_from_before_uids_is_idempotent(capsys, tmp_path):
    src = tmp_path / "pre-uid.db"
    _pre_uid_database(src)
    before = _md5(src)
    dest = tmp_path / "dest.db"
    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", dest)
    assert rc == 0 and out.splitlines()[-1].startswith("copied 2 run(s) (2 measurements), skipped 0"), err
    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", dest)
    assert rc == 0 and out.splitlines()[-1].startswith("copied 0 run(s) (0 measurements), skipped 2"), err
    assert _md5(src) == before and _migrations(src) == [m.name for m in MIGRATIONS[:3]]
    with Store.open(dest) as s:
        assert len(set(s.uids())) == 2 and s.measurement_counts() == {1: 1, 2: 1}


@pytest.mark.parametrize("kind", ["empty", "text", "fifo", "missing", "sqlite-not-clusterbench"])
def test_a_source_that_is_not_a_results_database_is_refused_untouched(capsys, tmp_path, kind):
    src = tmp_path / "source"
    if kind == "empty":
        src.write_bytes(b"")
    elif kind == "text":
        src.write_text("hello\n")
    elif kind == "fifo":
        os.mkfifo(src)
    elif kind == "sqlite-not-clusterbench":
        conn = sqlite3.connect(src)
        conn.execute("CREATE TABLE t (x)")
        conn.close()
    before = None if kind in ("missing", "fifo") else _md5(src)
    dest = tmp_path / "dest.db"
    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", dest)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1 and err.startswith("clusterbench: error: "), err
    assert str(src) in err
    assert not dest.exists()
    if kind == "missing":
        assert not src.exists()
    elif kind == "fifo":
        assert not src.is_file()
    else:
        assert _md5(src) == before
    assert [p.name for p in tmp_path.iterdir()] == ([] if kind == "missing" else ["source"])


def test_a_current_source_is_read_without_a_write(capsys, tmp_path):
    src = tmp_path / "laptop.db"
    with Store.open(src) as s:
        s.save_run(Run(benchmark="coll"), [Measurement("all_reduce", "busbw", 1.0, "GB/s", {"bytes": 8})])
    before = _md5(src)
    src.chmod(0o444)   # root may still write it: the md5 is what proves nothing was written
    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", tmp_path / "dest.db")
    assert rc == 0 and "copied 1 run(s)" in out, err
    assert _md5(src) == before


def test_a_postgresql_source_is_only_read(capsys, pg_server, tmp_path):
    name = pg_server.create_db()
    try:
        url = pg_server.url(name)
        rc, out, err = cli(capsys, "results", "copy", "--from", url, "--to", tmp_path / "dest.db")
        assert rc == 2 and out == "" and err == f"clusterbench: error: {url} is not a clusterbench results database\n"
        assert not (tmp_path / "dest.db").exists()
        import psycopg

        with psycopg.connect(url) as conn:   # nothing was created there
            assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname='public'").fetchone()[0] == 0

        # one of an older schema is not migrated: the way to do it is named instead
        with Store.open(url) as s:
            s.save_run(Run(benchmark="coll"), [Measurement("all_reduce", "busbw", 1.0, "GB/s", {"bytes": 8})])
        with psycopg.connect(url) as conn:   # as a clusterbench before migration 0008 left it
            conn.execute("DROP TABLE imported_files")
            conn.execute("DELETE FROM schema_migrations WHERE name='0008_imported_files'")
        rc, out, err = cli(capsys, "results", "copy", "--from", url, "--to", tmp_path / "dest.db")
        assert rc == 2 and out == "" and len(err.splitlines()) == 1, err
        assert "older schema" in err and f"clusterbench results list --db {url}" in err
        with psycopg.connect(url) as conn:
            assert "0008_imported_files" not in {r[0] for r in conn.execute("SELECT name FROM schema_migrations")}
        rc, _, err = cli(capsys, "results", "list", "--db", url)   # which migrates it
        assert rc == 0, err
        rc, out, err = cli(capsys, "results", "copy", "--from", url, "--to", tmp_path / "dest.db")
        assert rc == 0 and "copied 1 run(s)" in out, err
    finally:
        pg_server.drop_db(name)


def test_a_database_name_that_is_not_utf8_is_printed_escaped(tmp_path):
    src = tmp_path / "laptop.db"
    with Store.open(src) as s:
        s.save_run(Run(benchmark="coll"), [Measurement("all_reduce", "busbw", 1.0, "GB/s", {"bytes": 8})])
    dest = os.fsdecode(os.fsencode(str(tmp_path)) + b"/team\xff.db")
    # a strict standard output, as in a UTF-8 locale outside Python's UTF-8 mode
    p = subprocess.run([sys.executable, "-m", "clusterbench", "results", "copy", "--from", str(src), "--to", dest],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == (f"copied 1 run(s) (1 measurements), skipped 0 already present: "
                                         f"{src} -> {tmp_path}/team\\xff.db")
    assert Path(dest).is_file()
