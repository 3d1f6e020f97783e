"""Long work made visible: a transient status line on stderr (rich), only when stderr is a
terminal and ``--quiet`` is not given: the row a run has reached, and a benchmark's plan as
``k/N`` steps with an ETA. Piped or redirected output never sees it, so what a script reads is
the same with or without a terminal; the one exception is a single line on stderr, piped or not
(not with ``--quiet``), for a plan estimated early on to take more than a minute.

The display starts on the first update, not before: under a launcher only rank 0 receives the
run's events, so the other ranks never draw anything. While it is shown, lines written to
stdout (when stdout is the same terminal) and to stderr go through rich and print above it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from clusterbench.families import family_of
from clusterbench.records import Event, Measurement, Planned, Rows, Run
from clusterbench.units import format_size


def wanted(quiet: bool) -> bool:
    """Whether to show progress: stderr is a terminal and the user did not ask for quiet."""
    try:
        return not quiet and sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stderr
        return False


class Progress:
    """One task with a description, optionally a bar with k/N and an ETA (``total``)."""

    def __init__(self, enabled: bool, description: str = "", total: int | None = None) -> None:
        self.enabled = enabled
        self._description = description
        self._total = total
        self._progress: Any = None
        self._task: Any = None

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
        if self._total is not None:
            columns += [BarColumn(), MofNCompleteColumn(), TextColumn("ETA"), TimeRemainingColumn()]
        # a benchmark's plan: "40/100 iterations, ETA 0:00:12" (updated from its Planned events)
        columns += [TextColumn("{task.fields[detail]}"), TimeElapsedColumn()]
        self._progress = RichProgress(*columns, console=Console(stderr=True), transient=True,
                                      redirect_stdout=sys.stdout.isatty(), redirect_stderr=True)
        self._progress.start()
        self._task = self._progress.add_task(self._description, total=self._total, detail="")

    def update(self, description: str | None = None, advance: int = 0, detail: str | None = None) -> None:
        if not self.enabled:
            return
        if self._progress is None:
            self._description = description if description is not None else self._description
            self._start()
        kw: dict[str, Any] = {"advance": advance}
        if description is not None:
            kw["description"] = description
        if detail is not None:
            kw["detail"] = detail
        self._progress.update(self._task, **kw)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _size_param(m: Measurement) -> str:
    """The param a family's figure plots against (``bytes``, ``array_size``), or ''."""
    family = family_of(m.benchmark)
    x = family.figure.x if family and family.figure else ""
    return x if x and x in m.params else ""


def row_text(m: Measurement) -> str:
    """What a finished row says in the status line: its benchmark, dtype and size, e.g.
    ``all_reduce float: 1M bytes``, ``stream double: array_size 4194304``."""
    text = " ".join([m.benchmark, *([str(m.params["dtype"])] if "dtype" in m.params else [])])
    x = _size_param(m)
    if x:
        value = m.params[x]
        text += f": {format_size(value)} {x}" if x == "bytes" and isinstance(value, int) else f": {x} {value}"
    return text


# A run estimated to take longer than this says so, once, on stderr (piped or not).
SAY_PLAN_AFTER_S = 60.0
# An estimate is taken from the first steps only: one that crosses the minute near the end of a
# run would tell nothing in time.
_EARLY = 0.25


def eta_seconds(elapsed: float, work_done: float, work_total: float) -> float | None:
    """Seconds left at the rate of the work done so far; None before any work is done."""
    if work_done <= 0 or elapsed <= 0 or work_total <= 0:
        return None
    return elapsed * max(0.0, work_total - work_done) / work_done


def duration_text(seconds: float) -> str:
    """``45 s``, ``1.5 min``, ``3 min``, ``2.1 h``: how long, as a person says it."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    if minutes < 10:
        return f"{minutes:.1f} min".replace(".0 min", " min")
    return f"{minutes:.0f} min" if minutes < 90 else f"{minutes / 60:.1f} h"


class _PlanClock:
    """One plan as the command sees it: when it started, when its first step was done and how
    much work that was (the first step pays for warming up: page faults, a library's first call,
    threads starting, and an estimate from it alone said 6.6 min of a stream that took 1.2), and
    whether its length was said."""

    def __init__(self, now: float) -> None:
        self.start = now
        self.first: tuple[float, float] | None = None   # (when, work done) at the first step
        self.said = False

    def eta(self, now: float, p: Planned) -> float | None:
        """Seconds left at the rate of the steps after the first; None until there are some."""
        if self.first is None:
            if p.done >= 1:
                self.first = (now, p.work_done)
            return None
        since, work = self.first
        return eta_seconds(now - since, p.work_done - work, p.work_total - work)


class RowProgress:
    """A printer that shows the row a sweep has reached, driven by the rows rank 0 sends (the
    events the parent receives), and hands every event on to the real printer. A benchmark's
    plan (``Planned`` events) shows as ``k/N`` and an ETA; ``say`` (stderr, whether or not it is
    a terminal; None with --quiet) gets one line for a plan estimated to take over a minute."""

    def __init__(self, printer: Any, progress: Progress, prefix: str = "",
                 say: Callable[[str], None] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.printer = printer
        self.progress = progress
        self.prefix = prefix  # e.g. "run 2 of 10: " with --repeat
        self.rows = 0
        self.say = say
        self.clock = clock
        self._plans: dict[tuple[str, str, int], _PlanClock] = {}
        self._described = ""   # the benchmark the line names

    def _planned(self, p: Planned) -> None:
        now = self.clock()
        key = (p.benchmark, p.what, p.total)
        plan = self._plans.get(key)
        if plan is None or p.done == 0:   # a plan starts (again: a step of the suite, a repeat)
            plan = self._plans[key] = _PlanClock(now)
        eta = plan.eta(now, p)
        shown = f"ETA {duration_text(eta)}" if eta is not None and p.done < p.total else ""
        # the benchmark's name where the line does not already say which row of it was reached
        named = None if p.benchmark == self._described else f"{self.prefix}{p.benchmark}"
        self._described = p.benchmark
        self.progress.update(named, detail=f"{p.done}/{p.total} {p.what}" + (f", {shown}" if shown else ""))
        early = p.done <= 2 or p.work_done <= _EARLY * p.work_total
        if self.say is not None and eta is not None and not plan.said and early and p.done < p.total:
            total = now - plan.start + eta
            if total > SAY_PLAN_AFTER_S:
                plan.said = True
                self.say(f"clusterbench: {p.benchmark}: {p.total} {p.what}, about {duration_text(total)} "
                         f"in all (estimated from the first {p.done})")

    def on_event(self, event: Event) -> None:
        self.printer.on_event(event)
        if isinstance(event, Planned):
            self._planned(event)
        if isinstance(event, Rows) and event.measurements:
            self.rows += 1
            # the size a sweep has reached; per-run summary rows (no size) change nothing
            sized = [m for m in event.measurements if _size_param(m)]
            if sized:
                n = self.rows
                self._described = sized[-1].benchmark
                self.progress.update(f"{self.prefix}{row_text(sized[-1])} done ({n} row{'s' * (n != 1)})")

    def finish(self, run: Run, measurements: list[Measurement]) -> None:
        self.progress.close()  # the tables' last lines print without a status line under them
        self.printer.finish(run, measurements)

