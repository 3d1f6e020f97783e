"""clusterbench's own ``--json`` output, read back: ``kubectl logs POD | clusterbench import -``.

The lines (see ``clusterbench.report.jsonl``) are ``{"kind": "measurement", "run": N, ...}``
per measurement and, after a run's measurements, ``{"kind": "run", "id": N, ...}`` with the
whole run record. Logs add things around them, which this parser undoes:

- a prefix before the object (``node1: `` from pdsh, ``[pod/x/pytorch] `` from
  ``kubectl logs --prefix``, a timestamp, an MPI output tag) is skipped: the object starts at a
  ``{`` of the line;
- lines that are not such an object (torchrun's warnings, pip's output, the ``# run N stored``
  line, other JSON) are ignored;
- measurements belong to the next run line with the same run id and the same origin (the prefix
  before the object, its time stamps left out: ``gpu01: ``, ``[pod/a/c] ``), so the output of
  several runs or several pods, one after another, splits into its runs, and so do the
  interleaved lines of several hosts that pdsh or ``kubectl logs --prefix`` marked, even where
  each printed the same run id (each host its own database); a run line whose origin has no
  measurements takes those of its id from every origin (a log whose prefixes differ from line
  to line); measurements whose run line never came (a pod killed while printing) become one run
  marked incomplete;
- one run id with run lines of different contents is two runs: their measurements must be told
  apart by the above, and an import is refused, in one line naming the run id and the lines,
  where they cannot: the run lines took measurements of several origins, measurements the same
  in every field but the value (two processes running the same benchmark), or another number
  of measurements than the run line says it has;
- lines without ``"kind"`` that have exactly the measurement fields, as clusterbench printed
  them before the run line existed, are measurements too.

The run record is kept as it was (benchmark, command, times, status, hosts, devices, versions,
env, tags, errors, meta); only its source says it was imported.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import compress, repeat
from typing import Any

from clusterbench.families.headline import headline_metric, headline_records
from clusterbench.ingest.common import (
    IMPORT_BENCHMARK,
    ImportedRun,
    LogFormatError,
    finite,
    line_blocks,
    not_utf8_in,
    shown,
    text_lines,
)
from clusterbench.jsontext import compact, json_compact, loads
from clusterbench.records import INCOMPLETE, RUN_STATUSES, Measurement, Run
from clusterbench.store.packs import ROWS, Pack, Packs

TOOL = "clusterbench-jsonl"
MEASUREMENT_FIELDS = ("run", "benchmark", "metric", "value", "unit", "params")
_MAX_TRIES = 4                # '{' positions tried per line: a prefix rarely has more than one


class _DuplicateKey(Exception):
    """A line's object gives one key twice (``"value": 5, "value": 500``)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        raise _DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))   # type: ignore[func-returns-value]
    return obj


# clusterbench writes each key once: one given twice (json.loads keeps the last silently) is a
# line edited or joined by hand, whose value cannot be known, so it is refused, as a profile's
# key given twice is. (Tools' own JSON is read as they write it: iperf3 3.12 gives
# "sock_bufsize" twice in test_start.)
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)
_MAX_RANKS = 2**63 - 1        # the largest integer the stores hold
# times as kubectl --timestamps and log collectors write them (ISO 8601, syslog's "Jan  2
# 03:04:05", a bare time of day), bracketed or not
_TIME_STAMP = re.compile(r"\[?(?:\d{4}-\d\d-\d\d[T ]|[A-Z][a-z]{2} +\d{1,2} )?\d\d:\d\d:\d\d(?:[.,]\d+)?"
                         r"(?:Z|[+-]\d\d:?\d\d)?\]?")
_SHOWN_RANGES = 6             # line ranges a refusal names before "..."


def _object_in(line: str) -> tuple[dict[str, Any], str] | None:
    """The clusterbench record on this line, after whatever prefix, and the line's origin (see
    ``_origin``); or None."""
    start = line.find("{")
    for _ in range(_MAX_TRIES):
        if start < 0:
            return None
        try:
            obj, _end = _DECODER.raw_decode(line, start)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and _kind(obj) is not None:
            return obj, _origin(line[:start])
        start = line.find("{", start + 1)
    return None


def _origin(prefix: str) -> str:
    """Which writer a line came from, as the prefix before its object says (``gpu01:`` from
    pdsh, ``[pod/a/c]`` from ``kubectl logs --prefix``, an MPI tag); "" without one. Time stamps
    differ on every line of one writer, so they are no part of it; nor is a byte order mark (a
    file appended to another keeps its own) or a control character a terminal left."""
    prefix = "".join(c for c in prefix if c != "\ufeff" and (c.isprintable() or c.isspace()))
    if not prefix:
        return ""
    return " ".join(_TIME_STAMP.sub(" ", prefix).split())


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
    "status": str, "hosts": list, "ranks": (int, type(None)), "devices": list, "versions": dict, "env": dict,
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
    if obj["ranks"] is not None and not 0 <= obj["ranks"] <= _MAX_RANKS:
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


def _orphans(waiting: _Pending, run_id: Any, origin: str, name: str, valid: _ValidTexts) -> ImportedRun:
    """Measurements whose run line never came: kept, in a run that says so."""
    run = Run(benchmark=IMPORT_BENCHMARK, source=f"clusterbench, imported from {name or 'JSON lines'}",
              status=INCOMPLETE)
    label = f"run {run_id}" if run_id is not None else "a run"
    behind = f" (lines behind {origin!r})" if origin else ""
    run.errors.append(f"the output ends before the record of {label}{behind}: only its measurements were found")
    return waiting.imported(run, valid)


# A measurement as read: benchmark, metric, value, unit, params (None: not decoded yet, a line of
# clusterbench's own format) and the params' JSON text (the pack's, written once per distinct one).
_Read = tuple[str, str, float, str, "dict[str, Any] | None", str]
_Key = tuple[str, Any]   # origin, run id


@dataclass
class _Pending:
    """The measurements of one run id and origin that wait for their run line."""

    key: _Key = ("", None)
    lines: list[int] = field(default_factory=list)
    records: list[_Read] = field(default_factory=list)
    raw: dict[int, str] = field(default_factory=dict)   # the lines of records not decoded yet
    stretches: list[tuple[int, str]] = field(default_factory=list)   # more: (first line, their text)
    identities: set[tuple[str, str, str, str]] = field(default_factory=set)
    repeated: bool = False   # a measurement the same as an earlier one in all but its value
    negative: bool = False   # a value below zero, which the import may have to drop

    def add(self, n: int, record: _Read, identity: str) -> None:
        """A record; ``identity``: its params as they tell measurements apart (canonical JSON, or
        for a line of clusterbench's own format its params as printed)."""
        # one run never measures the same row twice (repeats and steps are params): a second
        # one is another process's
        ident = (record[0], record[1], record[3], identity)
        self.repeated = self.repeated or ident in self.identities
        self.identities.add(ident)
        self.lines.append(n)
        self.records.append(record)
        self.negative = self.negative or record[2] < 0

    def extend(self, first: int, text: str, benchmarks: Sequence[str], metrics: Sequence[str],
               values: list[float], units: Sequence[str], params: Sequence[str]) -> None:
        """The records of lines ``first`` on (``text``, one line each), of clusterbench's own
        format (their params as printed, not decoded yet): ``add`` for each, in bulk."""
        idents = set(zip(benchmarks, metrics, units, params))
        if len(idents) < len(values) or not self.identities.isdisjoint(idents):
            self.repeated = True
        self.identities |= idents
        numbers = range(first, first + len(values))
        self.lines += numbers
        self.records += zip(benchmarks, metrics, values, units, repeat(None), params)
        self.stretches.append((first, text))   # split into lines only if one is read again
        self.negative = self.negative or min(values) < 0

    def line(self, n: int) -> str:
        """The text of line ``n``, one of these records'."""
        if n in self.raw:
            return self.raw[n]
        first, text = next((f, t) for f, t in reversed(self.stretches) if f <= n)
        return text.split("\n")[n - first]

    def checked(self, valid: _ValidTexts, reread: Callable[[int, str], tuple[_Key, _Read, str] | None]) -> _Pending:
        """These records once every params text read as a JSON object: checked in one parse for
        the whole run. The lines whose text is not one are read again as any line is (``reread``),
        in their place: taken for another object of the line, or left out."""
        bad = valid.bad({r[5] for r in self.records if r[4] is None})
        if not bad:
            return self
        out = _Pending(self.key)
        for n, r in zip(self.lines, self.records):
            if r[4] is not None or r[5] not in bad:
                out.add(n, r, r[5] if r[4] is None else _canonical(r[4]))
                continue
            found = reread(n, self.line(n))
            if found is None:
                continue
            key, record, canonical = found
            if key != self.key:
                raise LogFormatError(f"line {n}: a measurement line whose params are not one object holds a "
                                     f"measurement of another run; import it on its own")
            out.add(n, record, canonical)
        return out

    @property
    def measurements(self) -> list[Measurement]:
        return [Measurement(b, m, v, u, dict(p) if p is not None else json.loads(t)) for b, m, v, u, p, t in self.records]

    def imported(self, run: Run, valid: _ValidTexts | None = None) -> ImportedRun:
        """The run with these measurements, packed as the store keeps them (no Measurement object
        made), or as Measurements where a value below zero may be dropped (``ImportedRun``)."""
        if self.negative or not self.records:
            return ImportedRun(run, self.measurements)
        # by columns, a C loop each: a run holds hundreds of records
        benchmarks, metrics, values, units, params, texts = zip(*self.records)
        keyed = list(zip(benchmarks, metrics, units))
        key_at = {k: i for i, k in enumerate(dict.fromkeys(keyed))}
        text_at = {t: i for i, t in enumerate(dict.fromkeys(texts))}
        rows = list(zip(map(key_at.__getitem__, keyed), map(text_at.__getitem__, texts), values))
        body = '{"k":' + compact(list(key_at)) + ',"p":[' + ",".join(text_at) + '],"r":' + compact(rows) + "}"
        pack = Pack(ROWS, len(rows), body, tuple(dict.fromkeys(k[0] for k in key_at)))
        # What the store indexes: the run's headline records (families.headline), chosen here
        # from those of a headline metric, their params decoded (in ``valid``, mostly). Only they
        # are handed on: a run read in a worker process crosses to the main process whole.
        heads = {k for k in key_at if k[1] == headline_metric(k[0])}
        picked = list(map(heads.__contains__, keyed))
        known = valid.known if valid is not None else {}
        candidates = [(b, m, v, u, p if p is not None else known.get(t) or json.loads(t))
                      for b, m, v, u, p, t in compress(self.records, picked)]
        return ImportedRun(run, packs=Packs([pack], headline_records(candidates)))


_canonical = json.JSONEncoder(sort_keys=True, default=str).encode   # json.dumps(p, sort_keys=True, default=str)


class _ValidTexts:
    """Params texts known to be one JSON object each, with the object: a log's runs repeat many."""

    LIMIT = 1 << 16

    def __init__(self) -> None:
        self.known: dict[str, dict[str, Any]] = {}

    def bad(self, texts: set[str]) -> set[str]:
        """Those of ``texts`` that are not one JSON object each; all of them are parsed at once."""
        new = [t for t in texts if t not in self.known]
        if not new:
            return set()
        if len(self.known) + len(new) > self.LIMIT:
            self.known.clear()
        text = "[" + ",".join(new) + "]"
        try:
            docs = loads(text)   # all at once, without a hook called for each object
        except (ValueError, RecursionError):
            docs = None
        # Each text one object, its keys each once, where (the usual case) every '{' is a text's
        # first character and every ':' one of a key. A text joined to the next one inside a
        # string or array cannot then be the object it seems: each object starts at a text's '{'
        # and ends before the next text's, where the only '}' is its own last character. And
        # every key of an object stands before a ':', so a key given twice leaves the object
        # fewer keys than there are of them. Any other text is decoded on its own, below, with
        # the keys checked as they come.
        if (isinstance(docs, list) and len(docs) == len(new) and text.count("{") == len(new)
                and all(type(d) is dict for d in docs) and text.count(":") == sum(map(len, docs))):
            self.known.update(zip(new, docs))
            return set()
        bad = set()
        for t in new:
            doc = _one_object(t)
            if doc is None:
                bad.add(t)
            else:
                self.known[t] = doc
        return bad


def _one_object(text: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(text, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError, _DuplicateKey):
        return None
    return doc if isinstance(doc, dict) else None


@dataclass
class _Record:
    """A run line already read, as far as telling runs of one id apart needs it."""

    line: int
    contents: bytes   # a digest of the record: a log may hold thousands, each with its env and meta
    measurement_lines: list[tuple[int, int]]   # first and last line of each stretch, the first few
    doubt: str   # why its measurements may be another run's too; "" where they cannot be


_REPEATED = "the same measurement came twice before one of them"


def _taken(pending: dict[_Key, _Pending], run_id: Any, origin: str, line: int,
           check: Callable[[_Pending], _Pending]) -> tuple[_Pending, str]:
    """The measurements the run line of ``run_id`` from ``origin`` takes, and the doubt about them."""
    # its own origin's; else, where the run line's prefix differs from its measurements' (or
    # from line to line), all of its id
    keys = [(origin, run_id)] if (origin, run_id) in pending else [key for key in pending if key[1] == run_id]
    if not keys:
        return _Pending(), ""
    if len(keys) == 1:
        one = check(pending.pop(keys[0]))
        return one, _REPEATED if one.repeated else ""
    groups = [check(pending.pop(key)) for key in keys]
    taken = _Pending()
    for n, r in sorted(((n, r) for g in groups for n, r in zip(g.lines, g.records)), key=lambda nr: nr[0]):
        taken.add(n, r, _canonical(r[4] if r[4] is not None else json.loads(r[5])))
    return taken, f"line {line}'s measurements are behind several prefixes, none its own"


def _merged(spans: Iterable[tuple[int, int]], most: int | None = None) -> list[tuple[int, int]]:
    """Line spans (first, last) in order, those that touch or overlap joined; the first ``most``
    of them (None: all)."""
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        elif most is not None and len(out) >= most:
            break
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _stretches(lines: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive line numbers as (first, last), at most ``_SHOWN_RANGES + 1`` of them: a
    refusal names no more."""
    if lines and lines[-1] - lines[0] + 1 == len(lines):   # one block of lines, the usual case
        return [(lines[0], lines[-1])]
    return _merged(((n, n) for n in lines), _SHOWN_RANGES + 1)


def _line_ranges(stretches: Iterable[tuple[int, int]]) -> str:
    """``1-4, 9, 12-20``: at most ``_SHOWN_RANGES`` of them, then ``...``."""
    spans = _merged(stretches)
    text = [f"{a}" if a == b else f"{a}-{b}" for a, b in spans[:_SHOWN_RANGES]]
    return ", ".join(text) + (", ..." if len(spans) > _SHOWN_RANGES else "")


@dataclass
class _Records:
    """The run lines of one run id so far, kept so that a new one is checked against them at once
    (fresh pods each print run 1: thousands of lines of one id), not against each in turn."""

    all: list[_Record] = field(default_factory=list)
    contents: set[bytes] = field(default_factory=set)          # of every record
    with_lines: set[bytes] = field(default_factory=set)        # of the records that took measurements
    doubtful: list[_Record] = field(default_factory=list)

    def add(self, record: _Record) -> None:
        self.all.append(record)
        self.contents.add(record.contents)
        if record.measurement_lines:
            self.with_lines.add(record.contents)
        if record.doubt:
            self.doubtful.append(record)


def _clashes(other: _Record, record: _Record) -> bool:
    """Whether two run lines of one id may have each other's measurements: different contents, a
    doubt, and a measurement to give to the wrong one (the same record twice is one run printed
    twice; without a doubt each run has its own)."""
    return (other.contents != record.contents and bool(other.doubt or record.doubt)
            and bool(other.measurement_lines or record.measurement_lines))


def _refuse_if_mixed(earlier: _Records, record: _Record, run_id: Any) -> None:
    """A LogFormatError where run lines of one id differ and a doubt says their measurements
    may be each other's: stored, they would be one run's rows in the other."""
    if record.doubt:
        others = earlier.contents if record.measurement_lines else earlier.with_lines
        # another contents than its own among them, without a copy of the set (thousands of runs of one id)
        clash = len(others) > (record.contents in others)
    else:
        clash = any(_clashes(other, record) for other in earlier.doubtful)
    if not clash:
        return
    other = next(o for o in earlier.all if _clashes(o, record))   # the first, as the lines came
    lines = other.measurement_lines + record.measurement_lines
    label = f"run {run_id}" if run_id is not None else "run null"
    raise LogFormatError(
        f"{label}: its run record is on lines {other.line} and {record.line} with different contents "
        f"({other.doubt or record.doubt}), so the measurements on lines {_line_ranges(lines)} "
        "cannot be told apart; import each process's output on its own, or keep the prefixes "
        "pdsh or kubectl logs --prefix put before its lines")


# clusterbench's own measurement line as report/jsonl.py prints it (json.dumps' separators, its
# keys in this order), texts without escapes: read by this expression, its params looked up.
_OWN_START = '{"kind": "measurement", "run": '
_TEXT = r'"([^"\\\x00-\x1f]*)"'   # a JSON string without escapes or control characters
_OWN_LINE = (r'\{"kind": "measurement", "run": (-?(?:0|[1-9][0-9]*)|null), "benchmark": ' + _TEXT
             + r', "metric": ' + _TEXT + r', "value": (-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?), '
             r'"unit": ' + _TEXT + r', "params": (\{.*\})\}')
_OWN = re.compile(_OWN_LINE + r"[ \t\r\n]*$")


# A stretch of such lines (each ending with its line feed) read at once: the same expression,
# anchored at each line's start, so that a line that is not one leaves a match short.
_OWN_ROWS = re.compile("^" + _OWN_LINE + r"[ \t\r]*\n", re.M)
# the line feed before a line that does not start as clusterbench's own measurement line
_NOT_OWN = re.compile(r"\n(?!" + re.escape(_OWN_START) + ")")
# no line is longer (ingest.MAX_LINE, which this module cannot import: the package reads it first)
MAX_LINE = 16 << 20


class RunLines:
    """The run lines of a log read so far, by run id: each new one is checked against those of
    its id (``_refuse_if_mixed``) as it is admitted."""

    def __init__(self) -> None:
        self.by_id: dict[Any, _Records] = {}

    def admit(self, run_id: Any, record: _Record) -> None:
        seen = self.by_id.setdefault(run_id, _Records())
        _refuse_if_mixed(seen, record, run_id)
        seen.add(record)


class PartUnfinished(Exception):
    """A part of a log (``iter_parse(part=True)``) ended with measurements still waiting for
    their run line: the next part does not start as a fresh reading would."""


def iter_parse(lines: Iterable[str], name: str = "", *, first_line: int = 0, run_lines: RunLines | None = None,
               admitted: list[tuple[Any, _Record] | None] | None = None, part: bool = False
               ) -> Iterator[ImportedRun]:
    """Runs as their run lines arrive (a log given as lines, e.g. a pipe, is streamed).

    For a log read in parts (jsonl_parallel): ``first_line``, the lines before ``lines``;
    ``run_lines``, the run lines read before them, which later ones are checked against;
    ``admitted`` gets (run id, run line record) of each run as it is yielded (None for one whose
    run line never came), for a reader that checks them against the parts before; ``part``:
    ``lines`` end where another part begins, so measurements still waiting there raise
    ``PartUnfinished`` instead of becoming runs."""
    pending: dict[_Key, _Pending] = {}   # (origin, run id): measurements waiting
    records = run_lines if run_lines is not None else RunLines()
    valid = _ValidTexts()
    origins: dict[str, str] = {"": ""}
    # the pending run the line before went to (most lines go where the one before went), by the
    # text of its run id and its origin; forgotten whenever a run line takes pending runs
    last_key: _Key = ("", None)
    last_text = ""
    last: _Pending | None = None

    def general(n: int, line: str) -> tuple[_Key, _Read, str] | dict[str, Any] | None:
        """A line read as any line is: a measurement's (key, record, canonical params), a run
        line's object (with its origin), or None."""
        try:
            found = _object_in(line) if "{" in line else None
        except _DuplicateKey as e:   # "value": 5, "value": 500: which one was meant cannot be known
            raise LogFormatError(f"line {n}: key {shown(e.args[0])} given twice in one JSON object") from None
        if found is None:
            return None
        obj, origin = found
        where = f"line {n}"
        # a lone surrogate can only come from a JSON escape: text read from a file holds U+FFFD
        # where its bytes were not UTF-8
        if "\\" in line and "\\u" in line:
            _refuse_surrogates(obj, where)
        if _kind(obj) != "measurement":
            obj["__origin"] = origin
            return obj
        m = _measurement(obj, where)   # checks the run id before it is a key
        return ((origin, obj.get("run")), (m.benchmark, m.metric, float(m.value), m.unit, m.params,
                                           json_compact(m.params)), _canonical(m.params))

    def reread(n: int, line: str) -> tuple[_Key, _Read, str] | None:
        found = general(n, line)
        return found if isinstance(found, tuple) else None

    def check(p: _Pending) -> _Pending:
        return p.checked(valid, reread)

    def one(n: int, line: str) -> ImportedRun | None:
        """Line ``n`` read on its own; the run it ends, if it is a run line."""
        nonlocal last, last_key, last_text
        # clusterbench's own measurement lines behind a prefix: one expression, nothing decoded
        # (the params texts of a run are checked at once when its run line comes)
        at = 0 if line.startswith(_OWN_START) else line.find(_OWN_START)
        if at >= 0 and (at == 0 or "{" not in line[:at]) and ("\\" not in line or "\\u" not in line):
            own = _OWN.match(line, at)
            if own is not None:
                run_text, bench, metric, value_text, unit, params = own.groups()
                # as JSON reads it: an integer first (-0 is 0, not -0.0)
                value = float(value_text) if value_text != "-0" else 0.0
                if math.isfinite(value):
                    if at:
                        prefix = line[:at]
                        origin = origins.get(prefix)
                        if origin is None:
                            origin = origins[prefix] = _origin(prefix)
                            if len(origins) > 4096:
                                origins.clear()
                    else:
                        origin = ""
                    if last is None or run_text != last_text or origin != last_key[0]:
                        last_text = run_text
                        last_key = (origin, None if run_text == "null" else int(run_text))
                        last = pending.setdefault(last_key, _Pending(last_key))
                    # _Pending.add, inlined: this runs for every line of a prefixed log
                    ident = (bench, metric, unit, params)
                    if ident in last.identities:
                        last.repeated = True
                    else:
                        last.identities.add(ident)
                    last.lines.append(n)
                    last.records.append((bench, metric, value, unit, None, params))
                    last.raw[n] = line
                    if value < 0:
                        last.negative = True
                    return None
        found = general(n, line)
        if found is None:
            return None
        if isinstance(found, tuple):
            key, record, canonical = found
            pending.setdefault(key, _Pending(key)).add(n, record, canonical)
            return None
        obj, origin, where = found, found.pop("__origin"), f"line {n}"
        run = _run(obj, name, where)
        run_id = obj.get("id")
        taken, doubt = _taken(pending, run_id, origin, n, check)
        last = None
        count = obj.get("measurements")   # listings and imports say how many the run has
        if not doubt and isinstance(count, int) and not isinstance(count, bool) and count != len(taken.lines):
            doubt = f"line {n} says its run has {count} measurement(s), {len(taken.lines)} came before it"
        contents = hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode("utf-8", "surrogatepass")).digest()
        record = _Record(n, contents, _stretches(taken.lines), doubt)
        records.admit(run_id, record)
        if admitted is not None:
            admitted.append((run_id, record))
        return taken.imported(run, valid)

    def stretch(n: int, text: str) -> int:
        """Lines ``n + 1`` on (``text``), each starting as clusterbench's own measurement line,
        taken at once (``_OWN_ROWS``: no Python step per line): how many; 0, with nothing taken,
        where one of them is not exactly such a line, a value is not finite or they are not all
        of one run id: then they are read one by one."""
        nonlocal last
        if "\\" in text and "\\u" in text:   # one character first: a search at memory speed
            return 0
        rows = _OWN_ROWS.findall(text)
        count = text.count("\n")
        if len(rows) != count:
            return 0
        runs, benches, metrics, texts, units, params = zip(*rows)
        if runs.count(runs[0]) != count:
            return 0
        values = list(map(float, texts))
        if math.inf in values or -math.inf in values:   # 1e999: the line-by-line reading refuses it
            return 0
        if "-0" in texts:   # as JSON reads it: an integer first (-0 is 0, not -0.0)
            values = [0.0 if t == "-0" else v for t, v in zip(texts, values)]
        key = ("", None if runs[0] == "null" else int(runs[0]))
        pending.setdefault(key, _Pending(key)).extend(n + 1, text, benches, metrics, values, units, params)
        last = None
        return count

    n = first_line
    for block in line_blocks(lines):
        if len(block) > MAX_LINE and max(map(len, block.split("\n"))) > MAX_LINE:
            raise LogFormatError(f"not a text log: a line longer than {MAX_LINE >> 20} MiB")
        pos, end = 0, len(block)
        while pos < end:
            if block.startswith(_OWN_START, pos):
                # nearly all of a log: the lines up to the next one that does not start so
                other = _NOT_OWN.search(block, pos)
                stop = other.start() + 1 if other is not None else end
                text = block[pos:stop]
                taken = stretch(n, text)
                if taken:
                    n += taken
                else:
                    for line in text.split("\n")[:-1]:
                        n += 1
                        if (run := one(n, line)) is not None:
                            yield run
            else:
                stop = block.index("\n", pos) + 1
                n += 1
                if (run := one(n, block[pos:stop - 1])) is not None:
                    yield run
            pos = stop
    if part and pending:
        raise PartUnfinished
    for (origin, run_id), waiting in pending.items():
        if admitted is not None:
            admitted.append(None)
        yield _orphans(check(waiting), run_id, origin, name, valid)


def parse(text: str, name: str = "") -> list[ImportedRun]:
    """Every run in ``text`` (see the module's docstring); [] when it holds none."""
    return list(iter_parse(text_lines(text), name))
