"""``--json``: JSON lines, the public contract (see clusterbench.records and docs/architecture.md).

Every line is one JSON object with a ``"kind"``:

- ``"measurement"``: one measurement, ``{"kind": "measurement", "run": 12, "benchmark": ...,
  "metric": ..., "value": ..., "unit": ..., "params": {...}}``;
- ``"run"``: after a run's measurements, the whole run record (``Run.to_dict()``), so the lines
  alone carry everything ``clusterbench import -`` needs to store the run again elsewhere
  (a pod's log, a pdsh session).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any

from clusterbench.judge.efficiency import best_per_placement, run_link_efficiency
from clusterbench.judge.theory import Efficiency
from clusterbench.records import Event, Measurement, Run

MEASUREMENT = "measurement"
RUN = "run"
EFFICIENCY = "efficiency"


def dump_line(obj: dict[str, Any], out: IO[str] | None = None) -> None:
    (out or sys.stdout).write(json.dumps(obj, default=str) + "\n")


def measurement_line(m: Measurement, run_id: int | None) -> dict[str, Any]:
    return {"kind": MEASUREMENT, **m.to_dict(run_id)}


def run_line(run: Run) -> dict[str, Any]:
    return {"kind": RUN, **run.to_dict()}


def efficiency_line(e: Efficiency, run_id: int | None, link: str) -> dict[str, Any]:
    return {"kind": EFFICIENCY, "run": run_id, "benchmark": e.benchmark, "bytes": e.bytes,
            "placement": e.placement, "nodes": e.nodes, "link": link, "algbw": e.measured_algbw,
            "optimal_algbw": e.optimal_algbw, "efficiency": e.ratio}


def run_lines(run: Run, measurements: Iterable[Measurement]) -> Iterator[str]:
    """The JSON lines of one run: its measurements, the run record, then what is judged from them
    at once (efficiency against the run's ``link_speed`` tag)."""
    measurements = list(measurements)
    for m in measurements:
        yield json.dumps(measurement_line(m, run.id), default=str)
    yield json.dumps(run_line(run), default=str)
    link = run.tags.get("link_speed", "")
    for e in best_per_placement(run_link_efficiency(run, measurements, None)):
        yield json.dumps(efficiency_line(e, run.id, link))


class JsonPrinter:
    """Prints every measurement once the run is stored, so each line carries the run id, and then
    the run record."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out

    def on_event(self, event: Event) -> None:
        pass  # lines are written at the end, when the run id is known

    def finish(self, run: Run, measurements: list[Measurement]) -> None:
        out = self.out or sys.stdout
        for line in run_lines(run, measurements):
            out.write(line + "\n")
        out.flush()
