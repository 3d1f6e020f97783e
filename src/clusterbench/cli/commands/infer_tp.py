"""``clusterbench infer-tp``: toy tensor-parallel inference latency and throughput against batch size."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from clusterbench.bench.workloads import infer_tp as infer_main
from clusterbench.bench.workloads.infer_tp import MODES, infer_tp_config, infer_tp_options
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.options import RunOutput, rank_options, run_output
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job


@click.command("infer-tp")
@click.option("--hidden", type=click.IntRange(min=1), default=None,
              help="Layer width (divisible by the ranks). Default 4096; 1024 on CPU ranks.")
@click.option("--layers", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--batch-sizes", default=None,
              help="Comma list, or START..END doubling. Default: the seed's sweep 128..32768; "
                   "128..2048 on CPU ranks.")
@click.option("--mode", type=click.Choice(MODES), default="column", show_default=True,
              help="column: column-parallel + all_gather; row: row-parallel + all_reduce.")
@click.option("--dtype", type=click.Choice(["auto", "bf16", "fp16", "fp32"]), default="auto",
              show_default=True, help="auto: bf16 on GPUs that support it, fp32 otherwise.")
@click.option("--iters", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True)
@click.option("--no-check", is_flag=True, help="Skip the check against the unsplit layers.")
@rank_options
@run_output
def infer_tp(hidden: int | None, layers: int, batch_sizes: str | None, mode: str, dtype: str, iters: int, warmup: int,
             no_check: bool, np: int | None, ranks: RankOptions, out: RunOutput) -> int:
    """Toy tensor-parallel inference: a stack of linear layers split over the ranks.

    One rank runs the layers whole (no collectives); N ranks split every layer and join the
    outputs with all_gather (column mode) or all_reduce (row mode). Reports latency and samples/s.
    """
    cfg = infer_tp_config(hidden=hidden, layers=layers, batch_sizes=batch_sizes, mode=mode, dtype=dtype,
                       iters=iters, warmup=warmup, check=not no_check, np=np, options=ranks)
    return run_benchmark_command(Job(infer_main.main, cfg, ranks, np=np), "infer_tp", out)


def check_params(params: Mapping[str, Any]) -> None:
    """The values of a parsed ``infer-tp`` line checked as the command checks them, without running
    it and without the ranks or this host's devices and memory (cli/argv_check.py: a sweep's test,
    a qualify step). Only --device cpu says the ranks' device before they run on their node."""
    infer_tp_options(hidden=params["hidden"], layers=params["layers"], batch_sizes=params["batch_sizes"],
                     mode=params["mode"], dtype=params["dtype"], iters=params["iters"], warmup=params["warmup"],
                     check=not params["no_check"], on_cpu=params["device"] == "cpu")


commands = [infer_tp]
