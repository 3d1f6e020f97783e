"""The shared tail of every benchmark command: repeat, print (table or JSON), store, exit code."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from typing import Any

from clusterbench.cli.options import RunOutput, command_line
from clusterbench.judge import noise
from clusterbench.output import OUTPUT_FAILED
from clusterbench.printable import printable
from clusterbench.ranks.driver import Job
from clusterbench.records import Event, Measurement, Note, Run
from clusterbench.report.jsonl import JsonPrinter
from clusterbench.report.progress import Progress, RowProgress, wanted
from clusterbench.report.terminal import TablePrinter, repeat_lines
from clusterbench.runner import Printer, new_group_id, run_job

# What a command says at the end of its table from the run as stored; None: nothing.
Closing = Callable[[Run], Note | None]


class _ClosingPrinter:
    """A table printer that, once the run is stored, shows the note ``closing`` makes of it as
    the rank's own notes are shown: after the tables, before the run's error lines."""

    def __init__(self, printer: Printer, closing: Closing) -> None:
        self.printer = printer
        self.closing = closing

    def on_event(self, event: Event) -> None:
        self.printer.on_event(event)

    def finish(self, run: Run, measurements: list[Measurement]) -> None:
        note = self.closing(run)
        if note is not None:
            self.printer.on_event(note)
        self.printer.finish(run, measurements)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_benchmark_command(job: Job, benchmark: str, out: RunOutput,
                          meta: dict[str, Any] | None = None, closing: Closing | None = None) -> int:
    """Run ``job`` ``out.repeat`` times, each stored as its own run; return the worst exit code.

    Repetitions share a ``repeat_group`` tag so ``compare`` and ``report`` can treat them as a group.
    Every rank repeats (under a launcher each process runs this loop); only rank 0 stores.
    ``closing``: a note the table shows last, made from each stored run (JSON lines carry the
    run record, which holds what it would say).
    """
    repeating = out.repeat > 1
    group = new_group_id() if repeating else None
    worst = 0
    done: list[tuple[Run, list[Measurement]]] = []
    for i in range(out.repeat):
        run_tags = dict(out.tags or {})
        if group:
            run_tags.update(repeat_group=group, repeat=str(i + 1))
        # a --repeat says its runs' noise once, after the last of them
        printer: Printer = JsonPrinter() if out.as_json else TablePrinter(noise_block=not repeating)
        if closing is not None and not out.as_json:
            printer = _ClosingPrinter(printer, closing)
        with Progress(wanted(out.quiet)) as progress:
            shown = RowProgress(printer, progress, f"run {i + 1} of {out.repeat}: " if repeating else "",
                                say=None if out.quiet else _say)
            result = run_job(job, benchmark, command_line(), shown, db=out.db,
                             tags=run_tags, meta=meta, judge=partial(noise.annotate, repeating=repeating),
                             announce=(lambda _text: None) if out.quiet else None)
        if result.run is not None:   # rank 0: the run as stored
            done.append((result.run, result.measurements))
        worst = max(worst, result.exit_code)
        if result.exit_code not in (0, 1, OUTPUT_FAILED):  # a signal or an error: no more repetitions
            break
    if repeating and not out.as_json and done:
        _print_lines(noise.summary_lines([w for run, _ in done for w in noise.stored(run)],
                                         sum(noise.checked_rows(ms) for _, ms in done), len(done), repeating=True)
                     + repeat_lines(done))
    return worst


def _print_lines(lines: list[str]) -> None:
    for line in lines:
        print(printable(line))
