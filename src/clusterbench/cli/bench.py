"""The shared tail of every benchmark command: repeat, print (table or JSON), store, exit code."""

from __future__ import annotations

from typing import Any

from clusterbench.cli.options import RunOutput, command_line
from clusterbench.judge import noise
from clusterbench.output import OUTPUT_FAILED
from clusterbench.ranks.driver import Job
from clusterbench.report.jsonl import JsonPrinter
from clusterbench.report.progress import Progress, RowProgress, wanted
from clusterbench.report.terminal import TablePrinter
from clusterbench.runner import new_group_id, run_job


def run_benchmark_command(job: Job, benchmark: str, out: RunOutput,
                          meta: dict[str, Any] | None = None) -> int:
    """Run ``job`` ``out.repeat`` times, each stored as its own run; return the worst exit code.

    Repetitions share a ``repeat_group`` tag so ``compare`` and ``report`` can treat them as a group.
    Every rank repeats (under a launcher each process runs this loop); only rank 0 stores.
    """
    group = new_group_id() if out.repeat > 1 else None
    worst = 0
    for i in range(out.repeat):
        run_tags = dict(out.tags or {})
        if group:
            run_tags.update(repeat_group=group, repeat=str(i + 1))
        printer = JsonPrinter() if out.as_json else TablePrinter()
        with Progress(wanted(out.quiet)) as progress:
            shown = RowProgress(printer, progress, f"run {i + 1} of {out.repeat}: " if out.repeat > 1 else "")
            result = run_job(job, benchmark, command_line(), shown, db=out.db,
                             tags=run_tags, meta=meta, judge=noise.annotate,
                             announce=(lambda _text: None) if out.quiet else None)
        worst = max(worst, result.exit_code)
        if result.exit_code not in (0, 1, OUTPUT_FAILED):  # a signal or an error: no more repetitions
            break
    return worst
