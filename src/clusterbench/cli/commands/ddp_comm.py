"""``clusterbench ddp-comm``: DDP gradient all_reduce cost over dummy layers (no real compute)."""

from __future__ import annotations

import click

from clusterbench.bench.workloads.ddp_comm import (
    DEFAULT_SIZE,
    DdpCommConfig,
    check_fits,
    layer_elements,
)
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.commands.train import cpu_memory_available, host_ranks, planned_world_size
from clusterbench.cli.options import dist_from, dist_options, repeat_option, store_options
from clusterbench.dist.context import resolve_device_type
from clusterbench.dist.driver import Job
from clusterbench.units import format_size, parse_rate, parse_size


@click.command("ddp-comm")
@click.option("--layers", type=int, default=16, show_default=True, help="Dummy layers.")
@click.option("--size", default=format_size(DEFAULT_SIZE), show_default=True,
              help="Total fp32 parameter (= gradient) bytes over all layers; K/M/G are binary.")
@click.option("--bucket-cap-mb", type=click.FloatRange(min=0, min_open=True), default=25.0,
              show_default=True, help="DDP gradient bucket size (DDP's default is 25).")
@click.option("--steps", type=click.IntRange(min=1), default=10, show_default=True,
              help="Timed steps, after the --warmup steps.")
@click.option("--warmup", type=click.IntRange(min=0), default=2, show_default=True,
              help="Untimed steps first (DDP builds its buckets in the first one).")
@click.option("--link-speed", default=None, metavar="RATE",
              help="Inter-node link speed (e.g. 100Gbps): adds efficiency against the optimal algbw.")
@dist_options
@repeat_option
@store_options
def ddp_comm(layers: int, size: str, bucket_cap_mb: float, steps: int, warmup: int,
             link_speed: str | None, np: int | None, repeat: int, as_json: bool, db: str | None,
             tags: tuple[str, ...], **dist: object) -> None:
    """Gradient sync: DistributedDataParallel over dummy layers holding --size of parameters.

    Step time is one forward + backward whose only real work is DDP's bucketed all_reduce of
    the gradients; algbw = gradient bytes / step time, as in the AWS 100 Gbps study.
    """
    size_bytes = parse_size(size, "--size")
    elements = layer_elements(layers, size_bytes)
    options = dist_from(dist)
    if resolve_device_type(options.device) == "cpu":  # refuse before any rank starts
        local = host_ranks(planned_world_size(np, options))
        check_fits(elements * layers * 4, cpu_memory_available(), local, "available host RAM")
    cfg = DdpCommConfig(layers=layers, size_bytes=size_bytes, bucket_cap_mb=bucket_cap_mb, steps=steps,
                        warmup=warmup, link_speed=parse_rate(link_speed) if link_speed else None,
                        link_text=link_speed or "")
    job = Job("clusterbench.bench.workloads.ddp_comm:main", cfg, options, np=np)
    raise SystemExit(run_benchmark_command(job, "ddp_comm", as_json=as_json, db=db, tags=tags,
                                           repeat=repeat))


commands = [ddp_comm]
