"""The two backends side by side: one history, built through the CLI on an SQLite file and on a
PostgreSQL database, must read back the same through every read command (order included), and
``results copy`` there and back must keep every run byte for byte. Also the bugs this found:
``bench:`` prefixes and tools matched case-insensitively on SQLite only, tags (and what a run
measured) ordered by the database's collation, and ``results copy --from`` refusing a WAL
database in a directory it cannot write."""

from __future__ import annotations

import gc
import json
import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from clusterbench.cli import main

DATA = Path(__file__).parent / "data"
SEED_NCCL = DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"
OSU_BW = DATA / "osu" / "hpcbench-osu_bw-v5.3.2-host.txt"
FAILED_NCCL = DATA / "nccl-tests" / "issue287-5090-2gpu-test-nccl-failure-no-rows.txt"
ODD_TAGS = ["team=a,b", 'q="x"', "k=v=w", "uni=ñü日本", "long=" + "x" * 4000, "bench:x=1", "B=1", "a=2",
            "Z=3", "_x=1", "é=1", "sp= v "]
_TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def _run(rid, *, status="complete", source="clusterbench 1", tags=None, started="2026-01-02T00:00:00.000Z",
         meta=None):
    return json.dumps({"kind": "run", "id": rid, "benchmark": "coll", "source": source, "command": ["x"],
                       "started_at": started, "ended_at": None, "status": status, "hosts": ["h1"], "ranks": 2,
                       "devices": [], "versions": {}, "env": {}, "tags": tags or {}, "errors": [],
                       "meta": meta if meta is not None else {"n": {"a": [1, {"b": None}]}}})


def _meas(rid, bench, metric, value, params, unit="GB/s"):
    return json.dumps({"kind": "measurement", "run": rid, "benchmark": bench, "metric": metric, "value": value,
                       "unit": unit, "params": params})


def _logs(tmp: Path) -> dict[str, Path]:
    files = {
        "empty": _run(1, tags={"empty": "yes"}),
        "failed": "\n".join([_meas(2, "all_reduce", "busbw", 1.5, {"bytes": 8}), _run(2, status="failed")]),
        "extreme": "\n".join([
            _meas(3, "all_reduce", "busbw", 5e-324, {"bytes": 8}),
            _meas(3, "all_reduce", "busbw", 1.7e308, {"bytes": 16}),
            _meas(3, "all_reduce", "busbw", 10**15 + 1, {"bytes": 32, "nested": {"a": [1, {"x": "é\u2028"}]}}),
            _run(3, started="2026-02-01T00:00:00.000Z")]),
        # an import whose tool is spelt in capitals: bench:osu must not pick it, nor bench:OSU osu's runs
        "upper": "\n".join([_meas(4, "OSU_bw", "bandwidth", 3.0, {"bytes": 8}),
                            _run(4, source="OSU 7.0", meta={"tool": "OSU"})]),
    }
    paths = {}
    for name, text in files.items():
        paths[name] = tmp / f"{name}.jsonl"
        paths[name].write_text(text + "\n")
    return paths


def _build(capsys, db: str, tmp: Path) -> None:
    logs = _logs(tmp)
    imports = [[SEED_NCCL, *[a for t in ODD_TAGS[:5] for a in ("--tag", t)]],
               [OSU_BW, *[a for t in ODD_TAGS[5:] for a in ("--tag", t)]],
               [FAILED_NCCL], [logs["empty"]], [logs["failed"]], [logs["extreme"], "--tag", "x=ext"],
               [logs["upper"]]]
    for argv in imports:
        rc, _, err = cli(capsys, "import", *argv, "--db", db)
        assert rc in (0, 1) and "Traceback" not in err, err


READS = [
    ["results", "list"], ["results", "list", "--json"], ["results", "list", "--benchmark", "osu"],
    ["results", "list", "--benchmark", "OSU"], ["results", "list", "--benchmark", "collectives", "--json"],
    ["results", "list", "--since", "2026-01-15", "--limit", "3"],
    ["results", "show", "1..100"], ["results", "show", "--json", "1..100"], ["results", "export", "1..100"],
    ["results", "export", "--csv", "1..100"], ["results", "show", 'team="a,b"'], ["results", "show", '"bench:x"=1'],
    ["results", "show", 'q="\\"x\\""'], ["results", "show", "uni=ñü日本"], ["results", "show", 'sp=" v "'],
    ["results", "show", "bench:osu"], ["results", "show", "bench:OSU"], ["results", "show", "bench:osu_"],
    ["results", "show", "last~2"], ["results", "show", "2-4", "x=ext"], ["results", "show", "999"],
    ["results", "show", "50..60"], ["results", "export", "--csv", "bench:all_reduce", "--since", "2026-01-01"],
    ["compare", "--json", "1", "6"], ["trend", "--json"], ["validate", "--json", "1..100"],
    ["report", "--json", "1..100"],
]


def _read(capsys, db: str, argv: list[str]) -> tuple[int, str, str]:
    rc, out, err = cli(capsys, *argv, "--db", db)
    assert "Traceback" not in err
    return rc, _TS.sub("TS", out.replace(db, "DB")), _TS.sub("TS", err.replace(db, "DB"))


def _export(capsys, db: str) -> list[str]:
    rc, out, err = cli(capsys, "results", "export", "1..1000", "--db", db)
    assert rc == 0, err
    return [re.sub(r'"(run|id)": \d+, ', "", line) for line in out.splitlines()]


def test_bench_prefix_and_tool_are_case_sensitive_on_sqlite(capsys, tmp_path):
    """SQLite's LIKE ignores ASCII case, PostgreSQL's does not: bench:osu picked OSU_bw (prefix
    osu_) and a run of tool "OSU 7.0" on SQLite only."""
    db = str(tmp_path / "r.db")
    _build(capsys, db, tmp_path)
    rc, out, _ = cli(capsys, "results", "list", "--benchmark", "osu", "--json", "--db", db)
    assert rc == 0 and [json.loads(x)["tool"] for x in out.splitlines()] == ["osu"]
    rc, out, _ = cli(capsys, "results", "list", "--benchmark", "OSU", "--json", "--db", db)
    assert rc == 0 and [json.loads(x)["tool"] for x in out.splitlines()] == ["OSU"]


def test_backends_agree(capsys, tmp_path, pg_server):
    sqlite_db = str(tmp_path / "a.db")
    name = pg_server.create_db()
    pg = pg_server.url(name)
    try:
        _build(capsys, sqlite_db, tmp_path)
        _build(capsys, pg, tmp_path)
        for argv in READS:
            assert _read(capsys, sqlite_db, argv) == _read(capsys, pg, argv), argv
        for argv in (["results", "tag", "1..3", "new=1", "team=c"], ["results", "tag", "999", "a=b"],
                     ["results", "tag", "50..60", "a=b"], ["results", "delete", "2..3", "999"],
                     ["results", "delete", "new=1"], ["results", "list", "--json"]):
            assert _read(capsys, sqlite_db, argv) == _read(capsys, pg, argv), argv
    finally:
        pg_server.drop_db(name)


def test_copy_there_and_back_is_exact_and_idempotent(capsys, tmp_path, pg_server):
    src, back = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    name = pg_server.create_db()
    pg = pg_server.url(name)
    try:
        _build(capsys, src, tmp_path)
        for a, b, copied in [(src, pg, 7), (pg, back, 7), (back, pg, 0), (pg, back, 0), (src, back, 0)]:
            rc, out, err = cli(capsys, "results", "copy", "--from", a, "--to", b, "--json")
            summary = json.loads(out)
            assert rc == 0 and (summary["copied"], summary["copied"] + summary["skipped"]) == (copied, 7), err
        assert _export(capsys, src) == _export(capsys, pg) == _export(capsys, back)
    finally:
        pg_server.drop_db(name)


def test_tag_order_does_not_follow_the_collation(capsys, tmp_path, pg_server):
    """A PostgreSQL database in an en-US locale orders "_x, a, B"; SQLite (and C) "B, _x, a":
    tags were printed, and runs' tag dicts built, in the database's order."""
    name = f"cbicu{os.getpid()}"
    try:
        pg_server.sql(f"CREATE DATABASE {name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"
                      " LOCALE 'C.UTF-8'")
    except Exception as e:  # noqa: BLE001 - a server built without ICU
        pytest.skip(f"no ICU collation on this server: {e}")
    pg = pg_server.url(name)
    sqlite_db = str(tmp_path / "a.db")
    try:
        for db in (sqlite_db, pg):
            rc, _, err = cli(capsys, "import", OSU_BW, *[a for t in ("B=1", "a=2", "Z=3", "_x=1", "é=1")
                                                           for a in ("--tag", t)], "--db", db)
            assert rc == 0, err
            rc, _, err = cli(capsys, "import", _logs(tmp_path)["upper"], "--db", db)
        for argv in (["results", "list"], ["results", "show", "1"], ["results", "export", "1..2"],
                     ["results", "list", "--json"]):
            assert _read(capsys, sqlite_db, argv) == _read(capsys, pg, argv), argv
        rc, out, _ = cli(capsys, "results", "show", "1", "--db", pg)
        assert "# tags: B=1, Z=3, _x=1, a=2, é=1" in out
    finally:
        pg_server.drop_db(name)


@pytest.fixture
def readonly_dir(tmp_path):
    """A directory this process cannot write: chmod for a user, a read-only tmpfs for root."""
    where = tmp_path / "ro"
    where.mkdir()
    if os.geteuid() != 0:
        yield where, lambda: where.chmod(0o555)
        where.chmod(0o755)
        return
    if not shutil.which("mount") or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)],
                                                   capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield where, lambda: subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
    finally:
        gc.collect()   # a connection left open keeps the mount busy
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_copy_from_wal_database_in_readonly_directory(capsys, tmp_path, readonly_dir):
    """``--from`` is only read, yet a WAL database (every clusterbench SQLite file) in a read-only
    directory failed: "unable to open database file" (its -shm file cannot be created)."""
    where, make_readonly = readonly_dir
    src = where / "r.db"
    rc, _, err = cli(capsys, "import", SEED_NCCL, "--db", src)
    assert rc == 0, err
    conn = sqlite3.connect(src)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()
    assert not Path(f"{src}-wal").exists()
    make_readonly()
    dest = tmp_path / "copy.db"
    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", dest, "--json")
    assert rc == 0, err
    assert json.loads(out)["measurements"] == 250
    assert _export(capsys, str(dest))


def test_reading_commands_read_a_wal_database_in_readonly_directory(capsys, tmp_path, readonly_dir):
    """A database on a read-only mount (a backup snapshot) was unreadable by every command:
    opening it for writing needs its -shm file. Commands that only read now read it."""
    where, make_readonly = readonly_dir
    src = where / "r.db"
    rc, _, err = cli(capsys, "import", SEED_NCCL, "--db", src)
    assert rc == 0, err
    make_readonly()
    rc, out, err = cli(capsys, "results", "list", "--db", src, "--json")
    assert rc == 0, err
    assert [json.loads(line)["id"] for line in out.splitlines()] == [1]
    rc, out, err = cli(capsys, "results", "show", "1", "--db", src, "--json")
    assert rc == 0 and sum(1 for line in out.splitlines() if json.loads(line).get("metric")) == 250, err
    rc, out, err = cli(capsys, "results", "export", "1", "--db", src, "--csv")
    assert rc == 0 and len(out.splitlines()) == 251, err
    rc, out, err = cli(capsys, "report", "1", "--db", src, "-o", str(tmp_path / "r.html"))
    assert rc == 0, err
    rc, out, err = cli(capsys, "validate", "1", "--db", src, "--profile", "amd-mi300x-oem")
    assert rc in (0, 1) and "Traceback" not in err and "database" not in err, err
    # writing is still refused, in one line
    rc, _, err = cli(capsys, "results", "tag", "1", "team=a", "--db", src)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
