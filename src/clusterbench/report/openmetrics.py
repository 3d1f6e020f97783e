"""Stored results as Prometheus gauges: the text exposition format for node_exporter's textfile
collector (``clusterbench export openmetrics``) and the same gauges on ``/metrics``
(``clusterbench serve-metrics``, with the ``prometheus-client`` library).

What is exported is the *latest* state: among the selected runs, the newest value of every row
on every host (a run from last night replaces the one from the night before; rows it did not
measure keep their last value). Gauges:

- ``clusterbench_<family>_<metric>_<unit>``: each family's headline metric (busbw, stream and
  transfer bandwidth, GEMM throughput, ...) in base units (bytes per second, FLOP per second,
  seconds), labelled with ``benchmark``, ``host`` (one name: a multi-node result is a series on
  each of its hosts, with ``nodes``, how many), ``device`` and the row's params (``bytes``,
  ``dtype``, ``kernel``, ``placement``, ``src``, ``dst`` ...);
- ``clusterbench_last_run_timestamp_seconds{benchmark, host}``: when the newest run started;
- ``clusterbench_criterion_passed{profile, criterion, benchmark, metric, host}``: 1 pass, 0 fail
  or error, per host, with ``--profile`` (skipped criteria are absent);
- ``clusterbench_preflight_check_ok{check, host}``: 1 ok or warning, 0 fail, from the preflight
  stored with runs (``clusterbench run``, ``qualify``).

Names follow Prometheus' conventions: a ``clusterbench_`` prefix, the unit spelled out in base
units at the end, no ``_total`` (gauges, not counters). Samples carry no timestamps (node_exporter
rejects them in text files); the run's time is a gauge of its own.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from clusterbench.errors import UsageError
from clusterbench.families import FAMILIES, IDENTITY_PARAMS, Family, family_of
from clusterbench.judge.history import run_time
from clusterbench.judge.profiles import Profile
from clusterbench.judge.select import Row
from clusterbench.judge.validate import ERROR, FAIL, PASS, evaluate
from clusterbench.records import Measurement, Run
from clusterbench.store import fleet
from clusterbench.store.fleet import SeriesValue

PREFIX = "clusterbench"
TIMESTAMP = f"{PREFIX}_last_run_timestamp_seconds"
CRITERION = f"{PREFIX}_criterion_passed"
PREFLIGHT = f"{PREFIX}_preflight_check_ok"
EXPORT_OK = f"{PREFIX}_export_success"
# Measurement unit -> (Prometheus base-unit suffix, factor to it).
BASE_UNITS: dict[str, tuple[str, float]] = {
    "GB/s": ("bytes_per_second", 1e9),
    "TFLOP/s": ("flop_per_second", 1e12),
    "TOP/s": ("operations_per_second", 1e12),   # an int8 GEMM's integer operations
    "us": ("seconds", 1e-6),
    "ms": ("seconds", 1e-3),
    "s": ("seconds", 1.0),
    "bytes": ("bytes", 1.0),
    "Mpps": ("packets_per_second", 1e6),
    "samples/s": ("samples_per_second", 1.0),
    "tokens/s": ("tokens_per_second", 1.0),
    "tok/s": ("tokens_per_second", 1.0),
    "req/s": ("requests_per_second", 1.0),
    "%": ("ratio", 0.01),
    "": ("", 1.0),
}
# Metric-name endings that only repeat the unit (time_us, tokens_per_s, tflops).
_UNIT_WORDS = re.compile(r"(^|_)(us|ms|s|pct|percent|bytes|per_s|tflops)$")
_LABEL = re.compile(r"[^a-zA-Z0-9_]")
# Params that are never labels: identities handled as host/device, and counts that only
# restate another label (count follows bytes). A rank is a label: the rows of one run that differ
# only in it (a multi-rank TransferBench's executors) would otherwise be one series, the last
# rank's value standing for every rank's.
_NOT_LABELS = (IDENTITY_PARAMS - {"rank", "local_rank"}) | {"count"}
# Labels of a headline gauge that are not params: a param named so is labelled param_<name>.
# ``nodes``: how many hosts a multi-node result spans (absent on a single node's), so that its
# series on each host differ from that host's own results. ``le`` and ``quantile`` belong to
# histograms and summaries: on a gauge, promtool refuses them and PromQL's quantile functions
# would read them.
_OWN_LABELS = ("benchmark", "host", "device", "nodes", "le", "quantile")


def metric_name(family: Family, metric: str, unit: str) -> tuple[str, float]:
    """Prometheus name and unit factor of a family's metric: busbw in GB/s ->
    ``clusterbench_collectives_busbw_bytes_per_second``, 1e9."""
    if unit not in BASE_UNITS:
        raise ValueError(f"no Prometheus base unit for {unit!r}")
    suffix, factor = BASE_UNITS[unit]
    stem = _UNIT_WORDS.sub("", metric)
    parts = [PREFIX, family.name]
    if stem and not suffix.startswith(stem + "_"):
        parts.append(stem)
    if suffix:
        parts.append(suffix)
    return _LABEL.sub("_", "_".join(parts)), factor


def headline_names() -> dict[str, str]:
    """Every name a headline gauge can have, with its family: what dashboards may query."""
    out = {}
    for f in FAMILIES:
        for unit in (f.headline.unit, f.headline.integer_unit) if f.headline is not None else ():
            if unit in BASE_UNITS:
                out[metric_name(f, f.headline.name, unit)[0]] = f.name
    return out


def exported_names() -> set[str]:
    return set(headline_names()) | {TIMESTAMP, CRITERION, PREFLIGHT, EXPORT_OK}


@dataclass
class Gauge:
    name: str
    help: str
    labels: tuple[str, ...] = ()
    samples: dict[tuple[str, ...], float] = field(default_factory=dict)

    def add(self, labels: dict[str, str], value: float) -> None:
        missing = set(labels) - set(self.labels)
        if missing:
            self.labels += tuple(sorted(missing))
            self.samples = {k + ("",) * len(missing): v for k, v in self.samples.items()}
        self.samples[tuple(labels.get(k, "") for k in self.labels)] = value


def hosts_of(run: Run, m: Measurement | None = None) -> list[str]:
    """Which nodes a value belongs to: its ``host`` param, the run's ``node`` tag, else the run's
    hosts (a multi-node result belongs to each of them). Each is one ``host`` label of its own:
    names joined in one label could not be told apart from one name holding a comma."""
    if m is not None and m.params.get("host") is not None:
        return [str(m.params["host"])]
    if run.tags.get("node"):
        return [run.tags["node"]]
    return list(dict.fromkeys(run.hosts)) or ["unknown"]


def label_name(param: str) -> str:
    """A param as a Prometheus label name: snake_case (transA -> trans_a), [a-z0-9_] only, never
    empty and never starting with ``__`` (reserved: ``__name__`` would rename the series)."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", param).lower()
    snake = _LABEL.sub("_", snake)
    if snake.startswith("__"):
        snake = "_" + snake.lstrip("_")
    return snake if snake and not snake[:1].isdigit() else "_" + snake


def _label_value(v: Any) -> str:
    """A param's value as a label value; an absent one (None, JSON null) is "", which is how
    Prometheus spells a label a series does not have (never the word "None")."""
    if v is None:
        return ""
    return str(v).lower() if isinstance(v, bool) else str(v)


def _has_value(v: Any) -> bool:
    """Whether a param gives its row a label: None and "" do not (both read as absent), so the
    rows that have it, lack it or hold null are one series, not three with one label set."""
    return v is not None and v != ""


@dataclass(frozen=True)
class HostRow:
    """A row as exported on one host: ``nodes``, the hosts its result spans."""

    host: str
    nodes: int
    row: Row


def latest_rows(runs: Iterable[tuple[Run, list[Measurement]]],
                wanted: Callable[[Measurement], bool] | None = None) -> list[HostRow]:
    """The newest value of every (benchmark, metric, params, host, nodes) among ``runs``, which
    come oldest first; each row keeps its run. ``wanted``: which measurements count (default all)."""
    latest: dict[tuple, HostRow] = {}
    for run, ms in runs:
        run_hosts = hosts_of(run)
        for m in ms:
            if wanted is not None and not wanted(m):
                continue
            hosts = run_hosts if m.params.get("host") is None else [str(m.params["host"])]
            params = tuple(sorted((k, str(v)) for k, v in m.params.items() if _has_value(v)))
            row = Row(run, m)
            for host in hosts:
                latest[(m.benchmark, m.metric, host, len(hosts), params)] = HostRow(host, len(hosts), row)
    return list(latest.values())


def is_headline(m: Measurement) -> bool:
    return _headline(m.benchmark, m.metric)


@functools.lru_cache(maxsize=4096)   # the family table is fixed; asked once per stored measurement
def _headline(benchmark: str, metric: str) -> bool:
    family = family_of(benchmark)
    return family is not None and family.headline is not None and metric == family.headline.name


def _labels(benchmark: str, host: str, nodes: int, params: dict[str, Any]) -> dict[str, str]:
    """A headline gauge's labels: benchmark, host, device, nodes (a multi-node result's) and the
    row's params (see ``label_name``)."""
    labels = {"benchmark": benchmark, "host": host, "device": _label_value(params.get("device", "")),
              "nodes": str(nodes) if nodes > 1 else ""}
    # sorted, so two params that read as one label name ("a-b", "a.b") get the same names on
    # every row; one that would overwrite benchmark/host/device/nodes or an earlier one is prefixed
    for k, v in sorted(params.items()):
        if k not in _NOT_LABELS and _has_value(v):
            name = label_name(k)
            while name in labels or name in _OWN_LABELS:
                name = "param_" + name
            labels[name] = _label_value(v)
    return labels


def _gauge_of(gauges: dict[str, Gauge], benchmark: str, metric: str, unit: str) -> tuple[Gauge, float] | None:
    family = family_of(benchmark)
    if family is None:
        return None
    try:
        name, factor = metric_name(family, metric, unit)
    except ValueError:
        return None  # a unit Prometheus has no base unit for here: not exported
    g = gauges.setdefault(name, Gauge(name, f"{family.title}: {metric} ({unit} in the record), "
                                            f"latest run per host and row"))
    return g, factor


def _headline_gauges(rows: Sequence[HostRow], gauges: dict[str, Gauge]) -> None:
    """Every row of each family's headline metric (``--all``)."""
    for r in rows:
        m = r.row.m
        if not is_headline(m):
            continue
        found = _gauge_of(gauges, m.benchmark, m.metric, m.unit)
        if found is not None:
            g, factor = found
            g.add(_labels(m.benchmark, r.host, r.nodes, m.params), in_base_unit(m.value, factor))


def _series_gauges(values: Iterable[SeriesValue], gauges: dict[str, Gauge]) -> None:
    """The headline series (the default view): their newest values, from the store's index.
    Oldest first: two series whose params differ only by a null (``redop: null`` and no redop)
    have one label set, and the newer value is the one kept."""
    for v in sorted(values, key=lambda v: (v.started, v.run)):
        found = _gauge_of(gauges, v.benchmark, v.metric, v.unit)
        if found is not None:
            g, factor = found
            g.add(_labels(v.benchmark, v.host, v.nodes, v.params), in_base_unit(v.value, factor))


def in_base_unit(value: float, factor: float) -> float:
    """A record's value in the gauge's base unit. A value already in it is exported exactly as
    stored (the same float64, which is what Prometheus holds too); a converted one is rounded to
    15 significant digits: 4269.126275 GB/s is 4269126275000.0 B/s, not ...000.0005. A value
    whose conversion passes the float limit (1.7e308 GB/s) is +Inf, as in IEEE arithmetic:
    no float holds 1.7e317."""
    if factor == 1.0:
        return value
    return float(format(value * factor, ".15g"))


def _timestamps(runs: Sequence[tuple[Run, list[Measurement]]], gauges: dict[str, Gauge]) -> None:
    g = gauges.setdefault(TIMESTAMP, Gauge(TIMESTAMP, "Start of the newest stored run, per benchmark "
                                                      "and host (Unix time)", ("benchmark", "host")))
    for run, _ in runs:
        t = run_time(run)
        if t is not None:
            for host in hosts_of(run):
                g.add({"benchmark": run.benchmark, "host": host}, t.timestamp())


def _criteria(rows: Sequence[HostRow], profile: Profile, gauges: dict[str, Gauge]) -> None:
    g = gauges.setdefault(CRITERION, Gauge(CRITERION, "Validation criterion on the host's latest results: "
                                                      "1 pass, 0 fail or error",
                                           ("profile", "criterion", "benchmark", "metric", "host")))
    by_host: dict[str, list[Row]] = {}
    for r in rows:
        by_host.setdefault(r.host, []).append(r.row)
    for host, host_rows in by_host.items():
        for o in evaluate(profile, host_rows):
            if o.status in (PASS, FAIL, ERROR):
                c = o.criterion
                g.add({"profile": profile.name, "criterion": c.name, "benchmark": c.benchmark,
                       "metric": c.metric, "host": host}, 1.0 if o.status == PASS else 0.0)


def _preflight(runs: Sequence[tuple[Run, list[Measurement]]], gauges: dict[str, Gauge]) -> None:
    g = gauges.setdefault(PREFLIGHT, Gauge(PREFLIGHT, "Preflight check stored with the host's newest run "
                                                      "that has one: 1 ok or warning, 0 fail", ("check", "host")))
    for run, _ in runs:
        pre = run.meta.get("preflight")
        if not isinstance(pre, dict):
            continue
        hosts = [str(pre["host"])] if pre.get("host") else hosts_of(run)
        for check in pre.get("checks") or []:
            if isinstance(check, dict) and check.get("status") in ("ok", "warning", "fail"):
                for host in hosts:
                    g.add({"check": str(check.get("check")), "host": host},
                          0.0 if check["status"] == "fail" else 1.0)


def from_store(db: str | None, selectors: Sequence[str], since: datetime | None,
               profile: Profile | None, every_row: bool = False) -> list[Gauge]:
    """The gauges of the selected runs (none: every run) started since ``since``, read from the
    database now: the headline series by default, with ``every_row`` every row of each family's
    headline metric (read from the runs' measurements)."""
    from clusterbench.store import Store

    with Store.open_to_read(db) as store:
        return read_gauges(store, selectors, since.timestamp() if since is not None else None, profile, every_row)


def read_gauges(store: Any, selectors: Sequence[str], since: float | None, profile: Profile | None,
                every_row: bool = False) -> list[Gauge]:
    """``from_store`` on an open store; ``since`` in Unix seconds. The database does the work: the
    newest value of each headline series is one indexed query, the run timestamps an aggregate;
    only ``every_row`` and a profile's criteria read measurements, a chunk of runs at a time, oldest
    first, keeping the newest value of each row (memory: the rows exported, not the runs read)."""
    sel = fleet.Selection(store, selectors, since)
    gauges: dict[str, Gauge] = {}
    rows: list[HostRow] = []
    if every_row or profile is not None:
        # without criteria only the headline rows are kept: the others (times, algbw, per-iteration
        # stats, most of a large history) are not keyed at all
        rows = latest_rows(fleet.stream_runs(sel), None if profile is not None else is_headline)
    if every_row:
        _headline_gauges(rows, gauges)
    else:
        _series_gauges(fleet.latest(sel), gauges)
    g = gauges.setdefault(TIMESTAMP, Gauge(TIMESTAMP, "Start of the newest stored run, per benchmark "
                                                      "and host (Unix time)", ("benchmark", "host")))
    for start in fleet.newest_runs(sel):
        for host in start.hosts:
            g.add({"benchmark": start.benchmark, "host": host}, start.started)
    if profile is not None:
        _criteria(rows, profile, gauges)
    _stored_preflight(fleet.with_preflight(sel), gauges)
    return [g for g in gauges.values() if g.samples]


def check_source(db: str | None, selectors: Sequence[str]) -> None:
    """Open the database and resolve the selectors: a missing database or a selector that picks
    nothing is a one-line error before anything is served."""
    from clusterbench.store import Store

    with Store.open_to_read(db) as store:
        fleet.Selection(store, selectors)


def store_token(db: str | None) -> object:
    """What says whether runs were stored since (``fleet.change_token``)."""
    from clusterbench.store import Store

    with Store.open_to_read(db) as store:
        return fleet.change_token(store)


def _stored_preflight(stored: Iterable[tuple[int, str, list[str], str | None, str]], gauges: dict[str, Gauge]) -> None:
    """``_preflight`` of runs read as (id, started_at, hosts, node tag, meta JSON): each check on
    each host from the newest run that has it."""
    newest: dict[tuple[str, str], tuple[tuple[bool, float, int], float]] = {}
    for rid, started, hosts, node, meta_text in stored:
        try:
            meta = json.loads(meta_text)
        except (TypeError, ValueError, RecursionError):
            continue
        pre = meta.get("preflight") if isinstance(meta, dict) else None
        if not isinstance(pre, dict):
            continue
        t = run_time(Run("", started_at=started))
        order = (t is not None, t.timestamp() if t else 0.0, rid)
        on = [str(pre["host"])] if pre.get("host") else [node] if node else list(dict.fromkeys(hosts)) or ["unknown"]
        for check in pre.get("checks") or []:
            if isinstance(check, dict) and check.get("status") in ("ok", "warning", "fail"):
                for host in on:
                    key = (str(check.get("check")), host)
                    if key not in newest or newest[key][0] <= order:
                        newest[key] = (order, 0.0 if check["status"] == "fail" else 1.0)
    g = gauges.setdefault(PREFLIGHT, Gauge(PREFLIGHT, "Preflight check stored with the host's newest run "
                                                      "that has one: 1 ok or warning, 0 fail", ("check", "host")))
    for (check, host), (_, value) in sorted(newest.items()):
        g.add({"check": check, "host": host}, value)


def collect(runs: Sequence[tuple[Run, list[Measurement]]], profile: Profile | None = None) -> list[Gauge]:
    """Gauges from runs in time order (oldest first), every row of each headline metric: the
    exporter over runs already in memory."""
    gauges: dict[str, Gauge] = {}
    rows = latest_rows(runs, None if profile is not None else is_headline)
    _headline_gauges(rows, gauges)
    _timestamps(runs, gauges)
    if profile is not None:
        _criteria(rows, profile, gauges)
    _preflight(runs, gauges)
    return [g for g in gauges.values() if g.samples]


# -- the text exposition format ---------------------------------------------------------------

def _escape_label(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n")


def _number(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    # the shortest text that reads back as the same float ("-0.0", "1e-300", "1.7e+308"), which
    # the exposition format's float syntax accepts as it is
    return repr(float(v))


def render_text(gauges: Sequence[Gauge]) -> str:
    """Prometheus text format 0.0.4, as node_exporter's textfile collector reads it, ended by
    OpenMetrics' ``# EOF``: a comment to the text format, and the line without which an OpenMetrics
    parser refuses the file (as cut short). Nothing selected is that line alone, never a blank
    line, which OpenMetrics does not allow."""
    out = []
    for g in sorted(gauges, key=lambda g: g.name):
        out.append(f"# HELP {g.name} {_escape_help(g.help)}")
        out.append(f"# TYPE {g.name} gauge")
        for values, v in sorted(g.samples.items()):
            labels = ",".join(f'{k}="{_escape_label(x)}"' for k, x in zip(g.labels, values) if x != "")
            out.append(f"{g.name}{{{labels}}} {_number(v)}" if labels else f"{g.name} {_number(v)}")
    out.append("# EOF")
    return "\n".join(out) + "\n"


# -- /metrics with prometheus-client ------------------------------------------------------------

def _client() -> Any:
    try:
        import prometheus_client
    except ImportError:
        raise UsageError("serve-metrics needs the prometheus-client package: "
                         "pip install 'clusterbench[metrics]'") from None
    return prometheus_client


class StoreCollector:
    """A prometheus-client collector that reads the database at every scrape, so a run stored a
    minute ago is on the next scrape; a scrape that cannot read the database reports
    ``clusterbench_export_success 0`` instead of failing."""

    def __init__(self, load: Callable[[], list[Gauge]], on_error: Callable[[str], None]) -> None:
        self.load = load
        self.on_error = on_error

    def collect(self) -> Iterable[Any]:
        from prometheus_client.core import GaugeMetricFamily

        ok = 1.0
        try:
            gauges = self.load()
        except Exception as e:  # noqa: BLE001 - a scrape must answer, whatever the database does
            self.on_error(f"{type(e).__name__}: {e}")
            gauges, ok = [], 0.0
        for g in gauges:
            fam = GaugeMetricFamily(g.name, g.help, labels=list(g.labels))
            for values, v in g.samples.items():
                fam.add_metric(list(values), v)
            yield fam
        yield GaugeMetricFamily(EXPORT_OK, "1 when the last scrape read the results database", value=ok)


class GaugeCache:
    """The gauges ``serve-metrics`` answers with, read by a thread of its own: a scrape is answered
    from memory at once and never reads the database, so a store of 100,000 runs is scraped in
    milliseconds and a scrape that a client gives up on leaves no work running behind it.

    Every ``refresh`` seconds ``changed()`` (a few aggregates over indexed columns: ``fleet.
    change_token``) says whether a run was stored, deleted or tagged since the last read; the
    gauges are read again when it was, every ``reread`` checks in any case (a tag's new value, a
    window that moved on), and at every check when ``always`` (a ``--window``). Until the first
    read has finished, and after a read that failed, a scrape gets ``clusterbench_export_success 0``
    and no gauges (the read's error goes to ``on_error``)."""

    def __init__(self, load: Callable[[], list[Gauge]], on_error: Callable[[str], None],
                 changed: Callable[[], object] | None = None, refresh: float = 15.0, reread: int = 20,
                 always: bool = False) -> None:
        self.load = load
        self.on_error = on_error
        self.changed = changed
        self.refresh = refresh
        self.reread = reread
        self.always = always
        self.reads = 0                       # reads finished, for tests and logs
        self.generation = 0                  # changes when a read swaps the gauges (or fails)
        self._families: list[Any] = []
        self._ok = 0.0
        self._stop = threading.Event()
        self._read_once = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> GaugeCache:
        self._thread = threading.Thread(target=self._loop, name="serve-metrics-reader", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def wait_read(self, timeout: float) -> bool:
        """Whether a first read finished (or failed) within ``timeout`` seconds."""
        return self._read_once.wait(timeout)

    def _loop(self) -> None:
        token: object = object()
        checks = 0
        while not self._stop.is_set():
            try:
                now = self.changed() if self.changed is not None else object()
            except Exception as e:  # noqa: BLE001 - a database that went away: the read says why
                self.on_error(f"{type(e).__name__}: {e}")
                now = object()
            if now != token or self.always or checks >= self.reread or not self._read_once.is_set():
                self._read()
                token, checks = now, 0
            checks += 1
            self._stop.wait(self.refresh)

    def _read(self) -> None:
        from prometheus_client.core import GaugeMetricFamily

        try:
            gauges = self.load()
            families = []
            for g in gauges:
                fam = GaugeMetricFamily(g.name, g.help, labels=list(g.labels))
                for values, v in g.samples.items():
                    fam.add_metric(list(values), v)
                families.append(fam)
            self._families, self._ok = families, 1.0
        except Exception as e:  # noqa: BLE001 - the server must go on answering, whatever the database does
            self.on_error(f"{type(e).__name__}: {e}")
            self._families, self._ok = [], 0.0
        self.generation += 1
        self.reads += 1
        self._read_once.set()

    def collect(self) -> Iterable[Any]:
        """The prometheus-client collector: what the last read found."""
        from prometheus_client.core import GaugeMetricFamily

        families, ok = self._families, self._ok   # one snapshot, swapped whole by the reader
        yield from families
        yield GaugeMetricFamily(EXPORT_OK, "1 when the last read of the results database succeeded", value=ok)


IDLE_TIMEOUT_S = 10.0      # a client that sends or reads nothing for this long is dropped
CONNECTION_DEADLINE_S = 60.0   # and one that trickles a byte at a time, after this long in all
MAX_CLIENTS = 256          # connections served at once; more wait to be accepted


def _app(metrics: Callable[..., Any]) -> Callable[..., Any]:
    """The WSGI app: the gauges on ``/metrics`` (GET, and HEAD without the body), a line
    pointing there on ``/``, 404 elsewhere (so a mistyped scrape path fails, instead of seeming
    to work), 405 for other methods."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        if method not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Allow", "GET, HEAD"), ("Content-Type", "text/plain")])
            return [f"{method} is not served here: use GET /metrics\n".encode()]
        if path == "/metrics":
            if method == "GET":
                return list(metrics(environ, start_response))
            captured: list[Any] = []
            body = b"".join(metrics({**environ, "REQUEST_METHOD": "GET"}, lambda *a: captured.append(a)))
            status, headers = captured[0][0], captured[0][1]
            start_response(status, [*headers, ("Content-Length", str(len(body)))])
            return []
        status, text = ("200 OK", "clusterbench metrics: /metrics\n") if path == "/" else \
            ("404 Not Found", "not found: the metrics are on /metrics\n")
        body = text.encode()
        start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))])
        return [] if method == "HEAD" else [body]

    return app


def _rendered_once(metrics: Callable[..., Any], generation: Callable[[], int],
                   keep: int = 16) -> Callable[..., Any]:
    """``metrics`` (prometheus-client's WSGI app) answered once per read of a ``GaugeCache``: its
    whole response is kept for each (read, Accept, Accept-Encoding, query) a scraper sends, and
    every later scrape of the same read gets those bytes. Rendering 20,000 samples takes about a
    second of CPU; a scrape now costs what sending the bytes does. Only the newest read's
    responses are kept (at most ``keep``: a query string picks families, so scrapers could ask
    for many)."""
    lock = threading.Lock()
    memo: dict[tuple[Any, ...], tuple[str, list[tuple[str, str]], bytes]] = {}

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        gen = generation()
        key = (gen, environ.get("HTTP_ACCEPT", ""), environ.get("HTTP_ACCEPT_ENCODING", ""),
               environ.get("QUERY_STRING", ""))
        with lock:   # scrapes of one read wait for its first rendering instead of repeating it
            hit = memo.get(key)
            if hit is None:
                got: list[tuple[str, list[tuple[str, str]]]] = []
                body = b"".join(metrics(environ, lambda status, headers, *_: got.append((status, headers))))
                hit = (got[0][0], list(got[0][1]), body)
                if len(memo) >= keep or any(k[0] != gen for k in memo):
                    memo.clear()
                memo[key] = hit
        start_response(hit[0], list(hit[1]))
        return [hit[2]]

    return app


def _server_classes(idle_timeout: float, deadline: float, max_clients: int,
                    on_error: Callable[[str], None]) -> tuple[type, type]:
    import socket
    import socketserver
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

    class Handler(WSGIRequestHandler):
        timeout = idle_timeout   # every read and write of the connection (StreamRequestHandler)

        def handle(self) -> None:
            # a deadline on the whole connection: a client that sends a header byte every few
            # seconds never trips the idle timeout, and would hold its thread and slot forever
            timer = threading.Timer(deadline, self._expire)
            timer.daemon = True
            timer.start()
            try:
                super().handle()
            finally:
                timer.cancel()

        def _expire(self) -> None:
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass   # a line per scrape is noise; failed scrapes say so themselves

    class Server(socketserver.ThreadingMixIn, WSGIServer):
        daemon_threads = True   # a stuck client never keeps the process from exiting
        request_queue_size = 128   # many scrapers at once wait to be accepted, not refused

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.slots = threading.BoundedSemaphore(max_clients)
            super().__init__(*args, **kwargs)

        def process_request(self, request: Any, client_address: Any) -> None:
            self.slots.acquire()   # the others wait in the listen queue, not in threads of their own
            try:
                super().process_request(request, client_address)
            except BaseException:
                self.slots.release()
                raise

        def process_request_thread(self, request: Any, client_address: Any) -> None:
            try:
                super().process_request_thread(request, client_address)
            finally:
                self.slots.release()

        def handle_error(self, request: Any, client_address: Any) -> None:
            exc = sys.exc_info()[1]
            if isinstance(exc, OSError):   # a client gone, timed out or cut off: its own business
                return
            on_error(f"request from {client_address[0]} failed: {type(exc).__name__}: {exc}")

    return Server, Handler


def serve(source: Callable[[], list[Gauge]] | GaugeCache, port: int, addr: str, on_error: Callable[[str], None],
          idle_timeout: float = IDLE_TIMEOUT_S, deadline: float = CONNECTION_DEADLINE_S,
          max_clients: int = MAX_CLIENTS) -> Any:
    """Start the HTTP server (a daemon thread) with only clusterbench's gauges on it: a
    ``GaugeCache``'s, or a ``load`` function's, called at every scrape; returns the server
    (``shutdown()`` and ``server_close()`` stop it)."""
    import socket
    from wsgiref.simple_server import make_server

    client = _client()
    registry = client.CollectorRegistry(auto_describe=False)
    registry.register(source if isinstance(source, GaugeCache) else StoreCollector(source, on_error))
    server_cls, handler_cls = _server_classes(idle_timeout, deadline, max_clients, on_error)
    try:
        # the family of the address (an IPv6 one needs AF_INET6)
        family, _, _, _, sockaddr = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM,
                                                       flags=socket.AI_PASSIVE)[0]
        server_cls.address_family = family
        metrics = client.make_wsgi_app(registry)
        if isinstance(source, GaugeCache):
            metrics = _rendered_once(metrics, lambda: source.generation)
        server = make_server(sockaddr[0], port, _app(metrics), server_cls, handler_cls)
    except OSError as e:
        raise UsageError(f"cannot listen on {addr}:{port}: {e.strerror or e}") from None
    except UnicodeError as e:   # the resolver encodes a host name as IDNA: a label past 63 characters
        raise UsageError(f"cannot listen on {addr}:{port}: not a host name or address ({e})") from None
    threading.Thread(target=server.serve_forever, name="serve-metrics", daemon=True).start()
    return server


def serve_until_stopped(source: Callable[[], list[Gauge]] | GaugeCache, port: int, addr: str,
                        on_error: Callable[[str], None], on_listening: Callable[[], None] = lambda: None) -> int:
    """``serve`` until SIGINT or SIGTERM, whose number it returns once the port is given back
    (a scrape under way is cut off: its threads are daemons); ``on_listening``: called once the
    server listens and the signals are caught."""
    import signal

    stop = threading.Event()
    got: list[int] = []

    def stopping(signum: int, _frame: object) -> None:
        got.append(signum)
        stop.set()

    server = serve(source, port, addr, on_error)
    if isinstance(source, GaugeCache):
        source.start()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stopping)
    on_listening()
    while not stop.wait(1.0):
        pass
    server.shutdown()
    server.server_close()
    if isinstance(source, GaugeCache):
        source._stop.set()   # a read under way is left to end with the process (a daemon thread)
    return got[0]
