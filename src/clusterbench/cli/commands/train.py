"""``clusterbench train``: FSDP2 training throughput of a synthetic decoder; ``clusterbench scaling``:
the scaling table of tagged training runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from clusterbench.bench.workloads import train as train_main
from clusterbench.bench.workloads.model import PRESETS, resolve_shape
from clusterbench.bench.workloads.train import DTYPES, STRATEGIES, train_config, train_options
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.bounds import MAX_INT64, MAX_ITERATIONS, POSITIVE, Count
from clusterbench.cli.options import RunOutput, model_shape_options, rank_options, run_output
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job


@click.command("train")
@click.option("--preset", type=click.Choice(list(PRESETS)), default="tiny", show_default=True,
              help="Model shape: tiny (seconds on a CPU), 1b or 8b (GPU); the options below override it.")
@model_shape_options
@click.option("--batch", type=Count(high=None), default=8, show_default=True,
              help="Global batch in sequences per step, split evenly over the ranks.")
@click.option("--steps", type=Count(1, MAX_ITERATIONS), default=20, show_default=True,
              help="Training steps in all; every step prints its loss.")
@click.option("--warmup", type=Count(0, MAX_ITERATIONS), default=2, show_default=True,
              help="First steps left out of the overall figures.")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="full", show_default=True,
              help="full: shard over all ranks; hybrid: shard within --shard-size ranks, replicate across.")
@click.option("--shard-size", type=Count(1, MAX_INT64), default=None,
              help="Hybrid shard group size (default: ranks per host).")
@click.option("--dtype", type=click.Choice(DTYPES), default="auto", show_default=True,
              help="auto: bf16 compute on GPUs that support it, fp32 otherwise.")
@click.option("--lr", type=POSITIVE, default=3e-3, show_default=True)
@click.option("--no-comm-share", is_flag=True, help="Skip the profiled step that measures comm_share.")
@rank_options
@run_output
def train(preset: str, layers: int | None, hidden: int | None, heads: int | None, kv_heads: int | None,
          seq: int | None, vocab: int | None, ffn: int | None, batch: int, steps: int, warmup: int,
          strategy: str, shard_size: int | None, dtype: str, lr: float, no_comm_share: bool, np: int | None,
          ranks: RankOptions, out: RunOutput) -> int:
    """Training throughput: FSDP2 (fully_shard) on a synthetic decoder-only transformer.

    Reports loss, step time, samples/s and tokens/s per step, and overall throughput, peak
    memory, communication share and MFU (model FLOPs x tokens/s against the device's peak, with
    6 (params - embedding) + 12 x layers x hidden x seq FLOPs per token: docs/metrics.md).
    """
    shape = resolve_shape(preset, layers=layers, hidden=hidden, heads=heads, seq=seq, vocab=vocab, ffn=ffn,
                          kv_heads=kv_heads)
    cfg = train_config(shape, preset=preset, batch=batch, steps=steps, warmup=warmup, strategy=strategy,
                       shard_size=shard_size, dtype=dtype, lr=lr, comm_share=not no_comm_share, np=np,
                       options=ranks)
    return run_benchmark_command(Job(train_main.main, cfg, ranks, np=np), "train", out)


def check_params(params: Mapping[str, Any]) -> None:
    """The values of a parsed ``train`` line checked as the command checks them, without running
    it and without the ranks or this host's devices and memory (cli/argv_check.py: a sweep's test,
    a qualify step). Only --device cpu says the ranks' device before they run on their node."""
    resolve_shape(params["preset"], layers=params["layers"], hidden=params["hidden"], heads=params["heads"],
                  seq=params["seq"], vocab=params["vocab"], ffn=params["ffn"], kv_heads=params["kv_heads"])
    train_options(batch=params["batch"], steps=params["steps"], warmup=params["warmup"],
                  strategy=params["strategy"], shard_size=params["shard_size"], dtype=params["dtype"],
                  on_cpu=params["device"] == "cpu")


commands = [train]
