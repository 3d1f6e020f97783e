"""clusterbench's own ``--json`` output, read back: ``kubectl logs POD | clusterbench import -``.

The lines (see ``clusterbench.report.jsonl``) are ``{"kind": "measurement", "run": N, ...}``
per measurement and, after a run's measurements, ``{"kind": "run", "id": N, ...}`` with the
whole run record. Logs add things around them, which this parser undoes:

- a prefix before the object (``node1: `` from pdsh, ``[pod/x/pytorch] `` from
  ``kubectl logs --prefix``, a timestamp, an MPI output tag) is skipped: the object starts at a
  ``{`` of the line;
- lines that are not such an object (torchrun's warnings, pip's output, the ``# run N stored``
  line, other JSON) are ignored;
- measurements belong to the next run line with the same run id, so the output of several runs
  or several pods, one after another, splits into its runs; measurements whose run line never
  came (a pod killed while printing) become one run marked incomplete;
- lines without ``"kind"`` that have exactly the measurement fields, as clusterbench printed
  them before the run line existed, are measurements too.

The run record is kept as it was (benchmark, command, times, status, hosts, devices, versions,
env, tags, errors, meta); only its source says it was imported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from clusterbench.ingest.common import (
    IMPORT_BENCHMARK,
    ImportedRun,
    LogFormatError,
    finite,
    not_utf8_in,
    shown,
    text_lines,
)
from clusterbench.ingest.registry import Importer
from clusterbench.records import INCOMPLETE, RUN_STATUSES, Measurement, Run

TOOL = "clusterbench-jsonl"
MEASUREMENT_FIELDS = ("run", "benchmark", "metric", "value", "unit", "params")
_MAX_TRIES = 4                # '{' positions tried per line: a prefix rarely has more than one
_DECODER = json.JSONDecoder()
_MAX_RANKS = 2**63 - 1        # the largest integer the stores hold


def _object_in(line: str) -> dict[str, Any] | None:
    """The clusterbench record on this line, after whatever prefix, or None."""
    start = line.find("{")
    for _ in range(_MAX_TRIES):
        if start < 0:
            return None
        try:
            obj, _end = _DECODER.raw_decode(line, start)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and _kind(obj) is not None:
            return obj
        start = line.find("{", start + 1)
    return None


def _kind(obj: dict[str, Any]) -> str | None:
    kind = obj.get("kind")
    if kind in ("measurement", "run"):
        return kind
    if kind is None and tuple(obj) == MEASUREMENT_FIELDS:
        return "measurement"
    return None


def _measurement(obj: dict[str, Any], where: str) -> Measurement:
    value = obj.get("value")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise LogFormatError(f"{where}: measurement value {shown(value)} is not a number")
    if finite(value) is None:   # JSON's 1e999 and Infinity decode to inf; no float holds 400 digits
        raise LogFormatError(f"{where}: measurement value {shown(value)} is not a finite number")
    if not isinstance(obj.get("run"), (int, type(None))):
        raise LogFormatError(f"{where}: measurement field 'run' is {shown(obj.get('run'))}, not a run id")
    for key in ("benchmark", "metric", "unit"):
        if not isinstance(obj.get(key), str):
            raise LogFormatError(f"{where}: measurement field {key!r} is missing or not text")
    params = obj.get("params") or {}
    if not isinstance(params, dict):
        raise LogFormatError(f"{where}: measurement params are not an object")
    return Measurement(obj["benchmark"], obj["metric"], value, obj["unit"], dict(params))


# Run record fields and the JSON type each must have.
_RUN_TYPES: dict[str, type | tuple[type, ...]] = {
    "benchmark": str, "source": str, "command": list, "started_at": str, "ended_at": (str, type(None)),
    "status": str, "hosts": list, "ranks": int, "devices": list, "versions": dict, "env": dict,
    "tags": dict, "errors": list, "meta": dict,
}
_TEXT_LISTS = ("command", "hosts", "devices", "errors")   # what reports join and print as text
_TEXT_MAPS = ("versions", "env")


def _iso_time(text: str) -> bool:
    """Whether ``text`` is a time as runs store it (``2026-11-23T18:13:34.099Z``) or another
    ISO 8601 form ``datetime.fromisoformat`` reads (a trailing Z included, on any Python)."""
    try:
        datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        return False
    return True


def _run(obj: dict[str, Any], name: str, where: str) -> Run:
    for key, typ in _RUN_TYPES.items():
        if key not in obj or not isinstance(obj[key], typ):
            raise LogFormatError(f"{where}: run field {key!r} is missing or of the wrong type")
    if obj["status"] not in RUN_STATUSES:
        raise LogFormatError(f"{where}: unknown run status {obj['status']!r}")
    for key in ("started_at", "ended_at"):
        if obj[key] is not None and not _iso_time(obj[key]):
            raise LogFormatError(f"{where}: run field {key!r} is {shown(obj[key])}, not an ISO 8601 time")
    if not 0 <= obj["ranks"] <= _MAX_RANKS:
        raise LogFormatError(f"{where}: run field 'ranks' is out of range")
    if not isinstance(obj.get("id"), (int, type(None))):
        raise LogFormatError(f"{where}: run field 'id' is {shown(obj.get('id'))}, not a run id")
    for key in _TEXT_LISTS:
        if not all(isinstance(x, str) for x in obj[key]):
            raise LogFormatError(f"{where}: run field {key!r} is not a list of text")
    for key in _TEXT_MAPS:
        if not all(isinstance(x, str) for x in obj[key].values()):
            raise LogFormatError(f"{where}: run field {key!r} does not map names to text")
    original = f" (run {obj['id']})" if isinstance(obj.get("id"), int) else ""
    source = f"{obj['source'] or 'clusterbench'}, imported from {name or 'JSON lines'}{original}"
    return Run(
        benchmark=obj["benchmark"], command=list(obj["command"]), source=source,
        started_at=obj["started_at"], ended_at=obj["ended_at"], status=obj["status"],
        hosts=list(obj["hosts"]), ranks=obj["ranks"], devices=list(obj["devices"]),
        versions=dict(obj["versions"]), env=dict(obj["env"]),
        tags={str(k): str(v) for k, v in obj["tags"].items()},
        errors=list(obj["errors"]), meta=dict(obj["meta"]),
    )


def _refuse_surrogates(obj: dict[str, Any], where: str) -> None:
    for key, value in obj.items():
        found = not_utf8_in([key, value])
        if found is not None:
            raise LogFormatError(f"{where}: not UTF-8 text: {shown(found)} in field {shown(key)}")


def _orphans(measurements: list[Measurement], run_id: Any, name: str) -> ImportedRun:
    """Measurements whose run line never came: kept, in a run that says so."""
    run = Run(benchmark=IMPORT_BENCHMARK, source=f"clusterbench, imported from {name or 'JSON lines'}",
              status=INCOMPLETE)
    label = f"run {run_id}" if run_id is not None else "a run"
    run.errors.append(f"the output ends before the record of {label}: only its measurements were found")
    return ImportedRun(run, measurements)


def iter_parse(lines: Iterable[str], name: str = "") -> Iterator[ImportedRun]:
    """Runs as their run lines arrive (a log given as lines, e.g. a pipe, is streamed)."""
    pending: dict[Any, list[Measurement]] = {}
    for n, line in enumerate(lines, 1):
        obj = _object_in(line) if "{" in line else None
        if obj is None:
            continue
        where = f"line {n}"
        # a lone surrogate can only come from a JSON escape: text read from a file holds U+FFFD
        # where its bytes were not UTF-8
        if "\\u" in line:
            _refuse_surrogates(obj, where)
        if _kind(obj) == "measurement":
            m = _measurement(obj, where)   # checks the run id before it is a key
            pending.setdefault(obj.get("run"), []).append(m)
        else:
            run = _run(obj, name, where)
            yield ImportedRun(run, pending.pop(obj.get("id"), []))
    for run_id, ms in pending.items():
        yield _orphans(ms, run_id, name)


def parse(text: str, name: str = "") -> list[ImportedRun]:
    """Every run in ``text`` (see the module's docstring); [] when it holds none."""
    return list(iter_parse(text_lines(text), name))


IMPORTERS = (
    # first: clusterbench's own lines may hold any other tool's words in their params and meta
    Importer(TOOL, re.compile(r'\{"kind": "(measurement|run)", |\{"run": (\d+|null), "benchmark": "[^"]*", "metric": '),
             lambda lines, name, head: iter_parse(lines, name), order=0, streams=True),
)
