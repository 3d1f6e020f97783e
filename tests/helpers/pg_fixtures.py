"""A real, throwaway PostgreSQL server for tests (Debian's ``postgresql`` package).

``initdb`` refuses to run as root, so the cluster belongs to the ``postgres`` user (via
``runuser``). It lives in a temporary directory named with this process's id, listens on one
address and a port chosen free, plus a Unix socket in that directory, and is stopped and
removed by ``PgServer.stop``. ``fsync`` is off: tests need a server, not its durability.

Authentication: every role is trusted except ``PASSWORD_ROLE``, which must give its password
(scram-sha-256), so tests can prove that a passfile authenticates.
"""

from __future__ import annotations

import glob
import itertools
import os
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from paths import ROOT
from process_helpers import free_port

from clusterbench.records import Measurement, Run
from clusterbench.store import Store

PASSWORD_ROLE = "cbpw"
_HBA = f"""\
local all {PASSWORD_ROLE} scram-sha-256
host  all {PASSWORD_ROLE} all scram-sha-256
local all all trust
host  all all all trust
"""


def pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def postgres_usable() -> str | None:
    """None when a test server can be started here, else why not."""
    if pg_bin() is None:
        return "PostgreSQL server not installed (Debian package postgresql)"
    if os.geteuid() != 0:
        return "needs root (initdb runs as the postgres user through runuser)"
    if not shutil.which("runuser"):
        return "runuser not found"
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        return "no postgres user"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg not installed (pip install 'psycopg[binary]')"
    return None


@dataclass
class PgServer:
    listen: str = "127.0.0.1"
    prefix: list[str] = field(default_factory=list)   # e.g. ["ip", "netns", "exec", ns]
    port: int = 0
    dir: Path = Path()
    password: str = ""
    _dbs: itertools.count = field(default_factory=lambda: itertools.count(1))

    def _as_postgres(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([*self.prefix, "runuser", "-u", "postgres", "--", *argv],
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def start(self) -> None:
        import pwd

        bindir = pg_bin()
        assert bindir is not None
        self.dir = Path(tempfile.mkdtemp(prefix=f"cbpg{os.getpid()}-"))
        pw = pwd.getpwnam("postgres")
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        r = self._as_postgres(str(bindir / "initdb"), "-D", str(self.dir / "data"), "-A", "trust",
                              "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync")
        if r.returncode != 0:
            raise RuntimeError(f"initdb failed: {r.stderr.strip()}")
        (self.dir / "data" / "pg_hba.conf").write_text(_HBA)
        for _attempt in range(3):  # the free port may be taken before the server binds it
            # A port free in the root namespace; inside a fresh namespace every port is free.
            self.port = free_port("127.0.0.1") if not self.prefix else 5432
            opts = (f"-p {self.port} -k {self.dir} -c listen_addresses={self.listen} -c fsync=off "
                    "-c synchronous_commit=off -c full_page_writes=off -c max_connections=120 "
                    "-c shared_buffers=32MB")
            r = self._as_postgres(str(bindir / "pg_ctl"), "-D", str(self.dir / "data"), "-l",
                                  str(self.dir / "log"), "-w", "-t", "60", "-o", opts, "start")
            if r.returncode == 0:
                break
        if r.returncode != 0:
            log = (self.dir / "log").read_text() if (self.dir / "log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {r.stdout.strip()} {r.stderr.strip()} {log[-2000:]}")
        self.password = "pw-" + secrets.token_hex(8)
        self.sql(f"CREATE ROLE {PASSWORD_ROLE} LOGIN PASSWORD '{self.password}'")

    def stop(self) -> None:
        bindir = pg_bin()
        if bindir and (self.dir / "data" / "postmaster.pid").exists():
            self._as_postgres(str(bindir / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "immediate",
                              "-w", "stop", timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)

    def admin(self):  # type: ignore[no-untyped-def]
        """A psycopg connection as the superuser, through the Unix socket (works from any
        network namespace)."""
        import psycopg

        return psycopg.connect(host=str(self.dir), port=self.port, user="postgres", dbname="postgres",
                               autocommit=True)

    def sql(self, statement: str, db: str = "postgres") -> list[tuple]:
        import psycopg

        with psycopg.connect(host=str(self.dir), port=self.port, user="postgres", dbname=db,
                             autocommit=True) as conn:
            cur = conn.execute(statement)
            return cur.fetchall() if cur.description else []

    def create_db(self, owner: str = "postgres") -> str:
        name = f"cbt{os.getpid()}_{next(self._dbs)}"
        self.sql(f"CREATE DATABASE {name} OWNER {owner}")
        return name

    def drop_db(self, name: str) -> None:
        self.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def url(self, db: str, user: str = "postgres", host: str | None = None) -> str:
        return f"postgresql://{user}@{host or self.listen}:{self.port}/{db}"

    def socket_url(self, db: str, user: str = "postgres") -> str:
        return f"postgresql://{user}@/{db}?host={self.dir}&port={self.port}"


def pg_server_or_skip(listen: str = "127.0.0.1", prefix: list[str] | None = None):
    """Generator body for a fixture: yields a running PgServer and always stops it."""
    reason = postgres_usable()
    if reason:
        pytest.skip(reason)
    server = PgServer(listen=listen, prefix=list(prefix or []))
    try:
        server.start()
        yield server
    finally:
        server.stop()


SECRET = "Zq7secretPW"


SRC = str(ROOT / "src")


def _durable_db(server: PgServer) -> str:
    """A database whose commits survive the server's crash: the test server starts with
    synchronous_commit off, and these tests stop it with ``-m immediate``."""
    name = server.create_db()
    server.sql(f"ALTER DATABASE {name} SET synchronous_commit = on")
    return name


def _run() -> Run:
    return Run(benchmark="all_reduce", source="test", command=["coll", "--db", "x"],
               started_at="2026-01-01T00:00:00.000Z", ended_at="2026-01-01T00:00:01.000Z", status="complete")


def _meas() -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", float(i), "GB/s", {"bytes": 8 << i}) for i in range(10)]


def _count(server: PgServer, db: str, table: str = "runs") -> int:
    return int(server.sql(f"SELECT count(*) FROM {table}", db=db)[0][0])


def _pg_ctl(server: PgServer, *argv: str) -> None:
    bindir = pg_bin()
    assert bindir is not None
    r = server._as_postgres(str(bindir / "pg_ctl"), "-D", str(server.dir / "data"), *argv)
    assert r.returncode == 0, r.stderr


def _stop(server: PgServer) -> None:
    """The server killed at once (``-m immediate``): what a crash leaves."""
    _pg_ctl(server, "-m", "immediate", "-w", "stop")


def _start(server: PgServer) -> None:
    # the options PgServer.start starts it with, on the same port
    opts = (f"-p {server.port} -k {server.dir} -c listen_addresses={server.listen} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=120 -c shared_buffers=32MB")
    _pg_ctl(server, "-l", str(server.dir / "log"), "-w", "-t", "60", "-o", opts, "start")


def _sqlite_with_runs(path: Path, n: int) -> None:
    with Store.open(path) as s:
        for _ in range(n):
            s.save_run(_run(), _meas())
