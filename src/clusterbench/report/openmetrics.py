"""Stored results as Prometheus gauges: the text exposition format for node_exporter's textfile
collector (``clusterbench export openmetrics``) and the same gauges on ``/metrics``
(``clusterbench serve-metrics``, with the ``prometheus-client`` library).

What is exported is the *latest* state: among the selected runs, the newest value of every row
on every host (a run from last night replaces the one from the night before; rows it did not
measure keep their last value). Gauges:

- ``clusterbench_<family>_<metric>_<unit>``: each family's headline metric (busbw, stream and
  transfer bandwidth, GEMM throughput, ...) in base units (bytes per second, FLOP per second,
  seconds), labelled with ``benchmark``, ``host``, ``device`` and the row's params (``bytes``,
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

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from clusterbench.errors import UsageError
from clusterbench.families import FAMILIES, IDENTITY_PARAMS, Family, family_of
from clusterbench.judge.history import run_time, select_history
from clusterbench.judge.profiles import Profile
from clusterbench.judge.select import Row
from clusterbench.judge.validate import ERROR, FAIL, PASS, evaluate
from clusterbench.records import Measurement, Run

PREFIX = "clusterbench"
TIMESTAMP = f"{PREFIX}_last_run_timestamp_seconds"
CRITERION = f"{PREFIX}_criterion_passed"
PREFLIGHT = f"{PREFIX}_preflight_check_ok"
EXPORT_OK = f"{PREFIX}_export_success"
# Measurement unit -> (Prometheus base-unit suffix, factor to it).
BASE_UNITS: dict[str, tuple[str, float]] = {
    "GB/s": ("bytes_per_second", 1e9),
    "TFLOP/s": ("flop_per_second", 1e12),
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
# restate another label (count follows bytes).
_NOT_LABELS = IDENTITY_PARAMS | {"count"}


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
        if f.headline is not None and f.headline.unit in BASE_UNITS:
            out[metric_name(f, f.headline.name, f.headline.unit)[0]] = f.name
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


def host_of(run: Run, m: Measurement | None = None) -> str:
    """Which node a value belongs to: its ``host`` param, the run's ``node`` tag, its only host,
    else the run's hosts joined (a multi-node result belongs to all of them)."""
    if m is not None and m.params.get("host") is not None:
        return str(m.params["host"])
    if run.tags.get("node"):
        return run.tags["node"]
    return ",".join(run.hosts) or "unknown"


def label_name(param: str) -> str:
    """A param as a Prometheus label name: snake_case (transA -> trans_a), [a-z0-9_] only, never
    empty and never starting with ``__`` (reserved: ``__name__`` would rename the series)."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", param).lower()
    snake = _LABEL.sub("_", snake)
    if snake.startswith("__"):
        snake = "_" + snake.lstrip("_")
    return snake if snake and not snake[:1].isdigit() else "_" + snake


def _label_value(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def latest_rows(runs: Iterable[tuple[Run, list[Measurement]]]) -> list[Row]:
    """The newest value of every (benchmark, metric, params, host) among ``runs``, which come
    oldest first; each row keeps its run."""
    latest: dict[tuple, Row] = {}
    for run, ms in runs:
        for m in ms:
            key = (m.benchmark, m.metric, host_of(run, m), tuple(sorted((k, str(v)) for k, v in m.params.items())))
            latest[key] = Row(run, m)
    return list(latest.values())


def _headline_gauges(rows: Sequence[Row], gauges: dict[str, Gauge]) -> None:
    for r in rows:
        m = r.m
        family = family_of(m.benchmark)
        if family is None or family.headline is None or m.metric != family.headline.name:
            continue
        try:
            name, factor = metric_name(family, m.metric, m.unit)
        except ValueError:
            continue  # a unit Prometheus has no base unit for here: not exported
        g = gauges.setdefault(name, Gauge(name, f"{family.title}: {m.metric} ({m.unit} in the record), "
                                                f"latest run per host and row"))
        labels = {"benchmark": m.benchmark, "host": host_of(r.run, m),
                  "device": _label_value(m.params.get("device", ""))}
        # sorted, so two params that read as one label name ("a-b", "a.b") get the same names on
        # every row; one that would overwrite benchmark/host/device or an earlier one is prefixed
        for k, v in sorted(m.params.items()):
            if k not in _NOT_LABELS:
                name = label_name(k)
                while name in labels:
                    name = "param_" + name
                labels[name] = _label_value(v)
        g.add(labels, in_base_unit(m.value, factor))


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
            g.add({"benchmark": run.benchmark, "host": host_of(run)}, t.timestamp())


def _criteria(rows: Sequence[Row], profile: Profile, gauges: dict[str, Gauge]) -> None:
    g = gauges.setdefault(CRITERION, Gauge(CRITERION, "Validation criterion on the host's latest results: "
                                                      "1 pass, 0 fail or error",
                                           ("profile", "criterion", "benchmark", "metric", "host")))
    by_host: dict[str, list[Row]] = {}
    for r in rows:
        by_host.setdefault(host_of(r.run, r.m), []).append(r)
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
        host = str(pre.get("host") or host_of(run))
        for check in pre.get("checks") or []:
            if isinstance(check, dict) and check.get("status") in ("ok", "warning", "fail"):
                g.add({"check": str(check.get("check")), "host": host},
                      0.0 if check["status"] == "fail" else 1.0)


def from_store(db: str | None, selectors: Sequence[str], since: datetime | None,
               profile: Profile | None) -> list[Gauge]:
    """The gauges of the selected runs (none: every run), read from the database now."""
    from clusterbench.store import Store

    with Store.open_to_read(db) as store:
        runs = select_history(store, selectors, since)
        loaded = [(r, store.measurements(r.id)) for r in runs]
    return collect(loaded, profile)


def collect(runs: Sequence[tuple[Run, list[Measurement]]], profile: Profile | None = None) -> list[Gauge]:
    """Gauges from runs in time order (oldest first)."""
    gauges: dict[str, Gauge] = {}
    rows = latest_rows(runs)
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
    """Prometheus text format 0.0.4, as node_exporter's textfile collector reads it."""
    out = []
    for g in sorted(gauges, key=lambda g: g.name):
        out.append(f"# HELP {g.name} {_escape_help(g.help)}")
        out.append(f"# TYPE {g.name} gauge")
        for values, v in sorted(g.samples.items()):
            labels = ",".join(f'{k}="{_escape_label(x)}"' for k, x in zip(g.labels, values) if x != "")
            out.append(f"{g.name}{{{labels}}} {_number(v)}" if labels else f"{g.name} {_number(v)}")
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


def serve(load: Callable[[], list[Gauge]], port: int, addr: str,
          on_error: Callable[[str], None]) -> Any:
    """Start the HTTP server (a daemon thread) with only clusterbench's gauges on it."""
    client = _client()
    registry = client.CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(load, on_error))
    try:
        return client.start_http_server(port, addr=addr, registry=registry)
    except OSError as e:
        raise UsageError(f"cannot listen on {addr}:{port}: {e.strerror or e}") from None
    except UnicodeError as e:   # the resolver encodes a host name as IDNA: a label past 63 characters
        raise UsageError(f"cannot listen on {addr}:{port}: not a host name or address ({e})") from None
