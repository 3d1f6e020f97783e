"""The shared tail of every benchmark command: repeat, print (table or JSON), store, exit code."""

from __future__ import annotations

from typing import Any

from clusterbench.cli.options import command_line, parse_tags
from clusterbench.dist.driver import Job
from clusterbench.report.jsonl import JsonPrinter
from clusterbench.report.terminal import TablePrinter
from clusterbench.runner import Printer, new_group_id, run_job


def run_benchmark_command(
    job: Job,
    benchmark: str,
    *,
    as_json: bool,
    db: str | None,
    tags: tuple[str, ...] | list[str] = (),
    repeat: int = 1,
    printer: Printer | None = None,
    meta: dict[str, Any] | None = None,
) -> int:
    """Run ``job`` ``repeat`` times, each stored as its own run; return the worst exit code.

    Repetitions share a ``repeat_group`` tag so ``compare`` and ``report`` can treat them as a group.
    """
    base_tags = parse_tags(tags)
    group = new_group_id() if repeat > 1 else None
    worst = 0
    for i in range(repeat):
        run_tags = dict(base_tags)
        if group:
            run_tags.update(repeat_group=group, repeat=str(i + 1))
        p = printer if (printer is not None and i == 0) else (JsonPrinter() if as_json else TablePrinter())
        result = run_job(job, benchmark, command_line(), p, db=db, tags=run_tags, meta=meta)
        worst = max(worst, result.exit_code)
        if result.run is None or result.exit_code not in (0, 1):
            break
    return worst
