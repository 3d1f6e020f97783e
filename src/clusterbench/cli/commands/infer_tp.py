"""``clusterbench infer-tp``: toy tensor-parallel inference latency and throughput against batch size."""

from __future__ import annotations

import click

from clusterbench.bench.workloads.infer_tp import (
    DTYPE_BYTES,
    MODES,
    InferTpConfig,
    check_fits,
    memory_need,
    validate,
)
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.commands.train import cpu_memory_available, host_ranks, planned_world_size
from clusterbench.cli.options import dist_from, dist_options, repeat_option, store_options
from clusterbench.dist.context import resolve_device_type
from clusterbench.dist.driver import Job
from clusterbench.errors import UsageError
from clusterbench.units import parse_size


def parse_batches(text: str) -> tuple[int, ...]:
    """``128,256,1024`` or ``128..32768`` (doubling)."""
    if ".." in text:
        lo_text, _, hi_text = text.partition("..")
        lo, hi = parse_size(lo_text, "--batch-sizes"), parse_size(hi_text, "--batch-sizes")
        if lo < 1 or hi < lo:
            raise UsageError(f"invalid --batch-sizes {text!r}: need 1 <= START <= END")
        out = []
        while lo <= hi:
            out.append(lo)
            lo *= 2
        return tuple(out)
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UsageError("--batch-sizes is empty")
    return tuple(parse_size(t, "--batch-sizes") for t in items)


@click.command("infer-tp")
@click.option("--hidden", type=int, default=4096, show_default=True, help="Layer width (divisible by the ranks).")
@click.option("--layers", type=int, default=4, show_default=True)
@click.option("--batch-sizes", default="128..32768", show_default=True,
              help="Comma list, or START..END doubling (the seed's sweep is 128..32768).")
@click.option("--mode", type=click.Choice(MODES), default="column", show_default=True,
              help="column: column-parallel + all_gather; row: row-parallel + all_reduce.")
@click.option("--dtype", type=click.Choice(["auto", "bf16", "fp16", "fp32"]), default="auto",
              show_default=True, help="auto: bf16 on GPUs that support it, fp32 otherwise.")
@click.option("--iters", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True)
@click.option("--no-check", is_flag=True, help="Skip the check against the unsplit layers.")
@dist_options
@repeat_option
@store_options
def infer_tp(hidden: int, layers: int, batch_sizes: str, mode: str, dtype: str, iters: int, warmup: int,
             no_check: bool, np: int | None, repeat: int, as_json: bool, db: str | None,
             tags: tuple[str, ...], **dist: object) -> None:
    """Toy tensor-parallel inference: a stack of linear layers split over the ranks.

    One rank runs the layers whole (no collectives); N ranks split every layer and join the
    outputs with all_gather (column mode) or all_reduce (row mode). Reports latency and samples/s.
    """
    options = dist_from(dist)
    cfg = InferTpConfig(hidden=hidden, layers=layers, batches=parse_batches(batch_sizes), mode=mode,
                        dtype=dtype, iters=iters, warmup=warmup, check=not no_check)
    world = planned_world_size(np, options)
    validate(cfg, world)
    if resolve_device_type(options.device) != "cuda":
        if dtype in ("bf16", "fp16"):
            raise UsageError(f"--dtype {dtype} needs a GPU (CPU ranks run fp32)")
        check_fits(memory_need(cfg, world, DTYPE_BYTES["fp32"]), cpu_memory_available() // host_ranks(world),
                   "its share of available host RAM")
    job = Job("clusterbench.bench.workloads.infer_tp:main", cfg, options, np=np)
    raise SystemExit(run_benchmark_command(job, "infer_tp", as_json=as_json, db=db, tags=tags,
                                           repeat=repeat))


commands = [infer_tp]
