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
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

# Status of a run as a whole.
COMPLETE = "complete"
INCOMPLETE = "incomplete"
FAILED = "failed"
RUN_STATUSES = (COMPLETE, INCOMPLETE, FAILED)

Params = dict[str, Any]


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
    ranks: int = 0
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
