"""``--json``: the one envelope every command prints (docs/json.md; schema in
``data/schema/lines.schema.json``).

Every line is one JSON object whose first field is ``"kind"``; this module builds each kind and
``emit`` is the one way a command prints one. The kinds:

- ``measurement``: one measurement, ``{"kind": "measurement", "run": 12, "benchmark": ...,
  "metric": ..., "value": ..., "unit": ..., "params": {...}}`` (the contract of records.py);
- ``run``: after a run's measurements, the whole run record (``Run.to_dict()``), so the lines
  alone carry everything ``clusterbench import -`` needs to store the run again elsewhere (a
  pod's log, a pdsh session); listings add what the run measured;
- ``efficiency``, ``percent_of_peak``: what is judged from a run against a link speed or a
  datasheet peak;
- ``criterion`` (validate, qualify), ``comparison`` (compare), ``check`` (preflight), ``host``
  (sweep), ``inventory`` and ``difference`` (env), ``note`` (a remark the table would print as
  ``# note``), ``warning`` (a doubt about a run's figures that a table prints as ``# warning``), ``trend_point``, ``regression`` and ``improvement`` (trend), ``drain`` (a node taken
  out of or back into service by ``--on-fail``), ``step`` (a qualify step), ``prediction``,
  ``predicted_collective`` and ``prediction_check`` (predict: built in ``report/predict_text.py``),
  and ``summary``: the last line of a command that judges or moves things, with its counts and
  exit code.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from clusterbench.records import WARNINGS, Event, Measurement, Run

if TYPE_CHECKING:   # the judging a run's lines carry is imported by run_objects, when one is printed
    from clusterbench.judge.compare import Comparison
    from clusterbench.judge.efficiency import DevicePercent
    from clusterbench.judge.theory import Efficiency
    from clusterbench.judge.validate import Outcome

MEASUREMENT = "measurement"
RUN = "run"
EFFICIENCY = "efficiency"
PERCENT_OF_PEAK = "percent_of_peak"
CRITERION = "criterion"
COMPARISON = "comparison"
CHECK = "check"
HOST = "host"
INVENTORY = "inventory"
DIFFERENCE = "difference"
NOTE = "note"
WARNING = "warning"
TREND_POINT = "trend_point"
REGRESSION = "regression"
IMPROVEMENT = "improvement"
DRAIN = "drain"
STEP = "step"
SUMMARY = "summary"
PREDICTION = "prediction"
PREDICTED_COLLECTIVE = "predicted_collective"
PREDICTION_CHECK = "prediction_check"
KINDS = (MEASUREMENT, RUN, EFFICIENCY, PERCENT_OF_PEAK, CRITERION, COMPARISON, CHECK, HOST,
         INVENTORY, DIFFERENCE, NOTE, WARNING, TREND_POINT, REGRESSION, IMPROVEMENT, DRAIN, STEP, SUMMARY,
         PREDICTION, PREDICTED_COLLECTIVE, PREDICTION_CHECK)

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "data" / "schema" / "lines.schema.json"


def line(kind: str, **fields: Any) -> dict[str, Any]:
    """A line of ``kind``: ``kind`` first, so a reader (and the importer's signature) sees it first."""
    if kind not in KINDS:
        raise ValueError(f"unknown line kind {kind!r}")
    return {"kind": kind, **fields}


def dumps(obj: dict[str, Any]) -> str:
    """One line of strict JSON (RFC 8259): a value that is not a finite number (an infinite
    bandwidth from a zero time) becomes null instead of JSON's invalid ``Infinity``."""
    try:
        return json.dumps(obj, default=str, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(obj), default=str, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def emit(obj: dict[str, Any], out: IO[str] | None = None) -> None:
    """Print one line: the only way commands write ``--json`` output."""
    (out or sys.stdout).write(dumps(obj) + "\n")


def emit_all(objs: Iterable[dict[str, Any]], out: IO[str] | None = None) -> None:
    stream = out or sys.stdout
    for obj in objs:
        emit(obj, stream)
    stream.flush()


# -- the kinds --------------------------------------------------------------------------------

def measurement_line(m: Measurement, run_id: int | None) -> dict[str, Any]:
    return line(MEASUREMENT, **m.to_dict(run_id))


def run_line(run: Run, **extra: Any) -> dict[str, Any]:
    """The run record; ``extra``: ``measurements`` (count), ``benchmarks`` and ``tool`` (what it
    measured, in listings), ``file`` and ``stored`` (imports)."""
    return line(RUN, **run.to_dict(), **extra)


def efficiency_line(e: Efficiency, run_id: int | None, link: str) -> dict[str, Any]:
    return line(EFFICIENCY, run=run_id, benchmark=e.benchmark, bytes=e.bytes, placement=e.placement,
                nodes=e.nodes, link=link, algbw=e.measured_algbw, optimal_algbw=e.optimal_algbw,
                efficiency=e.ratio)


def percent_of_peak_line(what: str, d: DevicePercent) -> dict[str, Any]:
    return line(PERCENT_OF_PEAK, what=what, benchmark=d.benchmark, metric=d.metric,
                params=dict(d.params), device_name=d.device_name, value=d.value, unit=d.unit,
                peak=d.peak, percent=d.percent)


def criterion_line(o: Outcome, profile: str) -> dict[str, Any]:
    return line(CRITERION, profile=profile, **o.to_dict())


def comparison_line(c: Comparison, a: str, b: str) -> dict[str, Any]:
    return line(COMPARISON, a=a, b=b, **c.to_dict())


def check_line(result: dict[str, Any], host: str) -> dict[str, Any]:
    """A preflight check (``CheckResult.to_dict()``) on ``host``."""
    return line(CHECK, host=host, **result)


def host_line(host: str, status: str, **fields: Any) -> dict[str, Any]:
    return line(HOST, host=host, status=status, **fields)


def inventory_line(inventory: dict[str, Any], run_id: int | None) -> dict[str, Any]:
    """A host's inventory (``envinfo.inventory``), from this host now (run null) or a stored run."""
    return line(INVENTORY, run=run_id, **{k: v for k, v in inventory.items() if k not in ("kind", "run")})


def difference_line(d: dict[str, Any], left: str, right: str) -> dict[str, Any]:
    """One environment difference (``envinfo.diff.Difference.to_dict()``) between two sides."""
    return line(DIFFERENCE, left=left, right=right, **d)


def note_line(text: str, run_id: int | None = None) -> dict[str, Any]:
    return line(NOTE, run=run_id, text=text)


def warning_line(text: str, run_id: int | None = None) -> dict[str, Any]:
    return line(WARNING, run=run_id, text=text)


def summary_line(command: str, **fields: Any) -> dict[str, Any]:
    return line(SUMMARY, command=command, **fields)


# -- a run's lines ----------------------------------------------------------------------------

def run_objects(run: Run, measurements: Iterable[Measurement], /, **extra: Any) -> Iterator[dict[str, Any]]:
    """The lines of one run: its measurements, the run record (with ``extra`` fields, see
    ``run_line``), its warnings (``warning``: an import's doubts, then noise warnings), then
    what is judged from them at once (efficiency against the run's ``link_speed`` tag)."""
    from clusterbench.judge import noise
    from clusterbench.judge.efficiency import best_per_placement, run_link_efficiency

    measurements = list(measurements)
    for m in measurements:
        yield measurement_line(m, run.id)
    yield run_line(run, **extra)
    # what a table prints as "# warning:", for scripts too
    for text in run.meta.get(WARNINGS) or []:
        yield warning_line(str(text), run.id)
    for w in noise.stored(run):
        yield warning_line(w.text, run.id)
    link = run.tags.get("link_speed", "")
    for e in best_per_placement(run_link_efficiency(run, measurements, None)):
        yield efficiency_line(e, run.id, link)


def run_lines(run: Run, measurements: Iterable[Measurement], /, **extra: Any) -> Iterator[str]:
    """``run_objects`` as text lines."""
    for obj in run_objects(run, measurements, **extra):
        yield dumps(obj)


class JsonPrinter:
    """Prints every measurement once the run is stored, so each line carries the run id, and then
    the run record."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out

    def on_event(self, event: Event) -> None:
        pass  # lines are written at the end, when the run id is known

    def finish(self, run: Run, measurements: list[Measurement]) -> None:
        emit_all(run_objects(run, measurements), self.out)
