"""Shared fixtures."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "helpers"))

from judge_helpers import SEED_LOGS  # noqa: E402
from paths import DATA  # noqa: E402
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
    """A fresh, empty results database on each backend: an SQLite path or a PostgreSQL URL (a
    system test: it needs the server)."""
    if request.param == "sqlite":
        yield str(tmp_path / "results.db")
        return
    server = request.getfixturevalue("pg_server")
    name = server.create_db()
    try:
        yield server.url(name)
    finally:
        server.drop_db(name)


@pytest.fixture
def seed_db(db):
    """The MI300X guide's own tool outputs (tests/data), imported into ``db`` with tag seed=mi300x."""
    from clusterbench.ingest import parse_text
    from clusterbench.store import Store

    with Store.open(db) as store:
        for tool, fname in SEED_LOGS:
            text = (DATA / tool / fname).read_text()
            for imported in parse_text(text, tool=tool, name=fname):
                imported.run.tags["seed"] = "mi300x"
                store.save_run(imported.run, imported.measurements)
    return db
