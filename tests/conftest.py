import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from pg_fixtures import pg_server_or_skip  # noqa: E402


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "results.db")


@pytest.fixture(scope="session")
def pg_server():
    """One real PostgreSQL server for the session (skips with the reason where none can run)."""
    yield from pg_server_or_skip()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db(request, tmp_path):
    """A fresh, empty results database on each backend: an SQLite path or a PostgreSQL URL."""
    if request.param == "sqlite":
        yield str(tmp_path / "results.db")
        return
    server = request.getfixturevalue("pg_server")
    name = server.create_db()
    try:
        yield server.url(name)
    finally:
        server.drop_db(name)
