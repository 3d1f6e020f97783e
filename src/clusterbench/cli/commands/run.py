"""``clusterbench run``: the default suite on this machine, stored as one run."""

from __future__ import annotations

import click

from clusterbench.bench import suite
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.options import RunOutput, rank_options, run_output
from clusterbench.families.collectives.spec import OPS
from clusterbench.families.stream.spec import NAMES as KERNELS
from clusterbench.preflight import before_run
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job
from clusterbench.records import Note, Run


@click.command("run", help=f"""Collectives, memory bandwidth (stream) and GEMM on this machine, as one run.

    The default suite: preflight checks, then every collective op ({', '.join(OPS)}) over every
    visible GPU, or 2 CPU ranks without one; then stream (BabelStream's {', '.join(KERNELS)}) and
    GEMM per dtype on every GPU at once. Printed as nccl-tests style tables (notes and noise
    warnings inside the table they belong to) and stored as one run.""")
@rank_options
@run_output
@click.option("--no-preflight", is_flag=True,
              help="Skip the health checks (clusterbench preflight) run first and stored with the run.")
def run(np: int | None, ranks: RankOptions, out: RunOutput, no_preflight: bool) -> int:
    job = Job(suite.main, list(suite.SUITE), ranks, np=np)
    # Preflight first: its outcome is stored with the run (meta "preflight"); it never stops the run.
    meta = None if no_preflight else before_run()
    return run_benchmark_command(job, "suite", out, meta=meta, closing=_suite_line)


def _suite_line(run: Run) -> Note | None:
    """The suite's closing line, from the steps' status stored in the run's meta, for a run that
    ended before the suite could say it (a rank died, a signal stopped it): which step it stopped
    in and which never ran. None when the suite said it itself, or the run holds no steps."""
    steps = run.meta.get(suite.SUITE_META)
    notes = run.meta.get("notes")
    said = isinstance(notes, list) and any(isinstance(n, dict) and n.get("benchmark") == suite.SUITE_META
                                           for n in notes)
    if said or not isinstance(steps, list) or not steps:
        return None
    return Note(suite.summary(steps), suite.SUITE_META)


commands = [run]
