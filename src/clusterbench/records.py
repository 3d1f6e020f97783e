"""The measurement contract: the structured records every benchmark, parser and report shares.

A measurement is one number with its unit and the parameters that say what was measured.
Parameters are fields (``{"op": "all_reduce", "bytes": 1048576}``), never encoded in a name.
Its JSON form, one object per line, is the public contract::

    {"run": 12, "benchmark": "all_reduce", "metric": "busbw", "value": 41.2, "unit": "GB/s",
     "params": {"bytes": 1048576, "dtype": "float", "placement": "out", ...}}

Canonical units: GB/s (1e9 bytes per second), us, TFLOP/s.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

# Status of a run as a whole.
COMPLETE = "complete"
INCOMPLETE = "incomplete"
FAILED = "failed"
INTERRUPTED = "interrupted"   # stopped by a signal (SIGTERM, a second Ctrl-C): the rows measured before it
RUN_STATUSES = (COMPLETE, INCOMPLETE, FAILED, INTERRUPTED)
# Run meta key: a list of doubts about a run's figures that do not make them wrong to keep (an
# import's checks: rows missing, an implausible rate); results show and validate print them.
WARNINGS = "warnings"   # doubts about an import's figures (strings): ingest.common.add_warning
NOISE = "noise"         # noise inside a run (dicts): judge.noise

Params = dict[str, Any]


_last_second: tuple[int, str] = (-1, "")


def utc_now() -> str:
    """Now, to the millisecond (the date and time formatted once per second: an import makes a
    run record for each of thousands of runs in a second)."""
    global _last_second
    seconds, ms = divmod(time.time_ns() // 1_000_000, 1000)
    if seconds != _last_second[0]:
        at = datetime.fromtimestamp(seconds, timezone.utc)
        _last_second = (seconds, at.isoformat(timespec="seconds").replace("+00:00", ""))
    return f"{_last_second[1]}.{ms:03d}Z"


@dataclass(frozen=True)
class Measurement:
    benchmark: str
    metric: str
    value: float
    unit: str
    params: Params = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.value, (int, float)) or isinstance(self.value, bool):
            raise TypeError(f"measurement value must be a number, got {self.value!r}")
        if math.isnan(self.value):
            raise ValueError(f"{self.benchmark}/{self.metric}: NaN is not a measurement")

    def to_dict(self, run: int | None = None) -> dict[str, Any]:
        return {
            "run": run,
            "benchmark": self.benchmark,
            "metric": self.metric,
            "value": self.value,
            "unit": self.unit,
            "params": dict(self.params),
        }

    def to_json(self, run: int | None = None) -> str:
        return json.dumps(self.to_dict(run), sort_keys=False, default=str)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Measurement:
        return cls(d["benchmark"], d["metric"], float(d["value"]), d["unit"], dict(d.get("params") or {}))

    def param(self, key: str, default: Any = None) -> Any:
        return self.params.get(key, default)


_new = object.__new__
_set = object.__setattr__


def stored_measurement(benchmark: str, metric: str, value: float, unit: str, params: Params) -> Measurement:
    """A Measurement of a record read back from the store, whose fields were checked when it
    was stored: made without ``__init__``, its call and its checks (a report of a
    fleet's night makes 400,000), its value still refused where it is NaN."""
    if value != value:
        raise ValueError(f"{benchmark}/{metric}: NaN is not a measurement")
    m = _new(Measurement)
    # field by field, in __init__'s order: the instance keeps the class's shared key table
    _set(m, "benchmark", benchmark)
    _set(m, "metric", metric)
    _set(m, "value", value)
    _set(m, "unit", unit)
    _set(m, "params", params)
    return m


@dataclass
class Run:
    """A run: one invocation of a benchmark (or one imported log) with its context."""

    benchmark: str
    command: list[str] = field(default_factory=list)
    source: str = ""
    started_at: str = field(default_factory=utc_now)
    ended_at: str | None = None
    status: str = COMPLETE
    hosts: list[str] = field(default_factory=list)
    ranks: int | None = 0   # None: an imported log that does not prove its rank count
    devices: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "benchmark": self.benchmark,
            "source": self.source,
            "command": list(self.command),
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "status": self.status,
            "hosts": list(self.hosts),
            "ranks": self.ranks,
            "devices": list(self.devices),
            "versions": dict(self.versions),
            "env": dict(self.env),
            "tags": dict(self.tags),
            "errors": list(self.errors),
            "meta": dict(self.meta),
        }


@dataclass(frozen=True)
class TelemetrySample:
    """One reading of a host or device counter during a run (GPU power, temperature, CPU load)."""

    t: float
    metric: str
    value: float
    unit: str = ""
    host: str = ""
    device: str = ""


# -- rank events ------------------------------------------------------------------------------
# What a benchmark reports while it runs, through its RankContext (``record``, ``note``, ``fail``,
# ``meta``, ``telemetry``); the driver adds the ``Header``. Only rank 0's events are kept. Every
# consumer (the run builder, the table and JSON printers) handles each type.

@dataclass(frozen=True)
class Header:
    """Who runs: sent by the driver once every rank has joined, before the benchmark starts."""

    ranks: int
    hosts: list[str]            # host of each rank, in rank order
    devices: list[str]          # device name of each rank
    device_type: str            # cuda | cpu
    backend: str                # nccl | gloo
    launcher: str               # local | torchrun | slurm | mpi
    versions: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Rows:
    """Finished measurements, sent as soon as each row is done so a crash keeps them."""

    measurements: tuple[Measurement, ...]


@dataclass(frozen=True)
class Note:
    """A line for the reader: a skipped row and why, a caveat about the numbers. ``benchmark``
    is the table it belongs to (printed inside it, after its header); None: not known."""

    text: str
    benchmark: str | None = None

    def to_stored(self) -> dict[str, Any]:
        """Its form in ``Run.meta["notes"]``."""
        return {"text": self.text, "benchmark": self.benchmark}

    @classmethod
    def from_stored(cls, value: Any) -> Note:
        """A stored note: a dict, or a plain string (runs stored before notes had a benchmark)."""
        if isinstance(value, dict):
            return cls(str(value.get("text", "")), value.get("benchmark"))
        return cls(str(value))


@dataclass(frozen=True)
class Failure:
    """The run measured something wrong (a failed correctness check): it ends ``failed``."""

    reason: str


@dataclass(frozen=True)
class Meta:
    """Run metadata (table headers, inventories, device names), merged into ``Run.meta``."""

    data: dict[str, Any]


@dataclass(frozen=True)
class Telemetry:
    """Every host's samples, gathered to rank 0 at the end of the benchmark."""

    samples: tuple[TelemetrySample, ...]


@dataclass(frozen=True)
class Planned:
    """How far a benchmark is through the work it planned (``ranks/plan.py``): ``done`` of
    ``total`` steps, ``what`` names them (``iterations``), and ``work_done`` of ``work_total`` in
    a unit the steps' time is proportional to (bytes moved, FLOPs): the command's ETA. Shown
    while the run goes, never stored."""

    benchmark: str
    done: int
    total: int
    what: str
    work_done: float
    work_total: float


Event = Header | Rows | Note | Failure | Meta | Telemetry | Planned
