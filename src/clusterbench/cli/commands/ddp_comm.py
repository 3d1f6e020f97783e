"""``clusterbench ddp-comm``: DDP gradient all_reduce cost over dummy layers (no real compute)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import click

from clusterbench.bench.workloads import ddp_comm as ddp_main
from clusterbench.bench.workloads.ddp_comm import (
    DEFAULT_SIZE,
    check_link_speed_ranks,
    ddp_comm_config,
    ddp_comm_options,
)
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.bounds import MAX_INT32, MAX_ITERATIONS, POSITIVE, Count
from clusterbench.cli.options import RunOutput, rank_options, run_output
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, planned_world_size
from clusterbench.units import format_size, parse_rate


@click.command("ddp-comm")
@click.option("--layers", type=Count(0, MAX_INT32), default=16, show_default=True, help="Dummy layers.")
@click.option("--size", default=format_size(DEFAULT_SIZE), show_default=True,
              help="Total fp32 parameter (= gradient) bytes over all layers; K/M/G are binary.")
@click.option("--bucket-cap-mb", type=POSITIVE, default=25.0,
              show_default=True, help="DDP gradient bucket size (DDP's default is 25).")
@click.option("--steps", type=Count(1, MAX_ITERATIONS), default=10, show_default=True,
              help="Timed steps, after the --warmup steps.")
@click.option("--warmup", type=Count(0, MAX_ITERATIONS), default=2, show_default=True,
              help="Untimed steps first (DDP builds its buckets in the first one).")
@click.option("--link-speed", default=None, metavar="RATE",
              help="Inter-node link speed (e.g. 100Gbps): stored as the run's link_speed tag, so the "
                   "efficiency against the optimal algbw is shown now and whenever the run is read.")
@rank_options
@run_output
def ddp_comm(layers: int, size: str, bucket_cap_mb: float, steps: int, warmup: int, link_speed: str | None,
             np: int | None, ranks: RankOptions, out: RunOutput) -> int:
    """Gradient sync: DistributedDataParallel over dummy layers holding --size of parameters.

    Step time is one forward + backward whose only real work is DDP's bucketed all_reduce of
    the gradients; algbw = gradient bytes / step time, as in the AWS 100 Gbps study.
    """
    cfg = ddp_comm_config(layers=layers, size=size, bucket_cap_mb=bucket_cap_mb, steps=steps, warmup=warmup,
                       np=np, options=ranks)
    if link_speed:
        parse_rate(link_speed)  # a bad rate is refused before any rank starts
        check_link_speed_ranks(planned_world_size(np, ranks))
        out = dataclasses.replace(out, tags={**(out.tags or {}), "link_speed": link_speed})
    return run_benchmark_command(Job(ddp_main.main, cfg, ranks, np=np), "ddp_comm", out)


def check_params(params: Mapping[str, Any]) -> None:
    """The values of a parsed ``ddp-comm`` line checked as the command checks them, without running
    it and without the ranks or this host's memory (cli/argv_check.py: a sweep's test, a qualify step)."""
    ddp_comm_options(layers=params["layers"], size=params["size"], bucket_cap_mb=params["bucket_cap_mb"],
                     steps=params["steps"], warmup=params["warmup"])
    if params["link_speed"]:
        parse_rate(params["link_speed"])


commands = [ddp_comm]
