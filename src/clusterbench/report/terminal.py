"""Terminal tables. Each benchmark family declares its table (``clusterbench.families``); a
benchmark no family owns gets a generic one.

A renderer turns a run's header and measurements into lines, so the same code prints rows live
while a benchmark runs and re-prints a stored run (``clusterbench results show``). A note prints
inside the table of its benchmark, after the header (live: when it arrives, or once its table
starts), or after the table's footer where the family's renderer says ``notes_after_table``
(nccl-tests' table: its parsers read every line after the column header as a row). Below the tables come the judgements made at read time (efficiency against the run's
link speed). Every line is escaped (``printable``) on its way out: a tag, note, host or device
name holding control characters prints them as escapes, never as terminal commands.

Noise warnings (``judge.noise``) print as one block after the tables of a run, not one per
table: a busy node flagged every table, with the same advice each time. A ``--repeat`` prints
one block for all its runs, and then each headline row across the runs (``repeat_lines``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from typing import IO

from clusterbench.families import Renderer, renderer_for, run_header_lines
from clusterbench.judge import noise
from clusterbench.judge.efficiency import efficiency_lines
from clusterbench.judge.history import build_series
from clusterbench.judge.stats import summarize
from clusterbench.judge.text import fmt
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
from clusterbench.units import compact


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


def _after_table(r: Renderer) -> bool:
    return bool(getattr(r, "notes_after_table", False))


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
    lines: list[str] = []
    for bench, ms in groups.items():
        r = renderer_for(bench)
        own = _note_lines(notes.get(bench, ()))
        if _after_table(r):
            lines += r.header(run) + r.rows(ms) + r.footer(run, ms) + own
        else:
            lines += r.header(run) + own + r.rows(ms) + r.footer(run, ms)
    # as said when the run was made (none for older runs): one block after the tables
    lines += noise.summary_lines(noise.stored(run), noise.checked_rows(measurements),
                                 repeating="repeat_group" in run.tags)
    return [printable(t) for t in lines + _note_lines(homeless) + efficiency_lines(run, measurements)]


def _figure(v: float) -> str:
    """Four significant digits, as hyperfine prints its figures; whole from 1000 (no exponent)."""
    if not math.isfinite(v) or abs(v) >= 1e15:
        return fmt(v)
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def repeat_lines(runs: list[tuple[Run, list[Measurement]]]) -> list[str]:
    """After the last run of a ``--repeat``, as hyperfine ends: each headline row (the largest
    size of a sweep, per host) across the runs: mean ± σ, min..max and how many runs; [] for
    fewer than two runs."""
    if len(runs) < 2:
        return []
    series = build_series(runs)
    if not series:
        return []
    rows = []
    for s in series:
        values = [p.value for p in s.points]
        if not values:
            continue
        sm = summarize(values)
        spread = sm.n > 1 and math.isfinite(sm.sd)
        sd = f"± {sm.sd:.2g}" if spread else "± -"   # two digits, as hyperfine's σ
        cv = f"{compact(sm.sd / abs(sm.mean) * 100, 1)}%" if spread and sm.mean else "-"
        rows.append((f"{s.label} {s.metric}" + (f" on {s.entity}" if len({x.entity for x in series}) > 1 else ""),
                     f"{_figure(sm.mean)} {sd} {s.unit}".rstrip(), f"{_figure(min(values))}..{_figure(max(values))}",
                     cv, str(sm.n)))
    heads = ("row", "mean ± σ", "min..max", "CV", "runs")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    ids = [run.id for run, _ in runs]
    group = runs[0][0].tags.get("repeat_group")
    out = [f"# {len(runs)} runs ({', '.join(map(str, ids))}" + (f"; repeat_group={group}" if group else "")
           + "): each headline row across them"]
    out.append("# " + "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(heads, widths))))
    for r in rows:
        out.append("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return [printable(t) for t in out]


class TablePrinter:
    """Prints a run as it happens: header at the start, rows as they arrive, footer at the end."""

    def __init__(self, out: IO[str] | None = None, noise_block: bool = True) -> None:
        """``noise_block``: print the run's noise warnings after its tables (a ``--repeat``
        prints one block for all its runs itself)."""
        self.out = out
        self.noise_block = noise_block
        self.warnings: list[noise.NoiseWarning] = []   # each closed table's, in order
        self._run = Run(benchmark="")
        self._renderers: dict[str, Renderer] = {}
        self._seen: dict[str, list[Measurement]] = {}
        self._closed: set[str] = set()
        self._pending: dict[str, list[str]] = {}  # notes of tables not started (or not ended) yet

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
                r = self._renderers.get(event.benchmark or "")
                if event.benchmark and (r is None or (_after_table(r) and event.benchmark not in self._closed)):
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
                if not _after_table(self._renderers[bench]):
                    self._write(_note_lines(self._pending.pop(bench, ())))
            self._seen.setdefault(bench, []).extend(ms)
            self._write(self._renderers[bench].rows(ms))

    def _close_tables(self, run: Run | None = None) -> None:
        for bench, r in self._renderers.items():
            if bench not in self._closed:
                self._closed.add(bench)
                seen = self._seen.get(bench, [])
                self._write(r.footer(run or self._run, seen))
                if _after_table(r):
                    self._write(_note_lines(self._pending.pop(bench, ())))
                self.warnings += noise.check(seen)

    def finish(self, run: Run, measurements: list[Measurement]) -> None:
        self._close_tables(run)
        if self.noise_block:
            self._write(noise.summary_lines(self.warnings, noise.checked_rows(measurements)))
        self._write(_note_lines(t for texts in self._pending.values() for t in texts))
        self._pending.clear()
        self._write(efficiency_lines(run, measurements))
