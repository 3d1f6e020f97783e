"""``clusterbench train``: FSDP2 training throughput of a synthetic decoder; ``clusterbench scaling``:
the scaling table of tagged training runs."""

from __future__ import annotations

import json

import click

from clusterbench.bench.workloads import scaling as sc
from clusterbench.bench.workloads.model import PRESETS, resolve_shape
from clusterbench.bench.workloads.train import (
    DTYPES,
    STRATEGIES,
    TrainConfig,
    check_batch,
    check_fits,
    shard_ranks,
)
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.options import (
    db_option,
    dist_from,
    dist_options,
    json_option,
    repeat_option,
    store_options,
)
from clusterbench.dist.context import DistOptions, resolve_device_type
from clusterbench.dist.driver import Job, default_np
from clusterbench.dist.rankenv import detect
from clusterbench.errors import UsageError
from clusterbench.store import Store


def host_ranks(world: int) -> int:
    """Ranks that share this host's memory: the launcher's local ranks, else all local ranks."""
    env = detect()
    return env.local_world_size if env is not None else world


def cpu_memory_available() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


def planned_world_size(np: int | None, options: DistOptions) -> int:
    """The ranks a job will have: the launcher's, else --np, else the driver's default."""
    env = detect()
    if env is not None:
        return env.world_size
    n = np if np is not None else default_np(options)
    if n < 1:
        raise UsageError(f"--np must be at least 1, got {n}")
    return n


@click.command("train")
@click.option("--preset", type=click.Choice(list(PRESETS)), default="tiny", show_default=True,
              help="Model shape: tiny (seconds on a CPU), 1b or 8b (GPU); the options below override it.")
@click.option("--layers", type=int, default=None, help="Transformer blocks.")
@click.option("--hidden", type=int, default=None, help="Model width (FFN defaults to 4x).")
@click.option("--heads", type=int, default=None, help="Attention heads (must divide --hidden).")
@click.option("--kv-heads", type=int, default=None, help="Key/value heads for grouped-query attention.")
@click.option("--seq", type=int, default=None, help="Sequence length in tokens.")
@click.option("--vocab", type=int, default=None, help="Vocabulary size.")
@click.option("--ffn", type=int, default=None, help="MLP inner width.")
@click.option("--batch", type=int, default=8, show_default=True,
              help="Global batch in sequences per step, split evenly over the ranks.")
@click.option("--steps", type=click.IntRange(min=1), default=20, show_default=True,
              help="Training steps in all; every step prints its loss.")
@click.option("--warmup", type=click.IntRange(min=0), default=2, show_default=True,
              help="First steps left out of the overall figures.")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="full", show_default=True,
              help="full: shard over all ranks; hybrid: shard within --shard-size ranks, replicate across.")
@click.option("--shard-size", type=click.IntRange(min=1), default=None,
              help="Hybrid shard group size (default: ranks per host).")
@click.option("--dtype", type=click.Choice(DTYPES), default="auto", show_default=True,
              help="auto: bf16 compute on GPUs that support it, fp32 otherwise.")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=3e-3, show_default=True)
@click.option("--no-comm-share", is_flag=True, help="Skip the profiled step that measures comm_share.")
@dist_options
@repeat_option
@store_options
def train(preset: str, layers: int | None, hidden: int | None, heads: int | None,
          kv_heads: int | None, seq: int | None,
          vocab: int | None, ffn: int | None, batch: int, steps: int, warmup: int, strategy: str,
          shard_size: int | None, dtype: str, lr: float, no_comm_share: bool, np: int | None,
          repeat: int, as_json: bool, db: str | None, tags: tuple[str, ...], **dist: object) -> None:
    """Training throughput: FSDP2 (fully_shard) on a synthetic decoder-only transformer.

    Reports loss, step time, samples/s and tokens/s per step, and overall throughput, peak
    memory, communication share and MFU (6 x params x tokens/s against the device's peak).
    """
    shape = resolve_shape(preset, layers=layers, hidden=hidden, heads=heads, seq=seq, vocab=vocab, ffn=ffn,
                          kv_heads=kv_heads)
    options = dist_from(dist)
    world = planned_world_size(np, options)
    check_batch(batch, world)
    if strategy == "hybrid" and shard_size is not None and world % shard_size:
        raise UsageError(f"--shard-size {shard_size} does not divide the {world} ranks")
    if dtype == "bf16" and resolve_device_type(options.device) != "cuda":
        raise UsageError("--dtype bf16 needs a GPU (CPU ranks train in fp32)")
    if resolve_device_type(options.device) == "cpu":  # refuse before any rank starts
        local = host_ranks(world)
        check_fits(shape, shard_ranks(strategy, world, shard_size, local), cpu_memory_available(), local,
                   "available host RAM")
    cfg = TrainConfig(shape=shape, batch=batch, steps=steps, warmup=warmup, strategy=strategy,
                      shard_size=shard_size, dtype=dtype, lr=lr,
                      preset=preset if PRESETS.get(preset) == shape else "custom",
                      comm_share=not no_comm_share)
    job = Job("clusterbench.bench.workloads.train:main", cfg, options, np=np)
    raise SystemExit(run_benchmark_command(job, "train", as_json=as_json, db=db, tags=tags, repeat=repeat))


@click.command("scaling")
@click.argument("selectors", nargs=-1, required=True, metavar="SELECTOR...")
@click.option("--baseline", default=None, metavar="SELECTOR",
              help="Runs whose smallest node count is the baseline of every group (e.g. the 1-node run).")
@click.option("--benchmark", default="train", show_default=True, help="Workload whose runs to scale.")
@click.option("--metric", default="samples_per_s", show_default=True, help="Overall throughput metric.")
@click.option("--by", type=click.Choice(["nodes", "ranks"]), default="nodes", show_default=True,
              help="Count distinct hosts, or ranks (one host emulating nodes).")
@json_option
@db_option
def scaling(selectors: tuple[str, ...], baseline: str | None, benchmark: str, metric: str, by: str,
            as_json: bool, db: str | None) -> None:
    """Scaling table: throughput at n nodes / (n x throughput at the smallest count).

    Each SELECTOR (run id, 'last' or tags such as network=vnic) is one group, e.g.
    `clusterbench scaling network=pod network=vnic --baseline nodes=1`.
    """
    with Store.open(db) as store:
        points = _points(store, selectors, benchmark, metric, by)
        base = _points(store, (baseline,), benchmark, metric, by) if baseline else None
    rows = sc.scaling_table(points, base)
    if as_json:
        for r in rows:
            for m in r.measurements(benchmark, metric):
                print(json.dumps(m.to_dict()))
        return
    unit = "samples/s" if metric == "samples_per_s" else metric
    for line in sc.format_table(rows, unit):
        print(line)


def _points(store: Store, selectors: tuple[str, ...], benchmark: str, metric: str, by: str) -> list[sc.Point]:
    points = []
    for sel in selectors:
        runs = [r for r in store.select(sel) if r.benchmark == benchmark and r.status == "complete"]
        if not runs:
            raise UsageError(f"selector {sel!r} matches no complete {benchmark} run")
        for run in runs:
            p = sc.point_for(sel, run, store.measurements(run.id, benchmark), metric, by)
            if p is None:
                raise UsageError(f"run {run.id} has no overall {metric}")
            points.append(p)
    return points


commands = [train, scaling]
