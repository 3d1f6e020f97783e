"""Tests of clusterbench.store.location: where the results live."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pg_fixtures import SECRET

from clusterbench.errors import UsageError
from clusterbench.store import describe
from clusterbench.store.location import (
    POSTGRESQL,
    SQLITE,
    for_other_hosts,
    parse,
    redact,
    strip_password,
)


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


def test_paths_and_sqlite_urls_are_files(tmp_path, monkeypatch):
    assert parse(str(tmp_path / "r.db")).path == tmp_path / "r.db"
    assert parse(tmp_path / "r.db").kind == SQLITE
    assert parse("sqlite:///srv/cb/results.db").path == Path("/srv/cb/results.db")
    assert parse("sqlite:///srv/my%20results.db").path == Path("/srv/my results.db")
    assert parse("weird:name.db").kind == SQLITE  # a colon without // is a file name
    monkeypatch.setenv("CLUSTERBENCH_DB", "postgresql://cb@db1/cb")
    assert parse(None).kind == POSTGRESQL and describe(None) == "postgresql://cb@db1/cb"
    monkeypatch.delenv("CLUSTERBENCH_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert parse(None).path == tmp_path / "clusterbench" / "results.db"


@pytest.mark.parametrize("url", ["postgresql://cb@db1:5432/cb", "postgres://cb@db1/cb",
                                 "POSTGRESQL://cb@db1/cb", "postgresql://cb@db1,db2:5433/cb?sslmode=verify-full"])
def test_postgres_urls(url):
    where = parse(url)
    assert where.kind == POSTGRESQL and where.url == url and where.display == url and not where.has_password


@pytest.mark.parametrize("url", ["mysql://u@h/db", "http://h/x", "file:///tmp/x.db", "sqlite://host/x.db"])
def test_other_schemes_are_refused_in_one_line(url):
    with pytest.raises(UsageError) as e:
        parse(url)
    assert "\n" not in str(e.value)
    if not url.startswith("sqlite"):
        assert "postgresql://" in str(e.value) and "sqlite:///" in str(e.value)


@pytest.mark.parametrize("url,clean", [
    ("postgresql://cb:s3cret@db1:5432/cb", "postgresql://cb@db1:5432/cb"),
    ("postgres://cb:p%40ss@db1/cb?sslmode=require", "postgres://cb@db1/cb?sslmode=require"),
    ("postgresql://cb@db1/cb?password=s3cret&sslmode=require&sslrootcert=/etc/ca.pem",
     "postgresql://cb@db1/cb?sslmode=require&sslrootcert=/etc/ca.pem"),
    ("postgresql://cb@db1/cb", "postgresql://cb@db1/cb"),
])
def test_password_stripping(url, clean):
    assert strip_password(url) == clean
    where = parse(url)
    assert where.display == clean and where.url == url and where.has_password == (url != clean)
    assert redact(f"--db={url} and more") == f"--db={clean} and more"


def test_ranks_on_other_hosts_get_no_password(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert for_other_hosts("postgresql://cb:s3cret@db1/cb") == "postgresql://cb@db1/cb"
    assert for_other_hosts("rel.db") == str(tmp_path / "rel.db")
    assert for_other_hosts(None) is None


def test_a_missing_directory_is_found_except_for_the_default_database(tmp_path, monkeypatch):
    from clusterbench.store.location import default_db_path, missing_directory

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    typo = tmp_path / "no" / "dir" / "x.db"
    assert missing_directory(parse(str(typo))) == typo.parent
    assert missing_directory(parse(f"sqlite://{typo}")) == typo.parent
    assert missing_directory(parse(str(tmp_path / "x.db"))) is None        # its directory is there
    assert missing_directory(parse(None)) is None                           # the default: made
    assert missing_directory(parse(str(default_db_path()))) is None         # named, still the default
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert missing_directory(parse(str(blocker / "x.db"))) is None   # there, not a directory: open says so
    assert missing_directory(parse("postgresql://cb@db1/cb")) is None
