"""Tests of clusterbench.store.postgres: postgreSQL."""

from __future__ import annotations

import pytest

from clusterbench.errors import StoreError
from clusterbench.store import postgres
from clusterbench.store.location import parse

psycopg = pytest.importorskip("psycopg")


@pytest.fixture
def attempts(monkeypatch):
    """connect fails with the errors queued, then gives a stand-in connection; sleeps are counted."""
    queued: list[BaseException] = []
    calls: list[str] = []
    monkeypatch.setattr(postgres.time, "sleep", lambda s: calls.append("sleep"))

    def connect(url, **kw):
        calls.append("connect")
        if queued:
            raise queued.pop(0)
        return object()

    monkeypatch.setattr(psycopg, "connect", connect)
    return queued, calls


def test_a_server_shutting_down_is_tried_again(attempts) -> None:
    queued, calls = attempts
    queued.append(psycopg.errors.lookup("57P01")("terminating connection due to administrator command"))
    backend = postgres.PostgresBackend.connect(parse("postgresql://cb@retry-host-a/cb"))
    assert backend.conn is not None and calls == ["connect", "sleep", "connect"]


def test_a_dropped_database_is_not_waited_for(attempts) -> None:
    queued, calls = attempts
    queued.append(psycopg.errors.lookup("57P04")("database dropped"))
    with pytest.raises(StoreError, match="database dropped"):
        postgres.PostgresBackend.connect(parse("postgresql://cb@retry-host-b/cb"))
    assert calls == ["connect"]
