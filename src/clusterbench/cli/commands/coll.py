"""``clusterbench coll OP``: one collective (or ``all``) swept over sizes, printed as nccl-tests does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from clusterbench.bench import devices as devs
from clusterbench.bench.collectives import rank
from clusterbench.bench.collectives.config import ENGINES, CollConfig, coll_config
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.bounds import MAX_CYCLES, MAX_INT32, MAX_INT64, MAX_ITERATIONS, Count
from clusterbench.cli.options import RunOutput, rank_options, run_output
from clusterbench.errors import UsageError
from clusterbench.families.collectives.spec import DTYPES, OPS, REDOPS
from clusterbench.ranks.context import RankOptions, resolve_device_type
from clusterbench.ranks.driver import Job, planned_world_size
from clusterbench.ranks.env import detect


@click.command("coll", epilog=f"Ops: {', '.join(OPS)}.")
@click.argument("op", metavar="OP")
@click.option("-b", "--minbytes", default="8", show_default=True,
              help="Smallest size in bytes (K/M/G suffixes are binary, as nccl-tests).")
@click.option("-e", "--maxbytes", default="32M", show_default=True, help="Largest size in bytes.")
@click.option("-f", "--stepfactor", type=Count(0, MAX_INT64), default=None,
              help="Multiply the size by this factor each step [default: 2; 1 with -i].")
@click.option("-i", "--stepbytes", default=None, help="Add this many bytes each step (when -f is 1).")
@click.option("-n", "--iters", type=Count(0, MAX_ITERATIONS), default=20, show_default=True, help="Timed iterations per size.")
@click.option("-w", "--warmup_iters", "warmup_iters", type=Count(0, MAX_ITERATIONS), default=5, show_default=True,
              help="Warm-up iterations at the largest and the smallest size.")
@click.option("-c", "--check", type=Count(0, MAX_ITERATIONS), default=1, show_default=True,
              help="Check iterations per result; 0 disables the correctness check (#wrong N/A).")
@click.option("-d", "--datatype", default="float", show_default=True,
              help=f"{', '.join(DTYPES)}, or all (comma lists work too).")
@click.option("-o", "--op", "redop", default="sum", show_default=True,
              help=f"Reduction: {', '.join(REDOPS)}, or all.")
@click.option("-r", "--root", type=Count(0, MAX_INT32), default=0, show_default=True, help="Root rank of broadcast and reduce.")
@click.option("-a", "--average", type=Count(high=None), default=1, show_default=True,
              help="Time reported across ranks: 0 rank 0, 1 average, 2 minimum, 3 maximum.")
@click.option("-N", "--run_cycles", "cycles", type=Count(0, MAX_CYCLES), default=1, show_default=True,
              help="Run the whole sweep this many times.")
@click.option("-G", "--cudagraph", "graph", type=Count(0, MAX_ITERATIONS), default=0, show_default=True,
              help="Capture the -n iterations in a CUDA/HIP graph and replay it this many times "
                   "(no Python dispatch per op; GPU ranks only); 0 issues ops one by one.")
@click.option("--engine", type=click.Choice(ENGINES), default="torch", show_default=True,
              help="torch: torch.distributed (gloo on CPUs, NCCL/RCCL on GPUs; out of place, all_reduce, "
                   "broadcast and reduce copy the input, then run in place); nccl: the NCCL/RCCL library "
                   "PyTorch loaded, called directly as nccl-tests does (GPU ranks).")
@rank_options
@run_output
def coll(op: str, np: int | None, ranks: RankOptions, out: RunOutput, **kw: Any) -> int:
    """Collective OP swept over sizes: one of the ops below, a comma list, or all.

    Prints nccl-tests' table (out-of-place and in-place time, algbw, busbw, #wrong) with its
    definitions (algbw = size/time, busbw = algbw x op factor) and stores the run. Out of place
    the op reads one buffer and writes another; in place it works in one buffer (nccl-tests'
    placements). --engine says what ran them (the table header names it).
    """
    config = _config(op, kw)
    device_type = resolve_device_type(ranks.device)
    if config.engine == "nccl" and device_type != "cuda":
        raise UsageError(f"--engine nccl calls the NCCL/RCCL library on GPU ranks; these ranks run on "
                         f"{device_type} (--device {ranks.device}): use --engine torch")
    launched = detect()
    world = launched.world_size if launched else planned_world_size(np, ranks)
    rank.refuse_empty(config, world)
    if device_type == "cpu":   # a GPU's free memory is read by its rank
        rank.refuse_unallocatable(config, world, launched.local_world_size if launched else world,
                                  devs.free_memory(devs.rank_device("cpu", [0], 0)))
    return run_benchmark_command(Job(rank.main, config, ranks, np=np), "coll", out)


def _config(op: str, kw: Mapping[str, Any]) -> CollConfig:
    return coll_config(
        op, minbytes=kw["minbytes"], maxbytes=kw["maxbytes"], stepfactor=kw["stepfactor"],
        stepbytes=kw["stepbytes"], iters=kw["iters"], warmup_iters=kw["warmup_iters"], check=kw["check"],
        datatype=kw["datatype"], redop=kw["redop"], root=kw["root"], average=kw["average"],
        cycles=kw["cycles"], graph=kw["graph"], engine=kw.get("engine", "torch"))


def check_params(params: Mapping[str, Any]) -> None:
    """The values of a parsed ``coll`` line checked as the command checks them, without running
    it and without this host's hardware (cli/argv_check.py: a sweep's test, a qualify step)."""
    _config(params["op"], params)


commands = [coll]
