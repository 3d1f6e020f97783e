"""Where the results live: a ``--db`` value (a file path or a database URL) made into a
``Location``, and the password stripping every stored or printed URL goes through.

A value with ``scheme://`` is always a URL, never a path: ``postgresql://`` and
``postgres://`` go to PostgreSQL, ``sqlite:///ABSOLUTE/PATH`` names an SQLite file, and any
other scheme is refused. Everything else is an SQLite file path.
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from clusterbench.errors import UsageError
from clusterbench.printable import not_utf8, undecodable_escaped

SQLITE = "sqlite"
POSTGRESQL = "postgresql"
PG_SCHEMES = ("postgresql", "postgres")
SCHEMES = (*PG_SCHEMES, "sqlite")
EXAMPLE_URL = "postgresql://USER@HOST:5432/DBNAME"

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# A URL inside free text (a command word, a JSON document): a whole JSON string (a password may
# hold a space or an escaped quote), else up to whitespace, a double quote or an angle bracket
# (a single quote may be in a password; one that closes a quoted URL is kept as it is).
_URL_IN_JSON = re.compile(r'(?<=")[A-Za-z][A-Za-z0-9+.-]*://(?:[^"\\]|\\.)*(?=")')
_URL_IN_TEXT = re.compile(r'[A-Za-z][A-Za-z0-9+.-]*://(?:[^\s"<>\\]|\\.)+')


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


def missing_directory(where: Location) -> Path | None:
    """The directory of an SQLite database that does not exist, and that a writer must not make:
    a mistyped ``--db /nonexistent/dir/x.db`` would otherwise leave directories behind. Only the
    default database's directory is made (the first run on a machine), whether the default comes
    by itself or is named (launchers hand it to their ranks as ``--db``). None when there is
    nothing missing, or nothing to check (PostgreSQL, ``:memory:``)."""
    if where.kind != SQLITE or where.path is None or str(where.path) == ":memory:":
        return None
    parent = where.path.parent
    if os.path.isdir(parent) or os.path.abspath(where.path) == os.path.abspath(default_db_path()):
        return None
    return parent if not os.path.lexists(parent) else None   # a file there says so when opened


def missing_directory_text(where: Location, directory: Path) -> str:
    shown = os.fsencode(directory).decode("utf-8", "backslashreplace")
    try:
        os.stat(directory)
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:   # no directory could be made there: say why
            return f"database {where.display}: {e.strerror}"
    return (f"the directory of database {where.display} does not exist ({shown}): create it first, "
            "or check the path (only the default database's directory is created)")


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
    if not_utf8(url):
        # libpq takes only text; what of the URL the shell gave as bytes cannot be shown either
        raise UsageError(f"the database URL {undecodable_escaped(strip_password(url))!r} is not UTF-8 text: "
                         "percent-encode its other bytes (%FF)")
    parts = _split(url)
    assert parts is not None   # parse() saw the scheme
    if "@" in parts.hosts.partition("/")[0] or "?" in (parts.user or "") \
            or (parts.user is None and strip_password(url) != _without_password(url)):
        # libpq would read a host, a port or a user name out of a password here (it cuts at the
        # first "@", and a "/" ends the user part), so the URL means what it seems to mean
        # nowhere; it is not shown, since which part is the password is the very question
        raise UsageError("the PostgreSQL URL cannot be read as it is meant: percent-encode an '@', ':', '/' "
                         "or '?' inside a user name, password or database name (%40, %3A, %2F, %3F)")
    has_password = parts.password is not None or parts.query_password
    return Location(POSTGRESQL, display=strip_password(url), url=url, has_password=has_password)


# Query keys whose value is a secret: libpq's ``password`` and ``sslpassword`` (of the client
# key). libpq percent-decodes keys and takes them case-sensitively; a key spelled in other case
# is refused by libpq, in a message that quotes it, so it is hidden too.
_SECRET_KEYS = ("password", "sslpassword")


@dataclass(frozen=True)
class _Parts:
    """A URL cut where libpq cuts it (``conninfo_uri_parse_options``), as text: the user part is
    what precedes the first ``@`` that comes before any ``/`` (so ``?`` and ``#`` may be in a
    password), the query follows the first ``?`` after the hosts, and there is no fragment."""
    head: str            # scheme://
    user: str | None     # the user part without its password; None: no ``@``
    password: str | None
    hosts: str           # hosts, ports and the database, as given
    query: str | None    # after ``?``; None: no ``?``

    @property
    def query_password(self) -> bool:
        return any(_is_secret(item) for item in (self.query or "").split("&"))


def _is_secret(item: str) -> bool:
    return unquote(item.partition("=")[0]).lower() in _SECRET_KEYS


def _split(url: str) -> _Parts | None:
    m = _SCHEME.match(url)
    if not m:
        return None
    head, rest = url[:m.end()], url[m.end():]
    user = password = None
    cut = len(rest)
    for i, ch in enumerate(rest):
        if ch in "@/":
            cut = i
            break
    if cut < len(rest) and rest[cut] == "@":
        user, colon, secret = rest[:cut].partition(":")
        password = secret if colon else None
        rest = rest[cut + 1:]
    hosts, mark, query = rest.partition("?")
    return _Parts(head, user, password, hosts, query if mark else None)


def _join(parts: _Parts) -> str:
    text = parts.head
    if parts.user is not None:
        text += parts.user + (f":{parts.password}" if parts.password is not None else "") + "@"
    text += parts.hosts
    if parts.query is not None:
        text += "?" + parts.query
    return text


def _without_password(url: str) -> str | None:
    """``url`` as libpq reads it, less its password and ``sslpassword``, every other character
    kept as given (a re-encoded query would change what libpq reads: ``+`` is no space to it)."""
    parts = _split(url)
    if parts is None:
        return None
    query = parts.query
    if query is not None:
        kept = [item for item in query.split("&") if not _is_secret(item)]
        query = "&".join(kept) if kept else None
    return _join(_Parts(parts.head, parts.user, None, parts.hosts, query))


def strip_password(url: str) -> str:
    """The URL without a password in its user part or its query (``?password=``), for messages
    and stored records. Beyond what libpq reads as a password, a ``:`` before a later ``@`` of
    the hosts part hides what lies between them: a password holding an unencoded ``/``
    (``cb:a/b@db1``), which libpq reads as a host and a port, must not show either."""
    clean = _without_password(url)
    if clean is None:
        return url
    parts = _split(clean)
    if parts is None or parts.head[:-3].lower() not in PG_SCHEMES:
        return clean
    at = parts.hosts.rfind("@")
    if parts.user is None and at >= 0 and ":" in parts.hosts[:at]:
        hosts = parts.hosts[:parts.hosts.index(":")] + parts.hosts[at:]
        clean = _join(_Parts(parts.head, None, None, hosts, parts.query))
    return clean


def secrets_of(url: str) -> list[str]:
    """The password texts in ``url`` (as given and percent-decoded), longest first: what a
    message that quotes part of the URL (libpq's own, on a URL it refuses) must not show."""
    parts = _split(url)
    if parts is None:
        return []
    found = [parts.password] if parts.password else []
    found += [item.partition("=")[2] for item in (parts.query or "").split("&") if _is_secret(item)]
    found += [unquote(s, errors="replace") for s in found]
    return sorted({s for s in found if s}, key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with every URL in it stripped of its password (stored commands, metadata)."""
    if "://" not in text:
        return text
    text = _URL_IN_JSON.sub(lambda m: strip_password(m.group(0)), text)
    return _URL_IN_TEXT.sub(lambda m: strip_password(m.group(0)), text)


def for_other_hosts(value: str | None) -> str | None:
    """A ``--db`` value to hand to ranks on other hosts: an absolute path, or the URL without its
    password (a password on their command lines would show in every process list; ranks
    authenticate with a passfile, e.g. ``--env PGPASSFILE=...``)."""
    if not value:
        return value
    loc = parse(value)
    if loc.kind == SQLITE and loc.path:
        return str(loc.path.resolve())
    # as libpq reads it, less the password: ranks connect with it, so nothing else may change
    return _without_password(loc.url) or loc.display
