"""What the fleet commands ask a store of many runs, answered by the database: the newest value
of each headline series, a host's series over a window, the newest run per host and benchmark,
and whether anything changed since it was last asked (``serve-metrics``' cache).

Every read is an indexed query over ``series`` and ``headlines`` (store/headlines.py) or an
aggregate over ``runs``, and returns or yields rows as the database gives them: what a command
holds is its answer, not the store. Runs picked by selectors are read as their ids, a chunk at a
time.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterbench.records import Measurement, Run
from clusterbench.store.headlines import UNKNOWN_TIME, epoch
from clusterbench.store.store import Store

_CHUNK = 500


@dataclass(frozen=True)
class StoredSeries:
    """A headline series as stored: its host, group size, benchmark, metric, unit and params
    (without ``host``)."""

    id: int
    host: str
    nodes: int
    benchmark: str
    metric: str
    unit: str
    params: dict[str, Any] = field(hash=False)


@dataclass(frozen=True)
class SeriesValue(StoredSeries):
    """One value of a headline series (``id``): the run it is from, when, and the value."""

    run: int
    started: float   # Unix seconds; headlines.UNKNOWN_TIME where the run's start does not read
    value: float
    started_at: str = ""   # the run's start as stored


def _params(params: Any) -> dict[str, Any]:
    # keys in code point order on both engines (PostgreSQL's jsonb orders them by length)
    found = json.loads(params) if isinstance(params, str) else params
    return dict(sorted(found.items()))


def _value(row: Sequence[Any], parsed: dict[int, dict[str, Any]] | None = None) -> SeriesValue:
    """A row as a SeriesValue; ``parsed`` keeps each series' params decoded once, for reads that
    return a series' many values (the values of one series share its params dict: read-only)."""
    sid, host, nodes, bench, metric, unit, params, run, started, value, started_at = row
    sid = int(sid)
    if parsed is None:
        found = _params(params)
    else:
        found = parsed.get(sid)
        if found is None:
            found = parsed[sid] = _params(params)
    return SeriesValue(sid, host, int(nodes), bench, metric, unit, found, int(run), float(started), float(value),
                       str(started_at))


_SERIES = "s.id, s.host, s.nodes, s.benchmark, s.metric, s.unit, s.params"


class Selection:
    """The runs a fleet read covers: those ``selectors`` pick (none: every run) started at or
    after ``since`` (Unix seconds; None: any time, an unreadable start included)."""

    def __init__(self, store: Store, selectors: Sequence[str] = (), since: float | None = None) -> None:
        self.store = store
        self.since = since
        # ids only where selectors narrow it: every run is the whole table, asked as such
        self.ids: list[int] | None = store.select_ids(selectors) if selectors else None
        self.id_set: set[int] | None = set(self.ids) if self.ids is not None else None

    @property
    def floor(self) -> float:
        return self.since if self.since is not None else UNKNOWN_TIME

    def chunks(self) -> Iterator[list[int]]:
        assert self.ids is not None
        for i in range(0, len(self.ids), _CHUNK):
            yield self.ids[i:i + _CHUNK]


def latest(sel: Selection) -> list[SeriesValue]:
    """The newest value of every headline series among the selected runs (newest by start time,
    then run id), one query on SQLite and PostgreSQL alike when no selector narrows the runs."""
    store = sel.store
    if sel.ids is None:
        if store.db.kind == "sqlite":
            sql = (f"SELECT {_SERIES}, h.run_id, h.started, h.value, r.started_at FROM series s JOIN headlines h"
                   " ON h.rowid = (SELECT rowid FROM headlines WHERE series_id = s.id AND started >= ?"
                   " ORDER BY started DESC, run_id DESC LIMIT 1) JOIN runs r ON r.id = h.run_id")
        else:
            sql = (f"SELECT {_SERIES}, h.run_id, h.started, h.value, r.started_at FROM series s CROSS JOIN LATERAL"
                   " (SELECT run_id, started, value FROM headlines WHERE series_id = s.id AND started >= ?"
                   "  ORDER BY started DESC, run_id DESC LIMIT 1) h JOIN runs r ON r.id = h.run_id")
        return [_value(r) for r in store._query(sql, (sel.floor,))]
    newest: dict[int, SeriesValue] = {}
    for chunk in sel.chunks():
        for row in store._query(f"SELECT {_SERIES}, h.run_id, h.started, h.value, r.started_at FROM headlines h"
                                f" JOIN series s ON s.id = h.series_id JOIN runs r ON r.id = h.run_id"
                                f" WHERE h.started >= ?"
                                f" AND h.run_id IN ({','.join('?' * len(chunk))})", [sel.floor, *chunk]):
            v = _value(row)
            old = newest.get(v.id)
            if old is None or (v.started, v.run) > (old.started, old.run):
                newest[v.id] = v
    return list(newest.values())


def hosts(store: Store) -> list[str]:
    """Every host a headline series is on, sorted."""
    return sorted(str(h) for (h,) in store._query("SELECT DISTINCT host FROM series"))


def every_series(store: Store) -> Iterator[StoredSeries]:
    """Every headline series of the store, in id order."""
    for sid, host, nodes, bench, metric, unit, params in store._stream(f"SELECT {_SERIES} FROM series s ORDER BY s.id"):
        yield StoredSeries(int(sid), host, int(nodes), bench, metric, unit, _params(params))


def newest_values(sel: Selection, last: int) -> Iterator[tuple[int, int, float, float]]:
    """Each headline series' newest ``last`` values started at or after the selection's floor, as
    (series, run, started, value), read through the headlines' index: ``last`` rows a series,
    however long the fleet's history. Every run only (``sel.ids`` None); a series' rows come
    together, in no set order within it."""
    assert sel.ids is None
    if sel.store.db.kind == "sqlite":
        sql = ("SELECT h.series_id, h.run_id, h.started, h.value FROM series s JOIN headlines h ON h.rowid IN"
               " (SELECT rowid FROM headlines WHERE series_id = s.id AND started >= ?"
               "  ORDER BY started DESC, run_id DESC LIMIT ?)")
    else:
        sql = ("SELECT s.id, h.run_id, h.started, h.value FROM series s CROSS JOIN LATERAL"
               " (SELECT run_id, started, value FROM headlines WHERE series_id = s.id AND started >= ?"
               "  ORDER BY started DESC, run_id DESC LIMIT ?) h")
    rows = sel.store._stream(sql, (sel.floor, last))
    if sel.store.db.kind == "sqlite":   # its client gives these types already: a million rows, no step each
        yield from rows
        return
    for sid, run, started, value in rows:
        yield int(sid), int(run), float(started), float(value)


def run_starts(store: Store, ids: Iterable[int]) -> dict[int, str]:
    """The stored start (text) of each run of ``ids``, a chunk of ids a query."""
    todo = sorted(set(ids))
    out: dict[int, str] = {}
    for i in range(0, len(todo), _CHUNK):
        chunk = todo[i:i + _CHUNK]
        for rid, started_at in store._query(f"SELECT id, started_at FROM runs WHERE id IN ({','.join('?' * len(chunk))})",
                                            chunk):
            out[int(rid)] = str(started_at)
    return out


def host_values(sel: Selection, host: str, last: int | None = None) -> list[SeriesValue]:
    """The values of ``host``'s headline series among the selected runs, series by series in time
    order; ``last``: only each series' newest ``last`` values (a bounded window)."""
    store = sel.store
    parsed: dict[int, dict[str, Any]] = {}
    base = (f"SELECT {_SERIES}, h.run_id, h.started, h.value, r.started_at FROM series s"
            " JOIN headlines h ON h.series_id = s.id JOIN runs r ON r.id = h.run_id WHERE s.host = ? AND h.started >= ?")
    order = " ORDER BY s.id, h.started, h.run_id"
    if sel.ids is None:
        found = [_value(r, parsed) for r in store._query(base + order, (host, sel.floor))]
    else:
        found = sorted((_value(r, parsed) for chunk in sel.chunks() for r in store._query(
            base + f" AND h.run_id IN ({','.join('?' * len(chunk))})", [host, sel.floor, *chunk])),
            key=lambda v: (v.id, v.started, v.run))
    if last is None:
        return found
    out: list[SeriesValue] = []
    start = 0
    for i in range(1, len(found) + 1):
        if i == len(found) or found[i].id != found[start].id:
            out += found[max(start, i - last):i]
            start = i
    return out


@dataclass(frozen=True)
class RunStart:
    """The newest start of a host's runs of one benchmark (``clusterbench_last_run_timestamp``)."""

    benchmark: str
    hosts: tuple[str, ...]   # the run's node tag, else its hosts
    started: float


def newest_runs(sel: Selection) -> list[RunStart]:
    """Per run benchmark and host, the newest start among the selected runs: grouped in SQL by
    the run's benchmark, hosts and node tag (a handful per host, not a row per run)."""
    node = "(SELECT t.value FROM run_tags t WHERE t.run_id = r.id AND t.key = 'node')"
    since = "" if sel.since is None else " AND r.started_at >= ?"
    group = f"SELECT r.benchmark, r.hosts, {node} AS node, max(r.started_at) FROM runs r WHERE 1=1{since}"
    args: list[Any] = [] if sel.since is None else [_iso(sel.since)]
    rows: list[Sequence[Any]] = []
    if sel.ids is None:
        rows = store_rows(sel.store, group + " GROUP BY r.benchmark, r.hosts, node", args)
    else:
        for chunk in sel.chunks():
            rows += store_rows(sel.store, group + f" AND r.id IN ({','.join('?' * len(chunk))})"
                                                  " GROUP BY r.benchmark, r.hosts, node", [*args, *chunk])
    newest: dict[tuple[str, str], float] = {}
    for bench, hosts_json, tag, started in rows:
        t = epoch(started)
        if t == UNKNOWN_TIME:
            continue
        try:
            run_hosts = [tag] if tag else list(dict.fromkeys(json.loads(hosts_json))) or ["unknown"]
        except (TypeError, ValueError):
            run_hosts = ["unknown"]
        for h in run_hosts:
            key = (str(bench), str(h))
            newest[key] = max(newest.get(key, t), t)
    return [RunStart(b, (h,), t) for (b, h), t in sorted(newest.items())]


def store_rows(store: Store, sql: str, args: Iterable[Any]) -> list[Sequence[Any]]:
    return store._query(sql, list(args))


def _iso(t: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def with_preflight(sel: Selection) -> Iterator[tuple[int, str, list[str], str | None, str]]:
    """(run id, started_at, hosts, node tag, meta JSON) of the selected runs that stored a
    preflight, found by a text search of their meta (no run's meta is decoded for it), in id
    order, a chunk at a time."""
    node = "(SELECT t.value FROM run_tags t WHERE t.run_id = r.id AND t.key = 'node')"
    since = "" if sel.since is None else " AND r.started_at >= ?"
    args: list[Any] = [] if sel.since is None else [_iso(sel.since)]
    last = 0
    while True:
        sql = (f"SELECT r.id, r.started_at, r.hosts, {node}, r.meta FROM runs r WHERE r.meta LIKE ?{since}"
               f" AND r.id > ? ORDER BY r.id LIMIT {_CHUNK}")
        rows = sel.store._query(sql, ['%"preflight"%', *args, last])
        if not rows:
            return
        for rid, started, hosts_json, tag, meta in rows:
            if sel.id_set is None or int(rid) in sel.id_set:
                try:
                    run_hosts = list(json.loads(hosts_json))
                except (TypeError, ValueError):
                    run_hosts = []
                yield int(rid), started, run_hosts, tag, meta
        last = int(rows[-1][0])


def in_time_order(sel: Selection, chunk: int = 200) -> Iterator[list[int]]:
    """The ids of the selected runs in the order they started (a start that does not read first,
    then by id), ``chunk`` at a time: what readers that keep the newest of each row go through."""
    found: list[tuple[bool, float, int]] = []
    parts = [None] if sel.ids is None else list(sel.chunks())
    for part in parts:
        sql = "SELECT id, started_at FROM runs" + ("" if part is None else f" WHERE id IN ({','.join('?' * len(part))})")
        for rid, started in sel.store._query(sql, part or ()):
            t = epoch(started)
            if sel.since is None or t >= sel.since:
                found.append((t != UNKNOWN_TIME, t, int(rid)))
    found.sort()
    for i in range(0, len(found), chunk):
        yield [rid for _, _, rid in found[i:i + chunk]]


def stream_runs(sel: Selection, chunk: int = 200) -> Iterator[tuple[Run, list[Measurement]]]:
    """The selected runs with their measurements, oldest first, read ``chunk`` runs at a time:
    a reader that keeps what it needs of each holds one chunk, not the store."""
    for ids in in_time_order(sel, chunk):
        runs = {int(r.id or 0): r for r in sel.store.runs_by_ids(ids)}
        found = sel.store.measurements_by_run(ids)
        for rid in ids:
            if rid in runs:
                yield runs[rid], found[rid]


def count(sel: Selection) -> int:
    """How many runs the selection holds."""
    if sel.ids is None and sel.since is None:
        return int(sel.store._query("SELECT count(*) FROM runs")[0][0])
    return sum(len(ids) for ids in in_time_order(sel, 10_000))


def change_token(store: Store) -> tuple[Any, ...]:
    """What changes when a run is stored or deleted, or a tag added: ``serve-metrics`` reads the
    store again only when it did (and now and then anyway: a tag's new value is not in it). Two
    counts and a maximum, over the smallest indexes of two tables."""
    (top, n), = store._query("SELECT max(id), count(*) FROM runs")
    (tags,), = store._query("SELECT count(*) FROM run_tags")
    return (top, n, tags)
