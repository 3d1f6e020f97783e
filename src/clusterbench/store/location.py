"""Where the results live: a ``--db`` value (a file path or a database URL) made into a
``Location``, and the password stripping every stored or printed URL goes through.

A value with ``scheme://`` is always a URL, never a path: ``postgresql://`` and
``postgres://`` go to PostgreSQL, ``sqlite:///ABSOLUTE/PATH`` names an SQLite file, and any
other scheme is refused. Everything else is an SQLite file path.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from clusterbench.errors import UsageError

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
PG_SCHEMES = ("postgresql", "postgres")
SCHEMES = (*PG_SCHEMES, "sqlite")
EXAMPLE_URL = "postgresql://USER@HOST:5432/DBNAME"

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# A URL inside free text (a command word, a JSON document): up to whitespace or a quote.
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")


@dataclass(frozen=True)
class Location:
    kind: str                 # SQLITE or POSTGRESQL
    display: str              # what messages and stored records show: never a password
    path: Path | None = None  # SQLite only
    url: str = ""             # PostgreSQL only: as given, password included; never print it
    has_password: bool = False


def default_db_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "clusterbench" / "results.db"


def parse(value: str | os.PathLike[str] | None) -> Location:
    """The location a ``--db`` value names; None means ``CLUSTERBENCH_DB`` or the default file.
    An empty value is an error, never the default file: a script whose variable came out empty
    must not write to (or read from) the user's own database."""
    if value is None:
        value = os.environ.get("CLUSTERBENCH_DB")
        if value == "":
            raise UsageError("CLUSTERBENCH_DB is empty: set it to a file path or a database URL, or unset it "
                             "for the default database")
        value = value or default_db_path()
    if value == "":
        raise UsageError("the database path is empty: give a file path or a database URL")
    if isinstance(value, os.PathLike):
        return _sqlite(Path(value))
    m = _SCHEME.match(value)
    if not m:
        return _sqlite(Path(value))
    scheme = m.group(1).lower()
    if scheme in PG_SCHEMES:
        return _postgres(value)
    if scheme == "sqlite":
        parts = urlsplit(value)
        if parts.netloc or not parts.path:
            raise UsageError(f"invalid SQLite URL {strip_password(value)!r}: "
                             "use sqlite:///ABSOLUTE/PATH (three slashes) or a plain file path")
        return _sqlite(Path(unquote(parts.path)))
    raise UsageError(f"unsupported database URL scheme {scheme}:// in {strip_password(value)!r}: "
                     f"use a file path, sqlite:///PATH or {EXAMPLE_URL} (also postgres://)")


def _sqlite(path: Path) -> Location:
    # a file name need not be UTF-8: messages and stored records show its other bytes escaped
    # (\xff), since no database stores, and not every terminal prints, the surrogates Python
    # keeps them as
    return Location(SQLITE, display=os.fsencode(path).decode("utf-8", "backslashreplace"), path=path)


def _postgres(url: str) -> Location:
    parts = urlsplit(url)
    userinfo, at, _ = parts.netloc.rpartition("@")
    in_query = any(k == "password" for k, _ in parse_qsl(parts.query, keep_blank_values=True))
    has_password = (bool(at) and ":" in userinfo) or in_query
    return Location(POSTGRESQL, display=strip_password(url), url=url, has_password=has_password)


def strip_password(url: str) -> str:
    """The URL without a password in its user part or its query (``?password=``)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL after all (an odd word in free text): leave it alone
        return url
    netloc = parts.netloc
    userinfo, at, hosts = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}@{hosts}"
    query = parts.query
    pairs = parse_qsl(query, keep_blank_values=True)
    if any(k == "password" for k, _ in pairs):
        query = urlencode([(k, v) for k, v in pairs if k != "password"], safe="/:")
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact(text: str) -> str:
    """``text`` with every URL in it stripped of its password (stored commands, metadata)."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: strip_password(m.group(0)), text)


def for_other_hosts(value: str | None) -> str | None:
    """A ``--db`` value to hand to ranks on other hosts: an absolute path, or the URL without its
    password (a password on their command lines would show in every process list; ranks
    authenticate with a passfile, e.g. ``--env PGPASSFILE=...``)."""
    if not value:
        return value
    loc = parse(value)
    return str(loc.path.resolve()) if loc.kind == SQLITE and loc.path else loc.display
