"""How measurements are stored: packs of many records in one database row.

A log import can hold millions of measurements; one database row per measurement made storing
them the slow part of an import (about 9 us a row in SQLite). A run's measurements are therefore
stored as a few *packs* (usually one), rows of ``measurement_packs``: (run_id, format, count,
body). Records come back from a pack exactly as they went in, in the same order.

Formats:

- ``rows``: any records, as JSON ``{"k": [[benchmark, metric, unit], ...], "p": [params, ...],
  "r": [[k index, p index, value], ...]}`` (each distinct key and parameter set stored once).
- ``table``: a table as a tool prints it, for producers that read one (nccl-tests). A JSON header
  line, then one text line per table row: whitespace-separated tokens, first the row's leading
  parameter values (``lead``: names and types), then one token per column. Header::

      {"benchmark": "all_reduce", "lead": [["bytes", "int"], ["count", "int"], ["dtype", "str"], ...],
       "cols": [["time_us", "us", {"placement": "out"}], null, ...],   (null: a column not stored)
       "const": {"ranks": 8}, "order": ["bytes", "count", "dtype", ..., "placement", "ranks"]}

  Each token of a column that is a number (``N/A`` and other words are not; a trailing ``*``
  or ``,`` is ignored) is one record: the column's metric and unit, parameters in ``order`` taken
  from the row, the column and ``const``. Storing the row's text as printed costs nothing to
  encode; a table of a million rows decodes in seconds when someone reads it.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from clusterbench.families import metric_of
from clusterbench.families.base import Metric
from clusterbench.jsontext import loads
from clusterbench.records import Measurement, stored_measurement

ROWS = "rows"
TABLE = "table"
FORMATS = (ROWS, TABLE)
MeasurementRow = tuple[str, str, float, str, str]   # benchmark, metric, value, unit, params JSON
Keep = Callable[[str, str], bool]   # (benchmark, metric): whether a reader wants such records
_INF = float("inf")


class UnreadablePack(ValueError):
    """A pack whose records do not read back (a table row that is not one, a body that is not
    the JSON its format says)."""


class Pack(NamedTuple):
    format: str
    count: int    # records in it
    body: str
    benchmarks: tuple[str, ...] = ()   # what it measured, when its producer said (else read from the body)


class Packs:
    """A run's measurements already packed by their producer (``ImportedRun.store_rows``).

    Iterating gives the measurement rows, so it goes wherever rows go; ``Store.save_run_rows``
    stores the packs themselves.
    """

    def __init__(self, packs: Sequence[Pack],
                 decoded: Sequence[tuple[str, str, float, str, dict[str, Any] | str]] | None = None,
                 params: Mapping[str, dict[str, Any]] | None = None) -> None:
        self.packs = list(packs)
        self._count = sum(p.count for p in self.packs)   # asked for several times per run
        # the same records as (benchmark, metric, value, unit, params), where the producer has
        # them at hand, or only the run's headline records among them (``families.headline``),
        # all the store indexes: it takes what it indexes from them, not from decoding the packs.
        # Params given as their JSON text are decoded where needed, found in ``params`` (texts
        # the producer decoded already) or else read.
        self.decoded = decoded
        self.params = params or {}

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[MeasurementRow]:
        for pack in self.packs:
            yield from rows_of(pack.format, pack.body)


def number(token: str) -> float | None:
    """A value token of a ``table`` pack: a finite number, else None (N/A, nan, junk)."""
    try:
        v = float(token)
    except ValueError:
        try:
            v = float(token.rstrip("*,"))
        except ValueError:
            return None
    return None if (v != v or v in (_INF, -_INF)) else v


# -- rows ------------------------------------------------------------------------------------
def pack_measurements(ms: Iterable[Measurement]) -> Pack:
    return pack_rows((m.benchmark, m.metric, float(m.value), m.unit, m.params) for m in ms)


def pack_rows(rows: Iterable[tuple[str, str, float, str, dict[str, Any] | str]]) -> Pack:
    """A ``rows`` pack of (benchmark, metric, value, unit, params dict or params JSON)."""
    keys: dict[tuple[str, str, str], int] = {}
    params: dict[str, int] = {}
    plist: list[Any] = []
    out: list[list[Any]] = []
    for benchmark, metric, value, unit, p in rows:
        k = keys.setdefault((benchmark, metric, unit), len(keys))
        text = p if isinstance(p, str) else json.dumps(p, default=str)
        i = params.get(text)
        if i is None:
            i = params[text] = len(plist)
            plist.append(json.loads(text))  # as JSON stores it (default=str applied)
        v = float(value)
        if math.isnan(v) or math.isinf(v):
            raise ValueError(f"measurement value must be finite, got {value!r}")
        out.append([k, i, v])
    body = json.dumps({"k": [list(k) for k in keys], "p": plist, "r": out}, separators=(",", ":"))
    return Pack(ROWS, len(out), body, tuple(dict.fromkeys(k[0] for k in keys)))


def packs_to_store(rows: Iterable[MeasurementRow] | Iterable[tuple[str, str, float, str, dict[str, Any]]] | Packs
                   ) -> Iterable[Pack]:
    """The packs a run's rows are stored as. Rows are packed lazily, inside the run's transaction,
    so a producer that streams them is read while the run's row is already written (and rolled
    back with it)."""
    if isinstance(rows, Packs):
        return rows.packs
    return (pack_rows(rows) for _ in (0,))


def _rows_rows(body: str) -> Iterator[MeasurementRow]:
    doc = loads(body)
    keys, plist = doc["k"], [json.dumps(p) for p in doc["p"]]
    for k, i, v in doc["r"]:
        b, m, u = keys[k]
        yield b, m, float(v), u, plist[i]


def _rows_measurements(body: str, keep: Keep | None = None, shared: bool = False) -> list[Measurement]:
    doc = loads(body)
    keys, plist = doc["k"], doc["p"]
    relabel = [_relabelled(*key) for key in keys]
    kept = [keep is None or keep(b, m) for b, m, _ in keys]
    out = []
    for k, i, v in doc["r"]:
        if not kept[k]:
            continue
        b, m, u = keys[k]
        params = plist[i] if shared else dict(plist[i])
        out.append(stored_measurement(b, m, float(v), relabel[k].unit_for(params) if relabel[k] else u, params))
    return out


def _relabelled(benchmark: str, metric: str, unit: str) -> Metric | None:
    """The metric whose records stored in ``unit`` read in the unit their params call for: an int8
    GEMM row stored in TFLOP/s (as clusterbench wrote them before TOP/s) reads in TOP/s, the same
    scale. None for every other key (read as stored)."""
    known = metric_of(benchmark, metric)
    return known if known is not None and known.integer_unit and unit == known.unit else None


# -- table -----------------------------------------------------------------------------------
def table_header(benchmark: str, lead: Sequence[tuple[str, str]], cols: Sequence[tuple[str, str, dict] | None],
                 const: dict[str, Any], order: Sequence[str]) -> str:
    return json.dumps({"benchmark": benchmark, "lead": [list(x) for x in lead],
                       "cols": [list(c) if c is not None else None for c in cols], "const": const,
                       "order": list(order)}, separators=(",", ":"))


def pack_table(header: str, lines: Sequence[str], count: int, benchmark: str | None = None) -> Pack:
    """A ``table`` pack: ``lines`` hold the lead tokens and one token per column each; ``count``
    is the number of value tokens that are numbers (the producer knows it without converting),
    ``benchmark`` the one in ``header`` (read from it when not given)."""
    if benchmark is None:
        benchmark = json.loads(header)["benchmark"]
    return Pack(TABLE, count, header + "\n" + "\n".join(lines), (benchmark,))


def benchmarks_of(pack: Pack) -> tuple[str, ...]:
    """The benchmarks a pack holds records of: as its producer said, else from its body (a pack
    read back from a database, on its way to another one). A body this clusterbench could not
    read back (edited by hand, another tool's) is a ValueError saying why, whatever is wrong with
    it: it would otherwise be copied as it is, and fail only when read there."""
    if pack.benchmarks or not pack.count:
        return pack.benchmarks
    if pack.format not in FORMATS:
        raise ValueError(f"unknown measurement pack format {pack.format!r} (written by a newer clusterbench?)")
    if not isinstance(pack.body, str):   # SQLite keeps any type in any column
        raise ValueError(f"a pack body is {type(pack.body).__name__}, not text")
    try:
        if pack.format == TABLE:
            return (_table_benchmark(json.loads(pack.body.partition("\n")[0])),)
        return _rows_benchmarks(loads(pack.body))
    except RecursionError:   # nested thousands deep: Python's parser gives up
        raise ValueError(f"a pack body is nested more than {sys.getrecursionlimit()} levels deep") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"a pack body is not JSON ({e})") from None


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _table_benchmark(head: object) -> str:
    """The benchmark of a ``table`` pack's header, once the header has the shape ``_table`` reads."""
    if not isinstance(head, dict):
        raise ValueError("a table pack's header is not a JSON object")
    bench, lead, cols, const, order = (head.get(k) for k in ("benchmark", "lead", "cols", "const", "order"))
    if not isinstance(bench, str) or not bench:
        raise ValueError("a table pack's header has no benchmark name")
    if not (isinstance(lead, list) and all(isinstance(x, list) and len(x) == 2 and isinstance(x[0], str)
                                           and x[1] in ("int", "str") for x in lead)):
        raise ValueError("a table pack's header has no valid lead columns")
    if not (isinstance(cols, list) and all(c is None or (isinstance(c, list) and len(c) == 3 and isinstance(c[0], str)
                                                         and isinstance(c[1], str) and isinstance(c[2], dict))
                                           for c in cols)):
        raise ValueError("a table pack's header has no valid value columns")
    if not isinstance(const, dict) or not (isinstance(order, list) and all(isinstance(k, str) for k in order)):
        raise ValueError("a table pack's header has no valid constant params or order")
    return bench


def _rows_benchmarks(doc: object) -> tuple[str, ...]:
    """The benchmarks of a ``rows`` pack, once every record of it reads back."""
    if not isinstance(doc, dict):
        raise ValueError("a rows pack is not a JSON object")
    keys, plist, records = doc.get("k"), doc.get("p"), doc.get("r")
    if not (isinstance(keys, list) and all(isinstance(k, list) and len(k) == 3 and all(isinstance(x, str) for x in k)
                                           for k in keys)):
        raise ValueError("a rows pack's keys are not [benchmark, metric, unit] texts")
    if not (isinstance(plist, list) and all(isinstance(p, dict) for p in plist)):
        raise ValueError("a rows pack's params are not JSON objects")
    nk, np_ = len(keys), len(plist)
    if not (isinstance(records, list) and all(
            isinstance(r, list) and len(r) == 3 and type(r[0]) is int and type(r[1]) is int
            and 0 <= r[0] < nk and 0 <= r[1] < np_ and _is_number(r[2]) for r in records)):
        raise ValueError("a rows pack's records are not [key, params, finite value]")
    return tuple(dict.fromkeys(k[0] for k in keys))


def count_values(tokens: Iterable[str]) -> int:
    return sum(1 for t in tokens if number(t) is not None)


def table_records(body: str) -> Iterator[tuple[str, str, float, str, dict[str, Any]]]:
    """A ``table`` pack's records as (benchmark, metric, value, unit, params)."""
    return _table(body)


def _table(body: str) -> Iterator[tuple[str, str, float, str, dict[str, Any]]]:
    head, _, text = body.partition("\n")
    h = json.loads(head)
    bench, order, const = h["benchmark"], h["order"], h["const"]
    lead = [(name, int if kind == "int" else str) for name, kind in h["lead"]]
    nlead = len(lead)
    cols = [(c[0], c[1], c[2]) if c else None for c in h["cols"]]
    for line in text.split("\n"):
        toks = line.split()
        if not toks:
            continue
        row = {name: conv(tok) for (name, conv), tok in zip(lead, toks)}
        for col, tok in zip(cols, toks[nlead:]):
            if col is None:
                continue
            v = number(tok)
            if v is None:
                continue
            metric, unit, cparams = col
            src = {**row, **cparams, **const}
            yield bench, metric, v, unit, {k: src[k] for k in order if k in src}


# -- as stored: what SQL reads ----------------------------------------------------------------
# The ``measurements`` view (store/views.py) takes a table's rows apart in SQL: lines at line
# feeds, tokens at runs of spaces, and a value token is a number where it is a JSON number (after
# a trailing ``*`` or ``,``), which is every number nccl-tests prints. Python's float also reads
# ``+1``, ``.5``, ``1.``, ``01``, ``1_000`` and exponents a database's double does not hold
# (``1e999``, ``1e-400``); a table holding a token that may be one of those, or anything else
# SQL would take apart otherwise (a quote, a backslash, a control character, a run of more than
# MAX_SPACES spaces), is stored as a rows pack of its records instead. The tests are a few byte
# translations and searches in C, not a Python step per token.
MAX_SPACES = 64
_PLAIN = bytes(range(0x20, 0x7f)) + b"\n"          # what a table's text may hold for SQL
_DIGIT = b"0123456789"
# Byte classes for the tests below, each one translate: digits as 0 (and as 0 or 1 where a
# leading zero matters), a minus and a line feed as the space before a token, a sign after an
# exponent letter as a digit.
_CLASSES = bytes.maketrans(_DIGIT + b"\n", b"0" * 10 + b" ")
_LEADING = bytes.maketrans(_DIGIT + b"\n-", b"0" + b"1" * 9 + b"  ")
_EXPONENT = bytes.maketrans(_DIGIT + b"+-E", b"0" * 12 + b"e")
_SCALAR = (str, int, float, bool)


def _sql_reads_numbers(raw: bytes) -> bool:
    """Whether every token of ``raw`` that Python's float reads is a JSON number of a double's
    range (see above), in a few passes of C: no sign or underscore where JSON has none, every
    point between two digits, no leading zero, no exponent of three digits or more."""
    if b"+" in raw or b"_" in raw:   # nccl-tests prints neither: such a table is read in Python
        return False
    classes = raw.translate(_CLASSES)
    if classes.count(b".") != classes.count(b"0.0") or b"0" * 300 in classes:
        return False
    leading = raw.translate(_LEADING)
    if b" 00" in leading or b" 01" in leading:
        return False
    return not ((b"e" in raw or b"E" in raw) and b"e000" in raw.translate(_EXPONENT))


def storable(pack: Pack) -> Pack:
    """``pack`` as the store writes it: a ``table`` pack SQL cannot read as ``measurements_of``
    does (see above; or whose header's params are not plain values, which SQL merges otherwise)
    becomes a ``rows`` pack of the same records, in the same order; any other pack is written as
    it is. A table whose rows do not read back raises ValueError."""
    if pack.format != TABLE:
        return pack
    head, _, text = pack.body.partition("\n")
    if _sql_reads(text) and _sql_header(head):
        return pack
    try:
        return pack_rows(list(_table(pack.body)))
    except (ValueError, KeyError, TypeError, IndexError, RecursionError) as e:
        raise UnreadablePack(f"a table pack of {pack.benchmarks or 'a run'}: {e}") from None


def _sql_reads(text: str) -> bool:
    """Whether SQL takes this table text apart into the tokens ``str.split`` gives, and reads the
    same numbers from them as ``number``."""
    if not text.isascii() or '"' in text or "\\" in text:
        return False
    raw = text.encode("ascii")
    if raw.translate(None, _PLAIN) or b" " * (MAX_SPACES + 1) in raw:
        return False
    return _sql_reads_numbers(b" " + raw + b" ")   # a token at either end is one between spaces


def _sql_header(head: str) -> bool:
    """Whether SQL builds the same params from this table header as ``_table`` does: every param
    one ``order`` names (``_table`` drops the others), every constant a plain value (SQL merges
    objects and drops nulls)."""
    try:
        h = json.loads(head)
        _table_benchmark(h)
    except (ValueError, RecursionError):
        return False
    order = set(h["order"])
    cparams = [c[2] for c in h["cols"] if c is not None]
    return (all(name in order for name, _ in h["lead"])
            and all(k in order and isinstance(v, _SCALAR) for p in [h["const"], *cparams] for k, v in p.items()))


# -- reading ---------------------------------------------------------------------------------
def measurements_of(fmt: str, body: str, keep: Keep | None = None, shared: bool = False) -> Iterable[Measurement]:
    """A pack's records as measurements, in order; ``keep(benchmark, metric)``: only the records
    it says yes to, left out before they are made (a judgement of a thousand runs that wants one
    metric of forty). ``shared``: records of one parameter set share one params dict, for readers
    that never change them (a fleet's records are mostly params: a copy each is most of memory)."""
    if fmt == ROWS:
        return _rows_measurements(body, keep, shared)
    if fmt == TABLE:
        return _table_measurements(body, keep)
    raise ValueError(f"unknown measurement pack format {fmt!r} (written by a newer clusterbench?)")


def _table_measurements(body: str, keep: Keep | None) -> Iterator[Measurement]:
    relabel: dict[tuple[str, str, str], Metric | None] = {}
    for b, m, v, u, p in _table(body):
        if keep is not None and not keep(b, m):
            continue
        if (b, m, u) not in relabel:
            relabel[b, m, u] = _relabelled(b, m, u)
        known = relabel[b, m, u]
        yield Measurement(b, m, v, known.unit_for(p) if known else u, p)


def param_values(fmt: str, body: str, key: str) -> Iterator[Any]:
    """The value of the param ``key`` of each of a pack's records, in order (None where a record
    has none), without making the records: a rows pack's once per parameter set it stores."""
    if fmt == ROWS:
        doc = loads(body)
        plist, done = doc["p"], set()
        for _k, i, _v in doc["r"]:
            if i not in done:
                done.add(i)
                yield plist[i].get(key)
    elif fmt == TABLE:
        for _b, _m, _v, _u, p in _table(body):
            yield p.get(key)
    else:
        raise ValueError(f"unknown measurement pack format {fmt!r} (written by a newer clusterbench?)")


def rows_of(fmt: str, body: str) -> Iterator[MeasurementRow]:
    if fmt == ROWS:
        yield from _rows_rows(body)
    elif fmt == TABLE:
        for b, m, v, u, p in _table(body):
            yield b, m, v, u, json.dumps(p, default=str)
    else:
        raise ValueError(f"unknown measurement pack format {fmt!r} (written by a newer clusterbench?)")
