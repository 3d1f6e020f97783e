"""Each run's headline series, written with the run: the indexed rows the fleet commands read
(``trend``, ``export openmetrics``, ``serve-metrics``) instead of every run's packs.

A *series* (table ``series``) is one headline row on one host: (host, nodes, benchmark, metric,
unit, params), params without ``host`` and with sorted keys. ``headlines`` holds one row per run
and series: the run, the series, the run's start in Unix seconds (``started``, for windows in
time order) and the value. A value belongs to its ``host`` param's host; one without belongs to
the run's ``node`` tag, else to each of the run's hosts (``nodes``: how many hosts a result
spans), as the Prometheus exporter has always labelled them. Which records are headline series
is each family's rule (``families.headline``).

Records reach here either as the rows the store packs (``RunHeadlines.tap``: no second reading)
or as packs a producer packed (``RunHeadlines.add_pack``: a rows pack's JSON, or only the lines
of a table at its largest size).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from clusterbench.families import family_of
from clusterbench.families.headline import Record, headline_metric, headline_records
from clusterbench.jsontext import loads
from clusterbench.records import Run
from clusterbench.store.backend import Backend
from clusterbench.store.nul import NUL
from clusterbench.store.packs import (
    ROWS,
    TABLE,
    MeasurementRow,
    Pack,
    UnreadablePack,
    table_records,
)

# A start time no reader can place: first in time order, inside no window.
UNKNOWN_TIME = -1.0e300
SERIES_COLS = ("id", "host", "nodes", "benchmark", "metric", "unit", "params")
HEADLINE_COLS = ("run_id", "series_id", "started", "value")
_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str).encode

SeriesKey = tuple[str, int, str, str, str, str]   # host, nodes, benchmark, metric, unit, params JSON


def epoch(started_at: object) -> float:
    """A stored start time (``2026-11-23T18:13:34.099Z``, any ISO 8601 offset) in Unix seconds;
    UNKNOWN_TIME where it does not read as one."""
    try:
        t = datetime.fromisoformat(str(started_at).replace("Z", "+00:00"))
    except ValueError:
        return UNKNOWN_TIME
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()


def run_hosts(run: Run) -> list[str]:
    """The hosts a value without a ``host`` param belongs to: the run's ``node`` tag, else each
    of its hosts."""
    if run.tags.get("node"):
        return [run.tags["node"]]
    return list(dict.fromkeys(run.hosts)) or ["unknown"]


def params_text(params: dict[str, Any]) -> str:
    """A series' params as stored: without ``host`` (a column of its own), keys sorted."""
    return _dumps({k: v for k, v in params.items() if k != "host"})


class RunHeadlines:
    """The headline records of one run, gathered as its measurements are stored."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.records: list[Record] = []
        self.tapped = False   # the records came through ``tap``: no pack needs reading

    def pack(self, pack: Pack) -> None:
        """A pack about to be stored: read for its headline records unless they were tapped."""
        if not self.tapped:
            try:
                self.add_pack(pack)
            except (ValueError, KeyError, TypeError, IndexError, RecursionError) as e:
                raise UnreadablePack(f"a {pack.format} pack: {e}") from None

    def tap(self, rows: Iterable[MeasurementRow] | Iterable[tuple[str, str, float, str, dict[str, Any]]]
            ) -> Iterator[Any]:
        """``rows`` passed on as they are, the headline candidates among them kept."""
        self.tapped = True
        for row in rows:
            if row[1] == headline_metric(row[0]):
                p = row[4]
                self.records.append((row[0], row[1], float(row[2]), row[3], json.loads(p) if isinstance(p, str) else p))
            yield row

    def take(self, rows: Iterable[tuple[str, str, float, str, dict[str, Any] | str]],
             known: Mapping[str, dict[str, Any]]) -> None:
        """``tap`` for records a producer decoded already (``Packs.decoded``): the headline
        candidates kept, a params text decoded only for them (``known``: texts decoded already)."""
        self.tapped = True
        self.records += [(b, m, float(v), u, p if not isinstance(p, str) else known.get(p) or json.loads(p))
                         for b, m, v, u, p in rows if m == headline_metric(b)]

    def add_pack(self, pack: Pack) -> None:
        """The headline candidates of a pack a producer packed (or another database stored)."""
        if pack.format == ROWS:
            doc = loads(pack.body)
            wanted = {i for i, (b, m, _u) in enumerate(doc["k"]) if m == headline_metric(b)}
            if wanted:
                keys, plist = doc["k"], doc["p"]
                self.records += [(keys[k][0], keys[k][1], float(v), keys[k][2], plist[p])
                                 for k, p, v in doc["r"] if k in wanted]
        elif pack.format == TABLE:
            self.records += _table_candidates(pack.body)

    def rows(self) -> list[tuple[SeriesKey, float]]:
        """(series key, value) of each headline record, once per host it belongs to."""
        hosts = run_hosts(self.run)
        out: list[tuple[SeriesKey, float]] = []
        for benchmark, metric, value, unit, params in headline_records(self.records):
            text = params_text(params)
            if params.get("host") is not None:
                out.append(((str(params["host"]), 1, benchmark, metric, unit, text), value))
            else:
                out += [((h, len(hosts), benchmark, metric, unit, text), value) for h in hosts]
        # A NUL, which a run may hold in text stored as JSON (store/nul.py), has no place in a
        # series' plain columns (PostgreSQL holds none in text or jsonb): no series of that row.
        return [(k, v) for k, v in out if not any(NUL in t for t in k[:1] + k[2:5]) and "\\u0000" not in k[5]]


def _table_candidates(body: str) -> list[Record]:
    """The headline records of a table pack, reading only what can hold one: its headline
    columns, and where the family keeps a run's largest size and the table leads with it, only
    the rows at the table's largest size (a log of a million rows is not decoded for one)."""
    head, _, text = body.partition("\n")
    h = json.loads(head)
    bench = h["benchmark"]
    metric = headline_metric(bench)
    if metric is None or not any(c and c[0] == metric for c in h["cols"]):
        return []
    family = family_of(bench)
    lead = h["lead"]
    if family is not None and lead and lead[0][1] == "int" and lead[0][0] in family.headline_rows.largest:
        lines = text.split("\n")
        firsts = [line.split(None, 1)[0] if line.strip() else "" for line in lines]
        sizes = [int(t) for t in firsts if t.isdecimal()]
        if sizes:
            top = str(max(sizes))
            text = "\n".join(line for line, first in zip(lines, firsts) if first.isdecimal() and first.lstrip("0") == top.lstrip("0"))
    return [r for r in table_records(head + "\n" + text) if r[1] == metric]


class SeriesIds:
    """Series ids of one write transaction: looked up a host at a time, new ones inserted in
    bulk. Kept for the transaction only: one rolled back takes its new series with it."""

    def __init__(self, db: Backend) -> None:
        self.db = db
        self.known: dict[SeriesKey, int] = {}
        self.hosts: set[str] = set()

    def ids(self, keys: Sequence[SeriesKey]) -> list[int]:
        hosts = {k[0] for k in keys} - self.hosts
        if hosts:
            self._load(sorted(hosts))
        missing = list(dict.fromkeys(k for k in keys if k not in self.known))
        if missing and self.db.kind == "sqlite":
            # SQLite's writer holds the database's write lock since its BEGIN IMMEDIATE: a series
            # not there at the lookup is not there now, so it takes the next ids at once
            ids = self.db.next_ids("series", len(missing))
            self.db.insert_rows("series", SERIES_COLS, [(i, *k) for i, k in zip(ids, missing)])
            self.known.update(zip(missing, ids))
        elif missing:
            self._insert(missing)
        return [self.known[k] for k in keys]

    def _insert(self, missing: list[SeriesKey]) -> None:
        """New series on PostgreSQL, whose writers run at once: another may have stored (or be
        storing) the same series since the lookup. The insert skips those (waiting for a writer
        under way to end) and returns the ids of the rest; those of the series skipped are read
        back. One statement for many rows (an executemany is a round trip a row where the
        client's libpq has no pipeline mode)."""
        cols = [c for c in SERIES_COLS if c != "id"]
        row = "(" + ", ".join("CAST(? AS jsonb)" if c == "params" else "?" for c in cols) + ")"
        wanted = set(missing)
        for i in range(0, len(missing), 500):
            chunk = missing[i:i + 500]
            for sid, host, nodes, bench, metric, unit, params in self.db.execute(
                    f"INSERT INTO series ({', '.join(cols)}) VALUES {', '.join([row] * len(chunk))}"
                    f" ON CONFLICT ({', '.join(cols)}) DO NOTHING RETURNING {', '.join(SERIES_COLS)}",
                    [v for k in chunk for v in k]).fetchall():
                text = params if isinstance(params, str) else _dumps(params)   # jsonb: a dict
                key = (host, int(nodes), bench, metric, unit, text)
                self.known[key] = int(sid)
                wanted.discard(key)
        if wanted:
            again = sorted({k[0] for k in wanted})
            self.hosts.difference_update(again)
            self._load(again)

    def _load(self, hosts: list[str]) -> None:
        for i in range(0, len(hosts), 500):
            chunk = hosts[i:i + 500]
            for sid, host, nodes, bench, metric, unit, params in self.db.execute(
                    f"SELECT id, host, nodes, benchmark, metric, unit, params FROM series WHERE host IN"
                    f" ({','.join('?' * len(chunk))})", chunk):
                text = params if isinstance(params, str) else _dumps(params)   # PostgreSQL's jsonb: a dict
                self.known[(host, int(nodes), bench, metric, unit, text)] = int(sid)
        self.hosts.update(hosts)


def headline_rows(ids: SeriesIds, run_id: int, run: Run, found: RunHeadlines) -> list[tuple[Any, ...]]:
    """The ``headlines`` rows of a run."""
    pairs = found.rows()
    if not pairs:
        return []
    started = epoch(run.started_at)
    sids = ids.ids([k for k, _ in pairs])
    return [(run_id, sid, started, value) for sid, (_, value) in zip(sids, pairs)]


def _runs_of(db: Backend, ids: Sequence[int]) -> dict[int, Run]:
    """What the headline rows of runs ``ids`` depend on: their hosts, start and ``node`` tag."""
    marks = ",".join("?" * len(ids))
    runs = {int(rid): Run("", started_at=started, hosts=list(json.loads(hosts)) if hosts else [])
            for rid, started, hosts in db.execute(f"SELECT id, started_at, hosts FROM runs WHERE id IN ({marks})",
                                                  list(ids)).fetchall()}
    for rid, node in db.execute(f"SELECT run_id, value FROM run_tags WHERE key='node' AND run_id IN ({marks})",
                                list(ids)).fetchall():
        runs[int(rid)].tags["node"] = node
    return runs


def derive(db: Backend, run_ids: Sequence[int] | None = None, chunk: int = 200) -> int:
    """Write the headline rows of runs ``run_ids`` (None: every run) from their stored packs, a
    chunk of runs at a time; runs whose packs do not read back (an edited file) get none, as
    they could not be read for them either. Inside a write transaction. Returns the rows written."""
    if run_ids is None:
        run_ids = [int(r[0]) for r in db.execute("SELECT id FROM runs ORDER BY id").fetchall()]
    ids = SeriesIds(db)
    written = 0
    for i in range(0, len(run_ids), chunk):
        part = list(run_ids[i:i + chunk])
        runs = _runs_of(db, part)
        found = {rid: RunHeadlines(run) for rid, run in runs.items()}
        broken: set[int] = set()
        marks = ",".join("?" * len(part))
        for rid, fmt, count, body in db.execute(f"SELECT run_id, format, count, body FROM measurement_packs"
                                                f" WHERE run_id IN ({marks}) ORDER BY id", part).fetchall():
            if int(rid) in broken or not count:
                continue
            try:
                found[int(rid)].add_pack(Pack(fmt, int(count), body))
            except (ValueError, KeyError, TypeError, IndexError, RecursionError):
                broken.add(int(rid))
        rows = [row for rid, f in found.items() if rid not in broken
                for row in headline_rows(ids, rid, f.run, f)]
        if rows:
            db.insert_rows("headlines", HEADLINE_COLS, rows)
            written += len(rows)
    return written
