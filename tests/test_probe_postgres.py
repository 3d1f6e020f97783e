"""The PostgreSQL store against failures, on one real throwaway server for this module
(tests/pg_fixtures.py): hostile characters in URLs (a password never shows in a message, a
stored command line or the URL handed to other hosts), URLs libpq cannot read (one line, not a
traceback), the server restarted or gone between opening the store and storing a run (the
measured run is stored once the server is back), the server killed in the middle of an import
or a copy (one line, nothing half-written, the next try finishes), a statement timeout, a role
without CREATE rights and a schema from a newer clusterbench."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import quote

import pytest
from pg_fixtures import PgServer, pg_bin, pg_server_or_skip

from clusterbench.cli import main
from clusterbench.errors import StoreError, UsageError
from clusterbench.records import Measurement, Run
from clusterbench.store import Store, postgres
from clusterbench.store.copy import copy_databases
from clusterbench.store.location import for_other_hosts, parse, redact

DATA = Path(__file__).parent / "data" / "nccl-tests"
LOG = DATA / "a3mega-h100-2node-all_reduce.txt"
SECRET = "Zq7secretPW"


@pytest.fixture(scope="module")
def server():
    yield from pg_server_or_skip()


def _durable_db(server: PgServer) -> str:
    """A database whose commits survive the server's crash: the test server starts with
    synchronous_commit off, and these tests stop it with ``-m immediate``."""
    name = server.create_db()
    server.sql(f"ALTER DATABASE {name} SET synchronous_commit = on")
    return name


@pytest.fixture
def dbname(server):
    name = _durable_db(server)
    yield name
    server.drop_db(name)


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def _errors(err: str) -> list[str]:
    assert "Traceback" not in err and "internal error" not in err, err
    return [line for line in err.splitlines() if line.startswith("clusterbench: error:")]


def _pg_ctl(server: PgServer, *argv: str) -> None:
    bindir = pg_bin()
    assert bindir is not None
    r = server._as_postgres(str(bindir / "pg_ctl"), "-D", str(server.dir / "data"), *argv)
    assert r.returncode == 0, r.stderr


def _stop(server: PgServer) -> None:
    _pg_ctl(server, "-m", "immediate", "-w", "stop")


def _start(server: PgServer) -> None:
    # the options pg_fixtures starts it with, on the same port
    opts = (f"-p {server.port} -k {server.dir} -c listen_addresses={server.listen} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=120 -c shared_buffers=32MB")
    _pg_ctl(server, "-l", str(server.dir / "log"), "-w", "-t", "60", "-o", opts, "start")


def _run() -> Run:
    return Run(benchmark="all_reduce", source="test", command=["coll", "--db", "x"],
               started_at="2026-01-01T00:00:00.000Z", ended_at="2026-01-01T00:00:01.000Z", status="complete")


def _meas() -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", float(i), "GB/s", {"bytes": 8 << i}) for i in range(10)]


def _count(server: PgServer, db: str, table: str = "runs") -> int:
    return int(server.sql(f"SELECT count(*) FROM {table}", db=db)[0][0])


# -- URLs: what is shown, stored and handed on --------------------------------------------------

@pytest.mark.parametrize("url", [
    f"postgresql://cb:pa#{SECRET}@db1/cb",            # libpq has no fragment: '#' is in the password
    f"postgresql://cb:pa?{SECRET}@db1/cb",            # nor does '?' end the user part
    f"postgresql://cb@db1/cb?password=x#{SECRET}",
    f"postgresql://cb@db1/cb?sslpassword={SECRET}",   # the client key's passphrase
    f"postgresql://cb@db1/cb?pass%77ord={SECRET}",    # libpq percent-decodes keys
    f"postgresql://cb@db1/cb?PASSWORD={SECRET}",      # refused by libpq, in a message quoting it
    f"postgresql://cb:{SECRET}[x@db1/cb",             # urlsplit took '[' for an IPv6 address
    f"postgresql://cb:{SECRET}\"q'@db1/cb",            # quotes end a URL in free text
    f"postgresql://cb:a {SECRET}@db1/cb",             # a space, in a stored JSON command
])
def test_a_password_never_shows_in_the_display_a_stored_command_or_for_other_hosts(url):
    """Before: the first five were shown (or half shown) as given, the sixth an internal
    ValueError, the last two half stored in the run's command line."""
    where = parse(url)
    assert SECRET not in where.display and where.has_password
    assert SECRET not in redact(json.dumps(["coll", "--db", url, "--tag", "a=b"]))
    if not {" ", '"'} & set(url):   # free text cannot say where such a URL ends
        assert SECRET not in redact(f"--db={url} and more")
    assert SECRET not in (for_other_hosts(url) or "")


@pytest.mark.parametrize("url", [
    f"postgresql://cb:a/{SECRET}@db1/cb",   # libpq: host "cb", port "a", database "SECRET@db1/cb"
    f"postgresql://cb:p@{SECRET}@db1/cb",   # libpq: password "p", host "SECRET@db1"
    f"postgresql://db1?password=a@{SECRET}",
])
def test_a_url_libpq_reads_otherwise_than_meant_is_refused_without_showing_it(url):
    """Before: shown whole in the connection error (``postgresql://cb:a/SECRET@...: failed to
    resolve host 'cb'``), or with the rest of the password after its '@'."""
    with pytest.raises(UsageError) as e:
        parse(url)
    assert SECRET not in str(e.value) and "percent-encode" in str(e.value)


@pytest.mark.parametrize("url,handed", [
    # urlunsplit dropped the empty host: "postgresql:/db?host=h", an SQLite path on other hosts
    ("postgresql:///cb?host=db1&password=s3", "postgresql:///cb?host=db1"),
    # urlencode turned %20 into "+", which libpq keeps as a "+"
    ("postgresql://cb@db1/cb?password=s3&options=-c%20statement_timeout%3D5s",
     "postgresql://cb@db1/cb?options=-c%20statement_timeout%3D5s"),
])
def test_the_url_for_other_hosts_is_the_one_given_less_its_password(url, handed):
    assert for_other_hosts(url) == handed
    assert parse(handed).kind == "postgresql"


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


def test_a_password_of_every_hostile_character_authenticates_and_is_never_stored(capsys, server, tmp_path):
    password = f"p@ss:w/o?r#d%20 &x=\"'é{SECRET}"
    server.sql(f"ALTER ROLE cbpw PASSWORD '{password.replace(chr(39), chr(39) * 2)}'")
    name = server.create_db(owner="cbpw")
    try:
        url = f"postgresql://cbpw:{quote(password, safe='')}@127.0.0.1:{server.port}/{name}?sslmode=disable"
        rc, out, err = cli(capsys, "import", LOG, "--db", url, "--tag", "t=1")
        assert rc == 0, err
        assert SECRET not in out + err and quote(password, safe="") not in out + err
        rc, out, err = cli(capsys, "results", "show", "last", "--json", "--db", url)
        assert rc == 0 and SECRET not in out + err
        stored = str(server.sql("SELECT command, env, errors, meta FROM runs", db=name))
        assert SECRET not in stored and "p%40ss" not in stored
    finally:
        server.drop_db(name)
        server.sql(f"ALTER ROLE cbpw PASSWORD '{server.password}'")


@pytest.mark.parametrize("sslmode,ok", [("disable", True), ("prefer", True), ("allow", True),
                                        ("require", False), ("verify-full", False), ("bogus", False)])
def test_sslmode_options(capsys, server, dbname, sslmode, ok):
    rc, _, err = cli(capsys, "results", "list", "--db",
                     f"postgresql://postgres@127.0.0.1:{server.port}/{dbname}?sslmode={sslmode}")
    assert rc == (0 if ok else 2) and len(_errors(err)) == (0 if ok else 1), err


# -- the server goes away ------------------------------------------------------------------------

def test_a_restart_between_opening_and_storing_keeps_the_run(server, dbname):
    """Before: ``cannot write to results database ...: server closed the connection
    unexpectedly``, and the run measured meanwhile was lost."""
    url = server.url(dbname)
    with Store.open(url) as store:
        _stop(server)
        _start(server)
        rid = store.save_run(_run(), _meas())
        assert [r.id for r in store.list_runs()] == [rid]
    assert _count(server, dbname, "measurement_packs") == 1


def test_a_connection_the_server_ended_is_opened_again_with_its_settings(server, dbname):
    """An idle session ended by the server (idle_session_timeout, pg_terminate_backend): the
    next read or write opens a new connection, and a read-only store stays read-only."""
    url = server.url(dbname)
    Store.open(url).close()
    kill = f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname='{dbname}' AND pid <> pg_backend_pid()"
    with Store.open(url) as store:
        server.sql(kill)
        store.save_run(_run(), _meas())
        server.sql(kill)
        assert len(store.list_runs()) == 1
    with Store.open_readonly(url) as store:
        server.sql(kill)
        assert len(store.list_runs()) == 1
        assert store.db.execute("SHOW transaction_read_only").fetchone()[0] == "on"


def test_a_transaction_whose_connection_died_leaves_the_store_usable(server, dbname):
    """A write whose connection the server ended mid-transaction fails (the server rolled it
    back). The connection's status is then UNKNOWN, not IDLE: the next write opened a savepoint on
    the dead connection and failed too; it now opens a new connection first."""
    url = server.url(dbname)
    Store.open(url).close()
    kill = f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname='{dbname}' AND pid <> pg_backend_pid()"
    with Store.open(url) as store:
        with pytest.raises(store.db.errors), store.db.write():
            store.db.execute("SELECT 1")
            server.sql(kill)
            store.db.execute("SELECT 1")
        rid = store.save_run(_run(), _meas())
        assert [r.id for r in store.list_runs()] == [rid]
    assert _count(server, dbname, "measurement_packs") == 1


def test_a_server_down_when_the_run_is_stored_is_waited_for(capsys, server, dbname):
    """The runner opens the store before measuring and again to store: a server restarting
    at that moment (refusing connections) is waited for, not a lost run."""
    url = server.url(dbname)
    Store.open(url).close()   # reached once, as the runner's check before any rank starts
    _stop(server)
    later = threading.Timer(2.0, _start, (server,))
    later.start()
    try:
        with Store.open(url) as store:
            store.save_run(_run(), _meas())
    finally:
        later.join()
    assert _count(server, dbname) == 1
    err = capsys.readouterr().err
    assert err.count("\n") <= 1 and "Traceback" not in err   # the wait, said once at most


def test_a_server_that_never_comes_back_is_one_line_and_a_new_one_is_not_waited_for(server, dbname,
                                                                                     monkeypatch):
    monkeypatch.setattr(postgres, "RECONNECT_S", 0.5)
    url = server.url(dbname)
    with Store.open(url) as store:
        _stop(server)
        try:
            with pytest.raises(StoreError) as e:
                store.save_run(_run(), _meas())
            assert "\n" not in str(e.value) and url in str(e.value)
        finally:
            _start(server)
    assert _count(server, dbname) == 0
    # never reached by this process: a wrong port is said at once
    monkeypatch.setattr(postgres, "RECONNECT_S", 3600.0)
    with pytest.raises(StoreError, match="Connection refused"):
        Store.open(f"postgresql://postgres@127.0.0.1:1/{dbname}")


def test_the_server_killed_mid_import_leaves_nothing_and_the_import_then_completes(server, dbname, tmp_path):
    texts = [(DATA / n).read_text() for n in ("a3mega-h100-2node-all_reduce.txt",
                                               "seed-mi300x-rccl-all_reduce-8gpu.txt")]
    big = tmp_path / "big.log"
    with big.open("w") as f:
        for i in range(2000):
            f.write(texts[i % 2].rstrip("\n") + "\n")
    url = server.url(dbname)
    proc = subprocess.Popen([sys.executable, "-m", "clusterbench", "import", str(big), "--db", url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for _ in range(100):   # runs printed: the transaction is under way
        if not proc.stdout.readline():
            break
    _stop(server)
    out, err = proc.communicate(timeout=120)
    _start(server)
    assert proc.returncode == 2 and len(_errors(err)) == 1, err
    assert _count(server, dbname) == 0 and _count(server, dbname, "measurement_packs") == 0
    again = subprocess.run([sys.executable, "-m", "clusterbench", "import", str(big), "--db", url],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert _count(server, dbname) == 2000


def test_a_statement_timeout_is_one_line_and_stores_nothing(capsys, server, dbname, tmp_path):
    big = tmp_path / "big.log"
    big.write_text((LOG.read_text().rstrip("\n") + "\n") * 300)
    Store.open(server.url(dbname)).close()   # migrated without the timeout
    url = f"{server.url(dbname)}?options=-c%20statement_timeout%3D1"
    rc, _, err = cli(capsys, "import", big, "--db", url)
    assert rc == 2 and len(_errors(err)) == 1 and "statement timeout" in err, err
    assert _count(server, dbname) == 0


# -- rights and schemas ----------------------------------------------------------------------------

def test_a_role_that_cannot_create_tables_is_told_why_in_one_line(capsys, server, dbname):
    server.sql("DO $$BEGIN CREATE ROLE cbnocreate LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END$$")
    rc, _, err = cli(capsys, "import", LOG, "--db", server.url(dbname, user="cbnocreate"))
    assert rc == 2 and len(_errors(err)) == 1 and "permission denied for schema public" in err
    assert "owning the database" in err
    assert server.sql("SELECT to_regclass('runs')", db=dbname) == [(None,)]


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


# -- results copy with the server gone midway ---------------------------------------------------

def _sqlite_with_runs(path: Path, n: int) -> None:
    with Store.open(path) as s:
        for _ in range(n):
            s.save_run(_run(), _meas())


def test_copy_into_postgresql_goes_on_through_a_restart_and_stops_whole_when_it_is_gone(
        server, dbname, tmp_path, monkeypatch):
    src = tmp_path / "src.db"
    _sqlite_with_runs(src, 4)
    url = server.url(dbname)
    restarted = []

    def restart_once(item):
        if not restarted:
            restarted.append(item)
            _stop(server)
            _start(server)

    summary = copy_databases(src, url, restart_once)
    assert summary.copied == 4 and _count(server, dbname) == 4

    other = _durable_db(server)
    try:
        monkeypatch.setattr(postgres, "RECONNECT_S", 0.5)
        gone = []

        def stop_after_two(item):
            gone.append(item)
            if len(gone) == 2:
                _stop(server)

        try:
            with pytest.raises(StoreError) as e:
                copy_databases(src, server.url(other), stop_after_two)
            assert "\n" not in str(e.value)
        finally:
            _start(server)
        assert _count(server, other) == 2 and _count(server, other, "measurement_packs") == 2
        assert copy_databases(src, server.url(other)).copied == 2
        assert _count(server, other) == 4
    finally:
        server.drop_db(other)


def test_copy_out_of_postgresql_stops_whole_when_the_source_goes(server, dbname, tmp_path, monkeypatch):
    url = server.url(dbname)
    with Store.open(url) as s:
        for _ in range(3):
            s.save_run(_run(), _meas())
    monkeypatch.setattr(postgres, "RECONNECT_S", 0.5)
    dest = tmp_path / "dest.db"
    seen = []

    def stop_after_one(item):
        seen.append(item)
        if len(seen) == 1:
            _stop(server)

    try:
        with pytest.raises(StoreError) as e:
            copy_databases(url, dest, stop_after_one)
        assert "\n" not in str(e.value) and url in str(e.value)
    finally:
        _start(server)
    with Store.open(dest) as d:
        assert len(d.list_runs()) == 1 and len(d.measurements(1)) == 10
    assert copy_databases(url, dest).copied == 2
