"""Per-host (or per-GPU) history of a benchmark's headline metric across stored runs, and the
changes of level found in it (``clusterbench trend``, the trend figure of ``report``).

A series is one row (benchmark, metric, params minus host/device/rank) on one host or one GPU,
one point per run in time order: the median of that run's values there. Rows with a ``bytes``
param keep only the largest size of each run by default (the number people quote: busbw at
8 GiB), or the size asked for. Changes come from ``judge.changepoint``; a change in the bad
direction of the metric (lower bandwidth, higher latency) is a regression. A point whose value
is not finite has no rank to test: it is left out of the series and kept in ``left_out`` so the
output can say so.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from clusterbench.errors import UsageError
from clusterbench.families import IDENTITY_PARAMS, family_of, higher_is_better
from clusterbench.judge.changepoint import Change, Settings, find_changes, may_change, runs_needed
from clusterbench.judge.params_text import ParamsText
from clusterbench.judge.stats import median
from clusterbench.records import Measurement, Run
from clusterbench.store import Store, fleet
from clusterbench.store.selectors import parse_age
from clusterbench.store.selectors import parse_since as since_text
from clusterbench.units import format_size, parse_size

BY = ("host", "device")
REGRESSION, IMPROVEMENT = "regression", "improvement"


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``30d``, ``12h``, ``2w`` (an age) or an ISO date/time (``2025-01-31``) -> a UTC time, as
    every command's ``--since`` reads it (store/selectors.py)."""
    return datetime.fromisoformat(since_text(text, now).replace("Z", "+00:00"))


def current_since(since: str | None, window: str | None, now: datetime | None = None) -> datetime | None:
    """The start of what counts: ``--since`` (an age or a date), ``--window`` (an age back from
    ``now``), whichever is later; None for neither."""
    now = now or datetime.now(timezone.utc)
    found = [parse_since(since, now)] if since else []
    if window:
        found.append(now - timedelta(seconds=parse_age(window)))
    return max(found) if found else None


def parse_time(text: str | None) -> datetime | None:
    """A stored ISO 8601 time (``2025-03-01T03:00:00.000Z``) as an aware datetime; None if unreadable."""
    try:
        t = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def run_time(run: Run) -> datetime | None:
    return parse_time(run.started_at)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class RunRef:
    """A run a trend covers, as far as its output names it."""

    id: int
    started_at: str


@dataclass(frozen=True)
class Point:
    run: int | None
    started_at: str
    value: float


@dataclass
class Series:
    benchmark: str
    metric: str
    unit: str
    row: dict[str, Any]          # the params that say what was measured
    host: str
    device: str | None = None    # with --by device
    points: list[Point] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    left_out: list[Point] = field(default_factory=list)  # runs whose value is not finite
    apart: str = ""   # the params that tell it from another series of the same label (``distinguish``)

    @property
    def higher_is_better(self) -> bool:
        return higher_is_better(self.benchmark, self.metric, self.unit)

    @property
    def entity(self) -> str:
        return self.host if self.device is None else f"{self.host}:{self.device}"

    @property
    def label(self) -> str:
        """``all_reduce 8G float sum in``: the row as people name it (count restates bytes)."""
        row = {k: (format_size(v) if k == "bytes" and isinstance(v, int) else v)
               for k, v in self.row.items() if k != "count"}
        family = family_of(self.benchmark)
        base = family.label(self.benchmark, row) if family else self.benchmark
        return f"{base} {self.apart}" if self.apart else base

    def kind(self, c: Change) -> str:
        worse = c.after < c.before if self.higher_is_better else c.after > c.before
        return REGRESSION if worse else IMPROVEMENT

    @property
    def open_regression(self) -> Change | None:
        """The latest change, when it is a regression: the series sits at a worse level now."""
        if self.changes and self.kind(self.changes[-1]) == REGRESSION:
            return self.changes[-1]
        return None

    def change_dict(self, c: Change) -> dict[str, Any]:
        p = self.points[c.index]
        return {"kind": self.kind(c), "benchmark": self.benchmark, "metric": self.metric,
                "params": self.row, "host": self.host, "device": self.device, "unit": self.unit,
                "run": p.run, "started_at": p.started_at, "index": c.index, "before": c.before,
                "after": c.after, "change_pct": c.relative * 100, "p_value": c.p_value,
                "confidence": c.confidence, "z": c.z, "points": len(self.points)}


def _headline(benchmark: str) -> str | None:
    family = family_of(benchmark)
    return family.headline.name if family and family.headline else None


def _host_of(run: Run, m: Measurement) -> str:
    host = m.params.get("host")
    if host is not None:
        return str(host)
    if run.tags.get("node"):
        return run.tags["node"]
    if len(run.hosts) == 1:
        return run.hosts[0]
    return ",".join(run.hosts) or "?"


def build_series(runs: Iterable[tuple[Run, list[Measurement]]], *, metric: str | None = None,
                 benchmark: str | None = None, by: str = "host", size: int | None = None,
                 last: int | None = None) -> list[Series]:
    """Series of ``metric`` (default: each benchmark's headline) per host or device, runs in the
    order given. ``size``: keep rows with this ``bytes`` param (default: each run's largest);
    ``last``: each series' newest ``last`` runs only."""
    if by not in BY:
        raise UsageError(f"--by must be one of {', '.join(BY)}, got {by!r}")
    series: dict[tuple, Series] = {}
    text = ParamsText(IDENTITY_PARAMS)   # each row's params less the host's, written once
    headline: dict[str, str | None] = {}   # each benchmark's, asked once and not once a record
    for run, ms in runs:
        wanted = [m for m in ms if (benchmark is None or m.benchmark == benchmark)
                  and m.metric == (metric or (headline[m.benchmark] if m.benchmark in headline
                                              else headline.setdefault(m.benchmark, _headline(m.benchmark))))]
        if by == "device":
            wanted = [m for m in wanted if m.params.get("device") not in (None, "all")]
        top: dict[tuple[str, str], Any] = {}
        for m in wanted:
            b = m.params.get("bytes")
            if isinstance(b, (int, float)):
                key = (m.benchmark, m.metric)
                top[key] = max(top.get(key, b), b)
        per_run: dict[tuple, list[float]] = {}
        units: dict[tuple, str] = {}
        for m in wanted:
            b = m.params.get("bytes")
            if isinstance(b, (int, float)) and b != (size if size is not None else top[(m.benchmark, m.metric)]):
                continue
            device = str(m.params["device"]) if by == "device" else None
            key = (m.benchmark, m.metric, text(m.params), _host_of(run, m), device)
            per_run.setdefault(key, []).append(m.value)
            units[key] = m.unit
        for key, values in per_run.items():
            s = series.get(key)
            if s is None:
                s = series[key] = Series(key[0], key[1], units[key], json.loads(key[2]), key[3], key[4])
            point = Point(run.id, run.started_at, median(values))
            (s.points if math.isfinite(point.value) else s.left_out).append(point)
            if last is not None and len(s.points) > 2 * last:   # trimmed now and then: memory bounded
                del s.points[:-last]
    if last is not None:
        for s in series.values():
            del s.points[:-last]
    return _sorted(distinguish(list(series.values())))


def _sorted(series: list[Series]) -> list[Series]:
    return sorted(series, key=lambda s: (s.entity, s.benchmark, s.metric, s.label))


def distinguish(series: list[Series]) -> list[Series]:
    """Give series of one host (or GPU) that would print under one label (``vm stream Copy`` at
    two array sizes) the params that tell them apart, ``array_size=65536``: a label names one
    series."""
    same: dict[tuple[str, str, str], list[Series]] = {}
    for s in series:
        s.apart = ""
        same.setdefault((s.entity, s.metric, s.label), []).append(s)
    for group in same.values():
        if len(group) < 2:
            continue
        keys = sorted({k for s in group for k in s.row})
        differ = [k for k in keys if len({json.dumps(s.row.get(k), sort_keys=True, default=str) for s in group}) > 1]
        for s in group:
            s.apart = " ".join(f"{k}={s.row[k]}" if k in s.row else f"no {k}" for k in differ)
    return series


def detect(series: Iterable[Series], settings: Settings = Settings()) -> list[Series]:
    """Fill each series' ``changes``, after moving points that are not finite to ``left_out``
    (an infinite value has no rank, and one bad run must not cost the whole series); return them."""
    out = list(series)
    for s in out:
        s.left_out += [p for p in s.points if not math.isfinite(p.value)]
        s.points = [p for p in s.points if math.isfinite(p.value)]
    # the series that cannot have a change are found for all at once (most of a fleet's): the
    # others are searched one by one, with the same answer either way
    values = [[p.value for p in s.points] for s in out]
    for s, x, maybe in zip(out, values, may_change(values, settings)):
        s.changes = find_changes(x, settings) if maybe else []
    return out


def too_short(s: Series, settings: Settings = Settings()) -> str:
    """Why no change can be found in ``s`` whatever its values, or "" when one can."""
    needed = runs_needed(settings)
    if needed is None:
        return (f"no series can show a change at alpha {settings.alpha:g} with {settings.permutations} "
                "permutations")
    if len(s.points) < needed:
        runs = f"{len(s.points)} run" + ("" if len(s.points) == 1 else "s")
        return f"{runs}: at least {needed} are needed to detect a change at alpha {settings.alpha:g}"
    return ""


def series_notes(s: Series, settings: Settings = Settings()) -> list[tuple[int | None, str]]:
    """(run, text) of what a series' row cannot show: runs left out, a series too short to show
    a change (``trend`` prints them, the report lists them: "no change" from a series that could
    not show one is no evidence of stability)."""
    name = f"{s.entity} {s.label} {s.metric}"
    out: list[tuple[int | None, str]] = [
        (p.run, f"{name}: run {p.run} left out, its value is not finite ({p.value})") for p in s.left_out]
    if why := too_short(s, settings):
        out.append((None, f"{name}: {why}"))
    return out


@dataclass
class Trend:
    """``trend``'s series of the selected runs, with the changes found in them, host by host."""

    runs: list[RunRef]        # oldest first
    series: list[Series]      # by host (or GPU), then row
    settings: Settings
    window: int | None = None   # each series' newest runs only

    def changes(self) -> list[tuple[Series, Change]]:
        return [(s, c) for s in self.series for c in s.changes]

    def regressions(self) -> int:
        return sum(s.kind(c) == REGRESSION for s, c in self.changes())

    def open_regressions(self) -> list[Series]:
        """The series whose latest change is a regression (not recovered)."""
        return [s for s in self.series if s.open_regression is not None]

    def too_short(self) -> list[Series]:
        return [s for s in self.series if too_short(s, self.settings)]

    def points_left_out(self) -> int:
        return sum(len(s.left_out) for s in self.series)

    def notes(self) -> list[tuple[int | None, str]]:
        return [n for s in self.series for n in series_notes(s, self.settings)]

    def hosts(self) -> list[HostTrend]:
        """The series grouped by host, in host order."""
        found: dict[str, list[Series]] = {}
        for s in self.series:
            found.setdefault(s.host, []).append(s)
        return [HostTrend(h, found[h]) for h in sorted(found)]


@dataclass
class HostTrend:
    """One host's series (per GPU too, with ``--by device``)."""

    host: str
    series: list[Series]

    def changes(self) -> list[tuple[Series, Change]]:
        return [(s, c) for s in self.series for c in s.changes]

    def worst(self) -> tuple[Series, Change] | None:
        """The change that matters most: a regression not recovered from, then any regression,
        then an improvement; of those, the largest move."""
        def weight(sc: tuple[Series, Change]) -> tuple[int, float]:
            s, c = sc
            rel = abs(c.relative) if math.isfinite(c.relative) else math.inf
            rank = 0 if s.open_regression is c else 1 if s.kind(c) == REGRESSION else 2
            return rank, -rel
        found = self.changes()
        return min(found, key=weight) if found else None


# How many of its newest runs a series' changes are searched in by default: two months of
# nightly runs, enough to find a step of a few percent, and a bound on what a trend over a
# fleet's whole history reads (docs/fleet.md).
WINDOW = 60


def stored_trend(db: str | os.PathLike[str] | None, selectors: Sequence[str], since: str | None = None, *,
                 metric: str | None = None, benchmark: str | None = None, by: str = "host",
                 size: str | None = None, settings: Settings = Settings(), every: bool = False,
                 window: int | None = WINDOW) -> Trend:
    """The series of the runs ``selectors`` pick in ``db`` (none: every run) started since
    ``since`` (``30d``, ``2025-01-31``), each its newest ``window`` runs (None: all), with their
    changes. By default the headline series (``families.headline``), read from the
    store's index; with ``every``, ``metric`` or ``size`` (the ``--bytes`` of the rows; default:
    each run's largest) every row of the metric, read from the runs' measurements a chunk of runs
    at a time. No run, or no measurement to follow, is a UsageError."""
    if by not in BY:
        raise UsageError(f"--by must be one of {', '.join(BY)}, got {by!r}")
    since_t = parse_since(since) if since else None
    with Store.open_to_read(db) as store:
        sel = fleet.Selection(store, selectors, since_t.timestamp() if since_t else None)
        if every or metric is not None or size is not None:
            runs: list[RunRef] = []

            def stream() -> Iterator[tuple[Run, list[Measurement]]]:
                for run, ms in fleet.stream_runs(sel):
                    runs.append(RunRef(int(run.id or 0), run.started_at))
                    yield run, ms

            series = build_series(stream(), metric=metric, benchmark=benchmark, by=by,
                                  size=parse_size(size, "--bytes") if size else None, last=window)
            selected = len(runs)
        else:
            series, runs = _headline_series(sel, benchmark=benchmark, by=by, last=window)
            selected = fleet.count(sel)
    if not selected:
        raise UsageError("no run in the selection" + (f" since {since}" if since else ""))
    series = detect(series, settings)
    if not series:
        raise UsageError(f"no {metric or 'headline'} measurement in the {selected} selected run(s)"
                         + (f" for {benchmark}" if benchmark else "")
                         # the size is often why: the rows exist, at other sizes
                         + (f" at --bytes {size}" if size else "")
                         + (" per device (--by device: rows with a device param)" if by == "device" else ""))
    used = {p.run for s in series for p in (*s.points, *s.left_out)}
    runs = [r for r in runs if r.id in used] if every or metric is not None or size is not None else runs
    return Trend(sorted(runs, key=lambda r: (_readable_time(r.started_at), r.id)), series, settings, window)


def _readable_time(text: str) -> tuple[bool, datetime]:
    t = parse_time(text)
    return t is not None, t or _EPOCH


def _newest_series(sel: fleet.Selection, *, benchmark: str | None, by: str,
                   last: int) -> tuple[list[Series], list[RunRef]]:
    """``_headline_series`` of every run: the stored series, then each one's newest ``last``
    values in one indexed query, a row's work a lookup and an append."""
    keyed: dict[int, tuple[tuple[str, Any, ...], ...] | None] = {}
    meta: dict[tuple[Any, ...], tuple[str, dict[str, Any], str | None]] = {}
    for st in fleet.every_series(sel.store):
        group = _group(st, benchmark, by)
        keyed[st.id] = None if group is None else (st.host, *group[0])
        if group is not None:
            meta[(st.host, *group[0])] = group[1]
    groups: dict[tuple[Any, ...], dict[int, list[float]]] = {}
    when: dict[int, float] = {}
    # a series' rows come together: its group looked up once, then a lookup and an append a row
    current, per_run = None, None
    for sid, run, started, value in fleet.newest_values(sel, last):
        if sid != current:
            current = sid
            key = keyed.get(sid)
            per_run = None if key is None else groups.setdefault(key, {})
        if per_run is None:
            continue
        values = per_run.get(run)
        if values is None:
            per_run[run] = [value]
            when[run] = started
        else:
            values.append(value)
    texts = fleet.run_starts(sel.store, when)
    return _sorted(distinguish(_built(groups, meta, when, texts))), [RunRef(r, texts.get(r, "")) for r in when]


def _built(groups: dict[tuple[Any, ...], dict[int, list[float]]],
           meta: dict[tuple[Any, ...], tuple[str, dict[str, Any], str | None]],
           started: dict[int, float], texts: dict[int, str]) -> list[Series]:
    """The trend series of stored values grouped by their series key (host, then ``_group``'s)
    and run: a run's point the median of its values there (a host's GPUs), in start order."""
    series: list[Series] = []
    for key, per_run in groups.items():
        unit, row, device = meta[key]
        s = Series(key[1], key[2], unit, row, key[0], device)
        for run in sorted(per_run, key=lambda r: (started[r], r)):
            vs = per_run[run]
            point = Point(run, texts.get(run, ""), vs[0] if len(vs) == 1 else median(vs))
            (s.points if math.isfinite(point.value) else s.left_out).append(point)
        series.append(s)
    return series


def _group(v: fleet.StoredSeries, benchmark: str | None,
           by: str) -> tuple[tuple[Any, ...], tuple[str, dict[str, Any], str | None]] | None:
    """The trend series a stored headline series' values go to (a host's GPUs one series, or
    each its own ``by`` device) and its unit, params and device; None where it is not followed."""
    if benchmark is not None and v.benchmark != benchmark:
        return None
    device = v.params.get("device")
    if by == "device" and device in (None, "all"):
        return None
    row = {k: x for k, x in v.params.items() if k not in IDENTITY_PARAMS}
    if v.nodes > 1:
        row["nodes"] = v.nodes
    dev = str(device) if by == "device" else None
    return (v.benchmark, v.metric, v.unit, json.dumps(row, sort_keys=True, default=str), dev), (v.unit, row, dev)


def _headline_series(sel: fleet.Selection, *, benchmark: str | None, by: str,
                     last: int | None) -> tuple[list[Series], list[RunRef]]:
    """The headline series of every host, from the store's index, each host's GPUs one series (a
    run's point the median over them) or, ``by`` device, one each: every run's in one query of
    each series' newest ``last`` values, a selection's a query per host."""
    if sel.ids is None and last is not None:
        return _newest_series(sel, benchmark=benchmark, by=by, last=last)
    series: list[Series] = []
    runs: dict[int, RunRef] = {}
    for host in fleet.hosts(sel.store):
        groups: dict[tuple[Any, ...], dict[int, list[float]]] = {}
        meta: dict[tuple[Any, ...], tuple[str, dict[str, Any], str | None]] = {}
        started: dict[int, float] = {}
        texts: dict[int, str] = {}
        # a stored series' group, found once: its many values share it (None: not followed)
        keyed: dict[int, tuple[Any, ...] | None] = {}
        for v in fleet.host_values(sel, host, last=last):
            if v.id in keyed:
                key = keyed[v.id]
            else:
                group = _group(v, benchmark, by)
                key = keyed[v.id] = None if group is None else (host, *group[0])
                if group is not None:
                    meta[key] = group[1]
            if key is None:
                continue
            groups.setdefault(key, {}).setdefault(v.run, []).append(v.value)
            if v.run not in started:
                started[v.run], texts[v.run] = v.started, v.started_at
                runs.setdefault(v.run, RunRef(v.run, v.started_at))
        series += _built(groups, meta, started, texts)
    return _sorted(distinguish(series)), list(runs.values())
