"""System tests (results): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import psutil
import pytest
from json_schema import check_lines
from judge_helpers import run_cli
from paths import ROOT, TESTS
from pg_fixtures import (
    SECRET,
    SRC,
    _count,
    _sqlite_with_runs,
)
from process_helpers import assert_all_gone, process_family
from store_raw import _ms
from store_raw import _runs as _raw_runs
from stored_runs import (
    OSU_BW,
    _ids,
    _probe_logs,
    _runs,
    build_probe_db,
)
from system_cli import (
    LOG,
    _cb,
    _closing,
    _errors,
    _export,
    _finish,
    _start,
    _stored,
    cli,
    clusterbench_native_records,
    lines_native_records,
)

from clusterbench.output import OUTPUT_FAILED
from clusterbench.records import COMPLETE, INTERRUPTED, Measurement, Run
from clusterbench.store import Store


def _agrees(printed: str, value: float | None) -> bool:
    """A table cell shows ``value`` to its printed precision (N/A for none)."""
    if printed == "N/A" or value is None:
        return printed == "N/A" and value is None
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return abs(float(printed) - value) <= 0.5 * 10 ** -decimals * (1 + 1e-9)


def cli_to_full_disk(*argv: object) -> subprocess.CompletedProcess[str]:
    """The command in its own process, its standard output a full disk (``> /dev/full``)."""
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(os.devnull if not os.path.exists("/dev/full") else "/dev/full", "w") as full:
        return subprocess.run([sys.executable, "-m", "clusterbench", *map(str, argv)], stdout=full,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=120)


SRC_store_conc = str(ROOT / "src")




NCCL_LOG_store_conc = TESTS / "data" / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"


def _store_conc_cb(*args: object, env: dict[str, str], **kw: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clusterbench", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120, **kw)




_TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


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


def test_sigterm_in_a_repetition_keeps_the_finished_ones(tmp_path):
    db = str(tmp_path / "rep.db")
    proc = _start(db, "--repeat", "3", "-e", "1M")
    assert proc.stdout is not None
    concluded = 0
    for line in proc.stdout:  # the first repetition's table, then a row of the second
        concluded += line.startswith("# Collective test concluded")
        if concluded == 1 and line.strip() and not line.startswith("#"):
            break
    family = process_family(proc)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = _finish(proc)
    assert proc.returncode == 143, err
    runs, _ = _stored(db)
    assert [r.status for r in runs] == [COMPLETE, INTERRUPTED]   # no third repetition started
    assert runs[0].tags["repeat_group"] == runs[1].tags["repeat_group"]
    assert_all_gone(family)
    shown = subprocess.run([sys.executable, "-m", "clusterbench", "results", "show", "1-2", "--json", "--db", db],
                           capture_output=True, text=True, timeout=60)
    objs = check_lines(shown.stdout)  # the interrupted run's JSON follows the published schema
    assert [o["status"] for o in objs if o["kind"] == "run"] == [COMPLETE, INTERRUPTED]


@pytest.mark.parametrize("argv", [["results", "show", "1-300"], ["results", "export", "1-300"]])
def test_other_commands_with_a_full_or_closed_stdout(tmp_path, argv):
    db = str(tmp_path / "few.db")
    from clusterbench.records import Measurement, Run

    with Store.open(db) as store:
        for i in range(300):  # more than a pipe's buffer of output
            store.save_run(Run(benchmark="coll", tags={"i": str(i)}),
                           [Measurement("all_reduce", "busbw", float(j), "GB/s", {"bytes": j}) for j in range(40)])
    cmd = [sys.executable, "-m", "clusterbench", *argv, "--db", db]
    with open("/dev/full", "w") as full:
        p = subprocess.run(cmd, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == OUTPUT_FAILED
    assert p.stderr == "clusterbench: error: cannot write to standard output (/dev/full): No space left on device\n"
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()
    _, err = _finish(proc)
    assert proc.returncode == OUTPUT_FAILED and err == "", err  # `| head`: no message, as other tools


def test_round_trip_through_import(store_json_lines, tmp_path):
    """results show --json of the stored runs reads back as the same runs (import -)."""
    code, out, _ = run_cli("results", "show", "seed=mi300x", "--json", "--db", store_json_lines["db"])
    assert code == 0
    src = tmp_path / "lines.jsonl"
    src.write_text(out)
    code, again, err = run_cli("import", src, "--json", "--db", tmp_path / "again.db")
    assert code == 0, err
    before = [o for o in json.loads("[" + ",".join(out.splitlines()) + "]") if o["kind"] == "run"]
    after = [o for o in check_lines(again) if o["kind"] == "run"]
    assert [(o["status"], o["measurements"]) for o in after] == [(o["status"], len(
        [m for m in json.loads("[" + ",".join(out.splitlines()) + "]")
         if m["kind"] == "measurement" and m["run"] == o["id"]])) for o in before]


def test_coll_run_summary_and_stored_run(coll_run):
    n, db, records = coll_run
    busbws: dict[str, list[float]] = defaultdict(list)
    summary: dict[tuple[str, str], float] = {}
    for r in records:
        if r["kind"] != "measurement":
            continue
        if r["metric"] == "busbw" and "stat" not in r["params"]:
            busbws[r["benchmark"]].append(r["value"])
        if r["metric"] in ("avg_busbw", "out_of_bounds"):
            summary[(r["benchmark"], r["metric"])] = r["value"]
    for op, values in busbws.items():
        assert summary[(op, "avg_busbw")] == pytest.approx(sum(values) / len(values), rel=1e-12)
        assert summary[(op, "out_of_bounds")] == 0
    run = next(r for r in records if r["kind"] == "run")
    assert run["status"] == "complete" and run["ranks"] == n
    assert lines_native_records(clusterbench_native_records("results", "show", str(run["id"]), "--db", db, "--json")) == records


def test_coll_table_shows_the_records(coll_run):
    _, db, records = coll_run
    run_id = next(r["id"] for r in records if r["kind"] == "run")
    values = {}
    for r in records:
        p = r.get("params", {})
        if r["kind"] == "measurement" and "stat" not in p and "dtype" in p:
            values[(r["benchmark"], p["bytes"], p["count"], p["dtype"], p["redop"], str(p["root"]),
                    p["placement"], r["metric"])] = r["value"]
    op, shown = None, set()
    for line in clusterbench_native_records("results", "show", str(run_id), "--db", db).splitlines():
        if line.startswith("# Collective test:"):
            op = line.split(":", 1)[1].strip()
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        assert op is not None and len(f) == 13, line
        for placement, cells in (("out", f[5:9]), ("in", f[9:13])):
            for metric, cell in zip(("time_us", "algbw", "busbw", "wrong"), cells):
                key = (op, int(f[0]), int(f[1]), f[2], f[3], f[4], placement, metric)
                assert _agrees(cell, values.get(key)), (line, metric, values.get(key))
                shown.add(key)
    assert set(values) <= shown                        # every record has its cell


def test_hostile_urls_end_in_one_line_without_the_password(capsys, server, dbname):
    base = f"127.0.0.1:{server.port}/{dbname}"
    cases = [
        f"postgresql://cb:{SECRET}[x@{base}",         # before: internal error ValueError
        f"postgresql://cb:%FF{SECRET}@{base}",        # before: internal error UnicodeDecodeError
        f"postgresql://cb@{base}?password=%FF{SECRET}",
        f"postgresql://cb:\udcff{SECRET}@{base}",     # bytes of argv that are not UTF-8; before: internal error
        f"postgresql://cb@127.0.0.1:{server.port}/\udcff{dbname}",
        f"postgresql://cb:a {SECRET}@{base}",         # before: libpq's message quoted the password
        f"postgresql://cb:%ZZ{SECRET}@{base}",        # likewise
        f"postgresql://cb:pa#{SECRET}@{base}",        # before: the whole URL in the message
        f"POSTGRESQL://cbpw:{SECRET}@{base}",         # before: libpq refused the scheme, quoting the URL
    ]
    for url in cases:
        rc, out, err = cli(capsys, "results", "list", "--db", url)
        assert rc == 2 and len(_errors(err)) == 1, (url, err)
        assert SECRET not in out + err, (url, err)
    # an upper-case scheme reaches the server (as psql's does not, but the store takes it)
    rc, _, err = cli(capsys, "results", "list", "--db", f"POSTGRES://postgres@{base}")
    assert rc == 0, err


@pytest.mark.parametrize("sslmode,ok", [("disable", True), ("prefer", True), ("allow", True),
                                        ("require", False), ("verify-full", False), ("bogus", False)])
def test_sslmode_options(capsys, server, dbname, sslmode, ok):
    rc, _, err = cli(capsys, "results", "list", "--db",
                     f"postgresql://postgres@127.0.0.1:{server.port}/{dbname}?sslmode={sslmode}")
    assert rc == (0 if ok else 2) and len(_errors(err)) == (0 if ok else 1), err


def test_a_database_of_a_newer_clusterbench_is_refused_and_not_touched(capsys, server, dbname, tmp_path):
    url = server.url(dbname)
    assert cli(capsys, "import", LOG, "--db", url)[0] == 0
    server.sql("INSERT INTO schema_migrations VALUES ('9999_from_the_future', 'x')", db=dbname)
    before = server.sql("SELECT name FROM schema_migrations ORDER BY name", db=dbname)
    _sqlite_with_runs(tmp_path / "src.db", 1)
    for argv in (["results", "list", "--db", url], ["import", LOG, "--db", url],
                 ["results", "copy", "--from", url, "--to", tmp_path / "c.db"],
                 ["results", "copy", "--from", tmp_path / "src.db", "--to", url]):
        rc, _, err = cli(capsys, *argv)
        assert rc == 2 and len(_errors(err)) == 1 and "newer clusterbench" in err, err
    assert server.sql("SELECT name FROM schema_migrations ORDER BY name", db=dbname) == before
    assert _count(server, dbname) == 1 and not (tmp_path / "c.db").exists()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_delete_with_a_full_output_still_deletes_every_run_it_selected(db):
    _runs(db, 5)
    r = cli_to_full_disk("results", "delete", "1..5", "--db", db)
    assert r.returncode == OUTPUT_FAILED, r.stderr
    assert r.stderr.startswith("clusterbench: error: cannot write to standard output") and len(r.stderr.splitlines()) == 1
    assert _ids(db) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_copy_with_a_full_output_still_copies_every_run(tmp_path):
    src, dest = str(tmp_path / "src.db"), str(tmp_path / "dest.db")
    _runs(src, 5)
    r = cli_to_full_disk("results", "copy", "--from", src, "--to", dest)
    assert r.returncode == OUTPUT_FAILED, r.stderr
    assert r.stderr.startswith("clusterbench: error: cannot write to standard output") and len(r.stderr.splitlines()) == 1
    assert _ids(dest) == [1, 2, 3, 4, 5]


def test_a_command_that_prints_nothing_to_a_closed_stdout_succeeds(db_stdio, tmp_path):
    """As ``true >&-``: nothing was written, so nothing failed."""
    copy = tmp_path / "copy.db"
    copy.write_bytes(Path(db_stdio).read_bytes())
    p = _cb(["results", "tag", "1", "probe=yes", "--db", str(copy)], preexec_fn=_closing(1), stdout=None,
            stderr=subprocess.PIPE)
    assert (p.returncode, p.stderr) == (0, b"")
    with Store.open(str(copy)) as store:
        assert store.get_run(1).tags["probe"] == "yes"


@pytest.mark.parametrize("argv", [[], ["results"], ["--help"], ["--version"]])
@pytest.mark.parametrize("target", ["full", "closed"])
def test_help_to_a_failing_stdout_is_one_line(argv, target):
    """A bare ``clusterbench`` (or group) prints its help: before, to ``/dev/full`` or a closed
    standard output, a traceback and exit 1."""
    if target == "full":
        with open("/dev/full", "w") as full:
            p = _cb(argv, stdout=full, stderr=subprocess.PIPE)
        name = "/dev/full): No space left on device"
    else:
        p = _cb(argv, preexec_fn=_closing(1), stdout=None, stderr=subprocess.PIPE)
        name = "closed): Bad file descriptor"
    assert p.returncode == OUTPUT_FAILED, p.stderr
    assert p.stderr.decode() == f"clusterbench: error: cannot write to standard output ({name}\n"


@pytest.mark.parametrize("argv", [["results", "show", "99"], ["compare", "1", "99"], ["theory", "--nodes", "x"]])
def test_an_error_keeps_its_exit_code_when_stderr_is_closed_or_full(db_stdio, argv):
    """The one error line cannot be written: the exit code still says what happened (before:
    exit 1 for every one of them, and with ``2>&-`` the line went to standard output)."""
    want = _cb([*argv, "--db", db_stdio])
    assert want.returncode == 2 and want.stderr.startswith(b"clusterbench: error: ")
    closed = _cb([*argv, "--db", db_stdio], preexec_fn=_closing(2))
    assert (closed.returncode, closed.stdout) == (2, b"")
    with open("/dev/full", "w") as full:
        p = _cb([*argv, "--db", db_stdio], stdout=subprocess.PIPE, stderr=full)
    assert (p.returncode, p.stdout) == (2, b"")


def test_import_from_a_pipe_held_open_leaves_the_write_lock_to_others(tmp_path):
    """``kubectl logs -f POD | clusterbench import -``: the pipe stays open while the pod runs. The
    import reads it to a temporary file before its transaction, so another writer is not held off
    meanwhile (it was, for as long as the pipe stayed open), and the log is stored once the pipe
    ends, under the name stdin, its temporary copy removed."""
    db = tmp_path / "r.db"
    Store.open(db).close()
    spool = tmp_path / "spool"
    spool.mkdir()
    env = {**os.environ, "PYTHONPATH": SRC_store_conc, "TMPDIR": str(spool)}
    read_end, write_end = os.pipe()
    importer = subprocess.Popen([sys.executable, "-m", "clusterbench", "import", "-", "--db", str(db)],
                                stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    os.close(read_end)
    try:
        os.write(write_end, NCCL_LOG_store_conc.read_bytes())   # the whole log, and the pipe still open
        other = _store_conc_cb("stream", "--sizes", "1K:1K", "-n", "2", "--device", "cpu", "--db", db, env=env)
        assert other.returncode == 0, other.stderr
        assert importer.poll() is None           # the import still waits for the end of its input
        assert "write lock" not in other.stderr  # and never held the other writer off
    finally:
        os.close(write_end)
    _, err = importer.communicate(timeout=120)
    assert importer.returncode == 0, err
    assert len(_raw_runs(db)) == 2
    assert list(spool.iterdir()) == []            # the temporary copy is gone
    shown = _store_conc_cb("results", "show", "2", "--json", "--db", db, env=env)
    assert '"stdin"' in shown.stdout and "clusterbench-import-" not in shown.stdout


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
        env = {**os.environ, "PYTHONPATH": SRC_store_conc}
        wrote = _store_conc_cb("results", "tag", "1", "site=a", "--db", db, env=env)
        assert wrote.returncode == 2
        (line,) = wrote.stderr.strip().splitlines()
        assert "read-only file system" in line and "still open it" in line, line
        read = _store_conc_cb("results", "list", "--db", db, env=env)
        assert read.returncode == 0, read.stderr


def test_connection_errors_are_one_line_naming_host_and_database(capsys, pg_server):
    cases = {
        f"postgresql://postgres@127.0.0.1:{pg_server.port}/no_such_db": 'database "no_such_db" does not exist',
        "postgresql://postgres:hunter2@127.0.0.1:1/cb": "Connection refused",
        f"postgresql://nobody@127.0.0.1:{pg_server.port}/postgres": 'role "nobody" does not exist',
    }
    for url, why in cases.items():
        rc, out, err = cli(capsys, "results", "list", "--db", url)
        shown = url.replace(":hunter2", "")
        assert rc == 2 and out == "", err
        lines = [x for x in err.splitlines() if "warning:" not in x]
        assert len(lines) == 1 and lines[0].startswith(f"clusterbench: error: cannot connect to results database {shown}: ")
        assert why in lines[0] and "hunter2" not in err and "Traceback" not in err


def test_tls_options_reach_libpq(capsys, pg_server):
    """Query parameters go to libpq as they are: the test server has no TLS, so requiring it fails
    there, with libpq's reason in one line; sslmode=disable works."""
    name = pg_server.create_db()
    try:
        base = pg_server.url(name)
        rc, _, err = cli(capsys, "results", "list", "--db", f"{base}?sslmode=require")
        assert rc == 2 and "server does not support SSL" in err and len(err.splitlines()) == 1
        rc, _, err = cli(capsys, "results", "list", "--db", f"{base}?sslmode=disable&application_name=cbtest")
        assert rc == 0, err
    finally:
        pg_server.drop_db(name)


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


def test_backends_agree(capsys, tmp_path, pg_server):
    sqlite_db = str(tmp_path / "a.db")
    name = pg_server.create_db()
    pg = pg_server.url(name)
    try:
        build_probe_db(capsys, sqlite_db, tmp_path)
        build_probe_db(capsys, pg, tmp_path)
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
        build_probe_db(capsys, src, tmp_path)
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
            rc, _, err = cli(capsys, "import", _probe_logs(tmp_path)["upper"], "--db", db)
        for argv in (["results", "list"], ["results", "show", "1"], ["results", "export", "1..2"],
                     ["results", "list", "--json"]):
            assert _read(capsys, sqlite_db, argv) == _read(capsys, pg, argv), argv
        rc, out, _ = cli(capsys, "results", "show", "1", "--db", pg)
        assert "# tags: B=1, Z=3, _x=1, a=2, é=1" in out
    finally:
        pg_server.drop_db(name)


def _many_runs(db: Path, n: int) -> None:
    with Store.open(db) as s, s.transaction():
        for _ in range(n):
            s.save_run(Run("stream", hosts=["h"]), [Measurement("stream", "bandwidth", 1.0, "GB/s", {})])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("argv", [["delete", "1..3000"], ["tag", "1..3000", "k=v"]])
def test_a_signal_at_the_commit_says_what_the_database_holds(tmp_path, argv, sig):
    # Ctrl-C as `results delete 1..9000` committed: "interrupted", exit 130, no line printed,
    # yet every run was deleted. The command now says what the database holds.
    from commit_window import commit_held, rollback_journal

    db = tmp_path / "r.db"
    _many_runs(db, 3000)
    rollback_journal(db)
    with commit_held(db) as held:
        p = subprocess.Popen([sys.executable, "-m", "clusterbench", "results", *argv, "--db", str(db)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        held.wait_for_commit(p)
        p.send_signal(sig)
    out, err = p.communicate(timeout=120)
    what = "deleted" if argv[0] == "delete" else "tagged"
    assert p.returncode == 128 + sig, err
    words = "SIGINT (Ctrl-C)" if sig == signal.SIGINT else "SIGTERM"
    assert err == f"clusterbench: error: interrupted by {words} as the change committed: 3000 run(s) {what}\n"
    assert out.splitlines() == [f"{what} run {i}" for i in range(1, 3001)]
    with Store.open(db) as s:
        runs = s.list_runs(limit=5000)
        assert (runs == []) if what == "deleted" else (len(runs) == 3000 and all(r.tags == {"k": "v"} for r in runs))


@pytest.mark.parametrize("argv", [["delete", "1..50"], ["tag", "1..50", "k=v"]])
def test_a_signal_before_the_commit_says_nothing_changed(tmp_path, argv):
    # the signal comes while the command waits for the write lock another process holds: the
    # change never happens, and the command says so
    from process_helpers import wait_until

    db = tmp_path / "r.db"
    _many_runs(db, 50)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        p = subprocess.Popen([sys.executable, "-m", "clusterbench", "results", *argv, "--db", str(db)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: p.poll() is not None or any(f.path == str(db) for f in psutil.Process(p.pid).open_files()),
                   120, "the command opened the database")
        p.send_signal(signal.SIGINT)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    out, err = p.communicate(timeout=120)
    what = "deleted" if argv[0] == "delete" else "tagged"
    assert p.returncode == 130, err
    assert err == f"clusterbench: error: interrupted by SIGINT (Ctrl-C): nothing {what} (the change was rolled back)\n"
    assert out == ""
    with Store.open(db) as s:
        runs = s.list_runs(limit=100)
        assert len(runs) == 50 and all(not r.tags for r in runs)
