"""A run's row in ``runs``: the columns written, how its fields are encoded in them (JSON, with
any password in a URL taken out) and how they read back."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from clusterbench.errors import StoreError
from clusterbench.records import Run
from clusterbench.store import location as loc
from clusterbench.store.migrations import derived_uid

RUN_WRITE_COLS = ("uid", "benchmark", "source", "command", "started_at", "ended_at", "status",
                  "hosts", "ranks", "devices", "versions", "env", "errors", "meta")
# what a run is read from, and what a uid is derived from when none is stored (``uid_of_row``)
RUN_COLS = ("id, benchmark, source, command, started_at, ended_at, status, hosts, ranks,"
            " devices, versions, env, errors, meta")
UID_COLS = f"uid, id, {', '.join(RUN_WRITE_COLS[1:])}"

_ENCODE = json.JSONEncoder(default=str).encode   # json.dumps(value, default=str), without a new encoder per call
_dumps = json.JSONEncoder().encode


def _clean(value: Any) -> str:
    """JSON for a stored column, with any password in a URL taken out (a ``--db`` URL in the
    command line, an error message that quotes one)."""
    return loc.redact(_ENCODE(value)) if value else _ENCODE(value)


def run_values(run: Run, uid: str) -> tuple[Any, ...]:
    """The values of ``RUN_WRITE_COLS`` for ``run`` stored under ``uid``."""
    return (uid, run.benchmark, run.source, loc.redact(_dumps(run.command)), run.started_at,
            run.ended_at, run.status, _dumps(run.hosts), run.ranks, _dumps(run.devices),
            _dumps(run.versions), _clean(run.env), _clean(run.errors), _clean(run.meta))


def uid_of_row(row: Sequence[Any]) -> str:
    """The uid of a run from its ``UID_COLS``. A run stored without one (before migration 0004,
    or after it by a clusterbench that did not know uids yet) gets one derived from its id and
    what is stored of it: the same whenever it is read, in every copy of the file, so copying it twice
    stores it once, as with a stored uid; and two different runs never share one."""
    uid, *stored = row
    return str(uid) if uid is not None else derived_uid(stored)


# What each JSON column of a run holds (records.Run): anything else came from elsewhere.
_FIELD_SHAPES: dict[str, type] = {"command": list, "hosts": list, "devices": list, "versions": dict,
                                  "env": dict, "errors": list, "meta": dict}
_JSON_KINDS = {dict: "object", list: "list", str: "string", int: "number", float: "number", bool: "boolean",
               type(None): "null"}


def read_text(value: Any) -> str:
    """A text column as stored. SQLite keeps any type in any column: a value put in by hand as
    bytes (``x'ff00'``) or a number is shown as text, its bytes that are not UTF-8 and a NUL
    escaped (``\\xff\\x00``), never handed on as bytes (every printer and report expects
    text). ``results copy`` refuses such a value instead (``Store.non_text_tags``): the escape
    is how it is shown, not what is stored."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "backslashreplace").replace("\x00", "\\x00")
    return "" if value is None else str(value)


def read_field(where: str, run_id: int, name: str, text: Any) -> Any:
    """A run's JSON column as stored, in the database ``where`` names. A database may come from
    anywhere (``results copy --from``): a column this clusterbench never wrote is a StoreError
    naming the run, as unreadable measurements are, not an internal error."""
    try:
        value = json.loads(text)
        shape = _FIELD_SHAPES[name]
        if isinstance(value, shape):
            return value
        why = f"a JSON {_JSON_KINDS.get(type(value), 'value')}, not {'an object' if shape is dict else 'a list'}"
    except RecursionError:   # nested thousands deep: Python's parser gives up
        why = f"nested more than {sys.getrecursionlimit()} levels deep"
    except ValueError as e:
        why = f"not JSON ({e})"
    except TypeError:   # SQLite keeps any type in any column
        why = "empty (NULL)" if text is None else f"a {type(text).__name__}, not JSON text"
    raise StoreError(f"results database {where}: run {run_id}: unreadable {name}: {why}")
