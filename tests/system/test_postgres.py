"""System tests (postgres): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from pg_fixtures import (
    PgServer,
    _count,
    _durable_db,
    _meas,
    _run,
    _sqlite_with_runs,
    _start,
    _stop,
)

from clusterbench.errors import StoreError
from clusterbench.store import Store, postgres
from clusterbench.store.copy import copy_databases


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


def _stop_after(server: PgServer, n: int) -> Callable[[object], None]:
    """A copy's progress callback that stops the server once ``n`` runs are copied."""
    copied = []

    def progress(item: object) -> None:
        copied.append(item)
        if len(copied) == n:
            _stop(server)

    return progress


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
        try:
            with pytest.raises(StoreError) as e:
                copy_databases(src, server.url(other), _stop_after(server, 2))
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
    try:
        with pytest.raises(StoreError) as e:
            copy_databases(url, dest, _stop_after(server, 1))
        assert "\n" not in str(e.value) and url in str(e.value)
    finally:
        _start(server)
    with Store.open(dest) as d:
        assert len(d.list_runs()) == 1 and len(d.measurements(1)) == 10
    assert copy_databases(url, dest).copied == 2


def test_a_password_in_the_database_url_reaches_no_output(server, dbname, tmp_path):
    # The stored command line was redacted, but what was printed was not: the `run` line's
    # command of --json, qualify's `step` lines and its JUnit <system-out>. The test server
    # trusts the postgres role, so any password reaches it and the commands run. (As a child:
    # the command line recorded is the process's own.)
    import json
    import os
    import subprocess
    import sys

    def child(*argv: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "clusterbench", *map(str, argv)], capture_output=True,
                              text=True, timeout=300, cwd=tmp_path, env={**os.environ, **(env or {})})

    secret = "Sekr3t-" + dbname
    url = f"postgresql://postgres:{secret}@{server.listen}:{server.port}/{dbname}"
    shown = f"postgresql://postgres@{server.listen}:{server.port}/{dbname}"
    r = child("stream", "--device", "cpu", "-s", "1K", "-n", "2", "--json", "--db", url)
    assert r.returncode == 0, r.stderr
    assert secret not in r.stdout + r.stderr
    (run_line,) = [d for d in map(json.loads, r.stdout.splitlines()) if d["kind"] == "run"]
    assert run_line["command"][-2:] == ["--db", shown]

    profile = tmp_path / "p.yaml"
    profile.write_text(json.dumps({"name": "t", "suite": [{"name": "s", "command": [
        "stream", "--device", "cpu", "-s", "1K", "-n", "2"]}], "criteria": [
        {"name": "c", "benchmark": "stream", "metric": "bandwidth", "op": ">=", "value": 0.001}]}))
    junit = tmp_path / "q.xml"
    r = child("qualify", "--profile", profile, "--no-preflight", "--json", "--junit", junit, "-o", tmp_path / "q.html",
              env={"CLUSTERBENCH_DB": url})
    assert r.returncode == 0, r.stderr
    assert secret not in r.stdout + r.stderr
    assert secret not in junit.read_text()
    assert shown in junit.read_text()
    steps = [d for d in map(json.loads, r.stdout.splitlines()) if d["kind"] == "step"]
    assert steps and all(shown in s["argv"] and secret not in " ".join(s["argv"]) for s in steps)
    with Store.open(url) as s:
        assert all(secret not in " ".join(run.command) for run in s.list_runs())


def test_a_database_that_takes_no_write_is_refused_when_opened_to_write(server, dbname):
    # a read-only server database (default_transaction_read_only, as on a hot standby) opens;
    # the write probe finds it before a command measures what it would store there
    from clusterbench.store.runs import check_writable

    url = server.url(dbname)
    Store.open(url).close()   # migrated while it still takes writes
    server.sql(f"ALTER DATABASE {dbname} SET default_transaction_read_only = on")
    with pytest.raises(StoreError, match="cannot write to results database .*read-only transaction"):
        check_writable(url)
