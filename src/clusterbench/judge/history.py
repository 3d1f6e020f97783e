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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from clusterbench.errors import UsageError
from clusterbench.families import IDENTITY_PARAMS, family_of, higher_is_better
from clusterbench.judge.changepoint import Change, Settings, find_changes, runs_needed
from clusterbench.judge.stats import median
from clusterbench.records import Measurement, Run
from clusterbench.store import Store
from clusterbench.store.selectors import parse_since as since_text
from clusterbench.units import format_size, parse_size

BY = ("host", "device")
REGRESSION, IMPROVEMENT = "regression", "improvement"


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``30d``, ``12h``, ``2w`` (an age) or an ISO date/time (``2025-01-31``) -> a UTC time, as
    every command's ``--since`` reads it (store/selectors.py)."""
    return datetime.fromisoformat(since_text(text, now).replace("Z", "+00:00"))


def parse_time(text: str | None) -> datetime | None:
    """A stored ISO 8601 time (``2025-03-01T03:00:00.000Z``) as an aware datetime; None if unreadable."""
    try:
        t = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def run_time(run: Run) -> datetime | None:
    return parse_time(run.started_at)


def select_history(store: Any, selectors: Sequence[str], since: datetime | None = None) -> list[Run]:
    """The runs a history covers, oldest first: those the selectors name (the store's grammar: a
    run id, ``last``, ``key=value`` tags; none: every run), started at or after ``since``.

    Kept in one place so ``trend`` and ``export openmetrics`` switch to a shared selector grammar
    together."""
    if selectors:
        found: dict[int, Run] = {}
        for sel in selectors:
            for r in store.select(sel):
                found.setdefault(r.id, r)
        runs = list(found.values())
    else:
        runs = store.list_runs(oldest_first=True)
    if since is not None:
        runs = [r for r in runs if (t := run_time(r)) is not None and t >= since]
    return sorted(runs, key=_time_order)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _time_order(run: Run) -> tuple[bool, datetime, int]:
    """Runs by the instant they started, unreadable times first: the text alone misorders times
    written with other offsets (an imported ``05:00+02:00`` is before ``04:00Z``)."""
    t = run_time(run)
    return t is not None, t or _EPOCH, run.id or 0


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
        return family.label(self.benchmark, row) if family else self.benchmark

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
                 benchmark: str | None = None, by: str = "host", size: int | None = None) -> list[Series]:
    """Series of ``metric`` (default: each benchmark's headline) per host or device, runs in the
    order given. ``size``: keep rows with this ``bytes`` param (default: each run's largest)."""
    if by not in BY:
        raise UsageError(f"--by must be one of {', '.join(BY)}, got {by!r}")
    series: dict[tuple, Series] = {}
    for run, ms in runs:
        wanted = [m for m in ms if (benchmark is None or m.benchmark == benchmark)
                  and m.metric == (metric or _headline(m.benchmark))]
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
            row = {k: v for k, v in m.params.items() if k not in IDENTITY_PARAMS}
            device = str(m.params["device"]) if by == "device" else None
            key = (m.benchmark, m.metric, json.dumps(row, sort_keys=True, default=str),
                   _host_of(run, m), device)
            per_run.setdefault(key, []).append(m.value)
            units[key] = m.unit
        for key, values in per_run.items():
            s = series.get(key)
            if s is None:
                s = series[key] = Series(key[0], key[1], units[key], json.loads(key[2]), key[3], key[4])
            point = Point(run.id, run.started_at, median(values))
            (s.points if math.isfinite(point.value) else s.left_out).append(point)
    return sorted(series.values(), key=lambda s: (s.benchmark, s.metric, s.label, s.entity))


def detect(series: Iterable[Series], settings: Settings = Settings()) -> list[Series]:
    """Fill each series' ``changes``, after moving points that are not finite to ``left_out``
    (an infinite value has no rank, and one bad run must not cost the whole series); return them."""
    out = []
    for s in series:
        s.left_out += [p for p in s.points if not math.isfinite(p.value)]
        s.points = [p for p in s.points if math.isfinite(p.value)]
        s.changes = find_changes([p.value for p in s.points], settings)
        out.append(s)
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
    """``trend``'s series of the selected runs, with the changes found in them."""

    runs: list[Run]           # oldest first
    series: list[Series]
    settings: Settings

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


def stored_trend(db: str | os.PathLike[str] | None, selectors: Sequence[str], since: str | None = None, *,
                 metric: str | None = None, benchmark: str | None = None, by: str = "host",
                 size: str | None = None, settings: Settings = Settings()) -> Trend:
    """The series of the runs ``selectors`` pick in ``db`` (none: every run) started since
    ``since`` (``30d``, ``2025-01-31``), ``size`` the ``--bytes`` of the rows (default: each
    run's largest), with their changes. No run, or no measurement to follow, is a UsageError."""
    since_t = parse_since(since) if since else None
    with Store.open_to_read(db) as store:
        runs = select_history(store, selectors, since_t)
        found = store.measurements_by_run([r.id for r in runs])   # not a query per run
        loaded = [(r, found[r.id]) for r in runs]
    if not runs:
        raise UsageError("no run in the selection" + (f" since {since}" if since else ""))
    series = detect(build_series(loaded, metric=metric, benchmark=benchmark, by=by,
                                 size=parse_size(size, "--bytes") if size else None), settings)
    if not series:
        raise UsageError(f"no {metric or 'headline'} measurement in the {len(runs)} selected run(s)"
                         + (f" for {benchmark}" if benchmark else "")
                         # the size is often why: the rows exist, at other sizes
                         + (f" at --bytes {size}" if size else "")
                         + (" per device (--by device: rows with a device param)" if by == "device" else ""))
    return Trend(runs, series, settings)
