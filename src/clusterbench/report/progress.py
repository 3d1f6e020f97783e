"""Long work made visible: a transient status line on stderr (rich), only when stderr is a
terminal and ``--quiet`` is not given. Piped or redirected output never sees it, so what a
script reads is the same with or without a terminal.

The display starts on the first update, not before: under a launcher only rank 0 receives the
run's events, so the other ranks never draw anything. While it is shown, lines written to
stdout (when stdout is the same terminal) and to stderr go through rich and print above it.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from clusterbench.families import family_of
from clusterbench.records import Event, Measurement, Rows, Run
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
        columns.append(TimeElapsedColumn())
        self._progress = RichProgress(*columns, console=Console(stderr=True), transient=True,
                                      redirect_stdout=sys.stdout.isatty(), redirect_stderr=True)
        self._progress.start()
        self._task = self._progress.add_task(self._description, total=self._total)

    def update(self, description: str | None = None, advance: int = 0) -> None:
        if not self.enabled:
            return
        if self._progress is None:
            self._description = description if description is not None else self._description
            self._start()
        kw: dict[str, Any] = {"advance": advance}
        if description is not None:
            kw["description"] = description
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


class RowProgress:
    """A printer that shows the row a sweep has reached, driven by the rows rank 0 sends (the
    events the parent receives), and hands every event on to the real printer."""

    def __init__(self, printer: Any, progress: Progress, prefix: str = "") -> None:
        self.printer = printer
        self.progress = progress
        self.prefix = prefix  # e.g. "run 2 of 10: " with --repeat
        self.rows = 0

    def on_event(self, event: Event) -> None:
        self.printer.on_event(event)
        if isinstance(event, Rows) and event.measurements:
            self.rows += 1
            # the size a sweep has reached; per-run summary rows (no size) change nothing
            sized = [m for m in event.measurements if _size_param(m)]
            if sized:
                n = self.rows
                self.progress.update(f"{self.prefix}{row_text(sized[-1])} done ({n} row{'s' * (n != 1)})")

    def finish(self, run: Run, measurements: list[Measurement]) -> None:
        self.progress.close()  # the tables' last lines print without a status line under them
        self.printer.finish(run, measurements)

