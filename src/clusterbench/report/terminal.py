"""Terminal tables. Each benchmark family declares its table (``clusterbench.families``); a
benchmark no family owns gets a generic one.

A renderer turns a run's header and measurements into lines, so the same code prints rows live
while a benchmark runs and re-prints a stored run (``clusterbench results show``). A note prints
inside the table of its benchmark, after the header (live: when it arrives, or once its table
starts). Below the tables come the judgements made at read time (efficiency against the run's
link speed). Every line is escaped (``printable``) on its way out: a tag, note, host or device
name holding control characters prints them as escapes, never as terminal commands.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import IO

from clusterbench.families import Renderer, renderer_for, run_header_lines
from clusterbench.judge import noise
from clusterbench.judge.efficiency import efficiency_lines
from clusterbench.printable import printable
from clusterbench.records import (
    WARNINGS,
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
)


def stored_notes(run: Run) -> dict[str, list[str]]:
    """The run's notes by benchmark. Notes stored without one (every run stored before notes had
    a benchmark) are not shown: ``results show`` prints such runs as it always did."""
    out: dict[str, list[str]] = {}
    for value in run.meta.get("notes") or []:
        note = Note.from_stored(value)
        if note.benchmark:
            out.setdefault(note.benchmark, []).append(note.text)
    return out


def run_remarks(run: Run) -> list[tuple[str, str]]:
    """An import's doubts (``# warning:`` in ``results show``) and every stored note, as (kind,
    text): what a run's table prints besides its rows, for the report's forms to keep too."""
    out = [("warning", str(w)) for w in run.meta.get(WARNINGS) or []]
    return out + [("note", Note.from_stored(n).text) for n in run.meta.get("notes") or []]


def _note_lines(texts: Iterable[str]) -> list[str]:
    return [f"# {t}" for t in texts]


def _warning_lines(warnings: Iterable[noise.NoiseWarning], benchmark: str) -> list[str]:
    return [w.line() for w in warnings if w.benchmark == benchmark]


def render_run(run: Run, measurements: list[Measurement]) -> list[str]:
    """All lines for a stored run, grouped by benchmark in first-seen order."""
    groups: dict[str, list[Measurement]] = {}
    for m in measurements:
        groups.setdefault(m.benchmark, []).append(m)
    notes = stored_notes(run)
    # notes of benchmarks without a row (every size skipped) follow the tables
    homeless = [t for bench, texts in notes.items() if bench not in groups for t in texts]
    if not groups:
        return [printable(t) for t in run_header_lines(run) + ["# no measurements"] + _note_lines(homeless)]
    warnings = noise.stored(run)  # as said when the run was made; none for older runs
    lines: list[str] = []
    for bench, ms in groups.items():
        r = renderer_for(bench)
        lines += r.header(run) + _note_lines(notes.get(bench, ())) + r.rows(ms) + r.footer(run, ms)
        lines += _warning_lines(warnings, bench)
    return [printable(t) for t in lines + _note_lines(homeless) + efficiency_lines(run, measurements)]


class TablePrinter:
    """Prints a run as it happens: header at the start, rows as they arrive, footer at the end."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out
        self._run = Run(benchmark="")
        self._renderers: dict[str, Renderer] = {}
        self._seen: dict[str, list[Measurement]] = {}
        self._closed: set[str] = set()
        self._pending: dict[str, list[str]] = {}  # notes of tables not started yet

    def _write(self, lines: Iterable[str]) -> None:
        out = self.out or sys.stdout
        for line in lines:
            out.write(printable(line) + "\n")
        out.flush()

    def on_event(self, event: Event) -> None:
        match event:
            case Header():
                self._run.ranks = event.ranks
                self._run.hosts = list(dict.fromkeys(event.hosts))
                self._run.devices = list(event.devices)
                self._run.meta.update(rank_hosts=list(event.hosts), device_type=event.device_type,
                                      backend=event.backend)
                self._run.versions = dict(event.versions)
            case Rows():
                self._rows(event.measurements)
            case Note():
                if event.benchmark and event.benchmark not in self._renderers:
                    self._pending.setdefault(event.benchmark, []).append(event.text)
                else:  # its table is open (or it has none): here, as it arrives
                    self._write([f"# {event.text}"])
            case Meta():  # e.g. per-rank pids a table header shows
                self._run.meta.update(event.data)
            case Failure() | Telemetry() | Planned():
                pass  # failures print once the run ends (with the run's errors); samples are
                # stored; how far a run is shows on stderr (report/progress.py)
            case _:
                raise TypeError(f"unknown rank event {event!r}")

    def _rows(self, batch: Iterable[Measurement]) -> None:
        by_bench: dict[str, list[Measurement]] = {}
        for m in batch:
            by_bench.setdefault(m.benchmark, []).append(m)
        for bench, ms in by_bench.items():
            if bench not in self._renderers:
                self._close_tables()  # a new table starts: finish the ones before it
                self._renderers[bench] = renderer_for(bench)
                self._run.benchmark = bench
                self._write(self._renderers[bench].header(self._run))
                self._write(_note_lines(self._pending.pop(bench, ())))
            self._seen.setdefault(bench, []).extend(ms)
            self._write(self._renderers[bench].rows(ms))

    def _close_tables(self, run: Run | None = None) -> None:
        for bench, r in self._renderers.items():
            if bench not in self._closed:
                self._closed.add(bench)
                seen = self._seen.get(bench, [])
                self._write(r.footer(run or self._run, seen))
                self._write(_warning_lines(noise.check(seen), bench))

    def finish(self, run: Run, measurements: list[Measurement]) -> None:
        self._close_tables(run)
        self._write(_note_lines(t for texts in self._pending.values() for t in texts))
        self._pending.clear()
        self._write(efficiency_lines(run, measurements))
