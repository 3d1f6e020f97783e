"""``clusterbench run``: the default suite on this machine, stored as one run."""

from __future__ import annotations

from typing import Any

import click

from clusterbench.bench.suite import SUITE
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.options import dist_from, dist_options, repeat_option, store_options
from clusterbench.dist.driver import Job
from clusterbench.preflight import before_run


@click.command("run")
@dist_options
@repeat_option
@store_options
@click.option("--no-preflight", is_flag=True,
              help="Skip the health checks (clusterbench preflight) run first and stored with the run.")
def run(**kw: Any) -> int:
    """Run the default suite on this machine: collectives over every visible GPU (or 2 CPU
    ranks without one), printed as nccl-tests tables and stored as one run."""
    job = Job("clusterbench.bench.suite:main", list(SUITE), dist_from(kw), np=kw["np"])
    # Preflight first: its outcome is stored with the run (meta "preflight"); it never stops the run.
    meta = None if kw["no_preflight"] else before_run()
    return run_benchmark_command(job, "suite", as_json=kw["as_json"], db=kw["db"], tags=kw["tags"],
                                 repeat=kw["repeat"], meta=meta)


commands = [run]
