"""From a job to a stored run: execute on every rank, collect rank 0's events, store, report.

The CLI builds a ``Job`` and a printer and calls ``run_job``; nothing here parses arguments.

What a run has measured is stored whatever happens around it: SIGINT or SIGTERM stop the ranks
and the rows so far are stored as an ``interrupted`` run (a second signal waits for that, see
``ranks/signals.py``); a standard output that is closed or full stops the printing, not the
measuring or the storing. The runner, not the benchmark, decides the status: a run that measured
nothing is never ``complete``.
"""

from __future__ import annotations

import os
import sys
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from clusterbench.output import OUTPUT_FAILED, discard_stdout, stdout_name, why
from clusterbench.printable import printable
from clusterbench.ranks.driver import Job, JobOutcome, execute
from clusterbench.ranks.signals import held, stop_on_signals, stopped_by
from clusterbench.records import (
    COMPLETE,
    FAILED,
    INCOMPLETE,
    INTERRUPTED,
    Event,
    Failure,
    Header,
    Measurement,
    Meta,
    Note,
    Planned,
    Rows,
    Run,
    Telemetry,
    TelemetrySample,
    utc_now,
)
from clusterbench.store import Store, describe


class Printer(Protocol):
    def on_event(self, event: Event) -> None: ...

    def finish(self, run: Run, measurements: list[Measurement]) -> None: ...


class RunBuilder:
    """Accumulates a run from events: header, measurements, notes, failures."""

    def __init__(self, benchmark: str, command: list[str], tags: dict[str, str] | None = None,
                 source: str = "") -> None:
        from clusterbench import __version__

        self.run = Run(benchmark=benchmark, command=list(command), tags=dict(tags or {}),
                       source=source or f"clusterbench {__version__}")
        self.measurements: list[Measurement] = []
        self.telemetry: list[TelemetrySample] = []
        self.failures: list[str] = []
        self._lock = threading.Lock()

    def on_event(self, event: Event) -> None:
        with self._lock:
            match event:
                case Header():
                    self.run.ranks = event.ranks
                    self.run.hosts = list(dict.fromkeys(event.hosts))
                    self.run.devices = list(event.devices)
                    self.run.versions = dict(event.versions)
                    self.run.env = dict(event.env)
                    self.run.meta.update(device_type=event.device_type, backend=event.backend,
                                         launcher=event.launcher, rank_hosts=list(event.hosts))
                case Rows():
                    self.measurements.extend(event.measurements)
                case Note():
                    self.run.meta.setdefault("notes", []).append(event.to_stored())
                case Failure():
                    self.failures.append(event.reason)
                case Telemetry():
                    self.telemetry.extend(event.samples)
                case Planned():
                    pass   # how far the run is: for the terminal, not the stored run
                case Meta():
                    self.run.meta.update(event.data)
                case _:
                    raise TypeError(f"unknown rank event {event!r}")

    def finish(self, outcome: JobOutcome) -> Run:
        with self._lock:
            self.run.ended_at = utc_now()
            self.run.errors = list(outcome.errors) + self.failures
            if outcome.status == INTERRUPTED:  # what it measured before the signal, even nothing
                self.run.status = INTERRUPTED
            elif outcome.status != COMPLETE:
                self.run.status = outcome.status if self.measurements or outcome.status == FAILED \
                    else FAILED
            elif self.failures:
                self.run.status = FAILED
            elif not self.measurements:
                self.run.status = FAILED
                self.run.errors.append("the run ended without a single measurement")
            else:
                self.run.status = COMPLETE
            return self.run


@dataclass
class JobResult:
    run: Run | None                      # None on worker ranks
    measurements: list[Measurement] = field(default_factory=list)
    exit_code: int = 0


def _save(store_path: str | os.PathLike[str] | None, builder: RunBuilder) -> int:
    with Store.open(store_path) as store:
        return store.save_run(builder.run, builder.measurements, builder.telemetry)


class _GuardedPrinter:
    """A printer whose output may fail (``| head -1``, ``> /dev/full``): the first failure ends
    the printing, never the run; ``error`` says what failed."""

    def __init__(self, printer: Printer) -> None:
        self.printer = printer
        self.error: str | None = None
        self.internal = False   # the printer itself failed, not the output: exit 1, not 74

    def _guard(self, show: Callable[[], None]) -> None:
        if self.error is not None:
            return
        try:
            show()
        except OSError as e:
            self.error = f"cannot write to {stdout_name()}: {why(e)}"
            discard_stdout()
        except Exception as e:  # noqa: BLE001 - a row the printer cannot show must not lose the run
            self.error = f"internal error while printing: {type(e).__name__}: {e}"
            self.internal = True

    def on_event(self, event: Event) -> None:
        self._guard(lambda: self.printer.on_event(event))

    def finish(self, run: Run, measurements: list[Measurement]) -> None:
        self._guard(lambda: (self.printer.finish(run, measurements), sys.stdout.flush()))


def run_job(
    job: Job,
    benchmark: str,
    command: list[str],
    printer: Printer,
    db: str | os.PathLike[str] | None = None,
    tags: dict[str, str] | None = None,
    meta: dict[str, Any] | None = None,
    announce: Callable[[str], None] | None = None,
    judge: Callable[[Run, list[Measurement]], None] | None = None,
) -> JobResult:
    """Execute, store and print one run. Only rank 0 stores and prints. ``judge`` sees the
    finished run before it is stored and may add to its meta (the noise warnings). Exit code:
    the outcome's, 128 + the signal when one stopped it, ``OUTPUT_FAILED`` when only the printing
    failed, else 0 for a complete run and 1 for any other."""
    with stop_on_signals():
        return _run_job(job, benchmark, command, printer, db, tags, meta, announce, judge)


def _run_job(job: Job, benchmark: str, command: list[str], printer: Printer,
             db: str | os.PathLike[str] | None, tags: dict[str, str] | None, meta: dict[str, Any] | None,
             announce: Callable[[str], None] | None,
             judge: Callable[[Run, list[Measurement]], None] | None) -> JobResult:
    # Open the store first: a bad --db, or one a newer clusterbench wrote, fails before any rank starts.
    Store.open(db).close()
    builder = RunBuilder(benchmark, command, tags)
    if meta:
        builder.run.meta.update(meta)
    shown = _GuardedPrinter(printer)

    def sink(event: Event) -> None:
        builder.on_event(event)  # first: a row that was printed is a row that will be stored
        shown.on_event(event)

    say = announce or (lambda text: print(text, file=sys.stderr, flush=True))

    def on_abort(message: str, signum: int | None) -> None:
        status = INCOMPLETE if signum is None else INTERRUPTED
        run = builder.finish(JobOutcome("root", status, [message], exit_code=1 if signum is None else 128 + signum))
        _save(db, builder)
        say(f"# run {run.id} ({run.status}) stored in {describe(db)}")

    outcome = execute(job, sink, on_abort)
    if not outcome.is_root:
        if outcome.errors:
            for e in outcome.errors:
                print(f"clusterbench: error: {printable(e)}", file=sys.stderr)
        return JobResult(None, exit_code=outcome.exit_code)
    # From here the run is finished: a signal now waits until it is stored and said.
    with held():
        run = builder.finish(outcome)
        if judge is not None:
            judge(run, builder.measurements)
        _save(db, builder)
        shown.finish(run, builder.measurements)
        for e in run.errors:
            print(f"clusterbench: error: {printable(e)}", file=sys.stderr)
        if shown.error is not None:
            print(f"clusterbench: error: {printable(shown.error)}; the run is stored", file=sys.stderr)
        say(f"# run {run.id} ({run.status}) stored in {describe(db)}")
    code = outcome.exit_code or (0 if run.status == COMPLETE else 1)
    signum = stopped_by()
    if signum is not None and code <= 128:
        code = 128 + signum
    elif shown.error is not None and code == 0:
        code = 1 if shown.internal else OUTPUT_FAILED
    return JobResult(run, builder.measurements, code)


def new_group_id() -> str:
    return uuid.uuid4().hex[:12]
