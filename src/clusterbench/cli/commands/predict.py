"""``clusterbench predict``: a training step's time predicted from stored collective curves and
node rates, what bounds it, what-if fabrics, and checks against measured steps."""

from __future__ import annotations

import click

from clusterbench.bench.workloads.model import PRESETS, resolve_shape
from clusterbench.cli.bounds import MAX_GPUS_PER_NODE, MAX_INT32, MAX_NODES, POSITIVE, Count
from clusterbench.cli.options import db_option, json_option, model_shape_options, since_option
from clusterbench.errors import UsageError
from clusterbench.judge.predict_runs import stored_prediction
from clusterbench.judge.workload import AUTO, DTYPES, STRATEGIES, TRAIN, Workload, make_layout
from clusterbench.report.jsonl import emit
from clusterbench.report.predict_text import report_lines, report_objects
from clusterbench.store.selectors import GRAMMAR

# the options that say what to predict; --check takes all of them from the run
MODEL_OPTIONS = ("preset", "layers", "hidden", "heads", "kv_heads", "seq", "vocab", "ffn", "batch", "strategy",
                 "shard_size", "dtype", "bucket_cap_mb", "np", "nodes", "ranks_per_node")


def _given(ctx: click.Context, names: tuple[str, ...]) -> list[str]:
    return [n for n in names if ctx.get_parameter_source(n) == click.core.ParameterSource.COMMANDLINE]


def layout_of(np: int | None, nodes: int | None, ranks_per_node: int | None) -> tuple[int, int]:
    """(nodes, ranks per node) from any two of --np, --nodes, --gpus-per-node; --np alone is
    one rank per node."""
    if nodes is not None and ranks_per_node is not None:
        if np is not None and np != nodes * ranks_per_node:
            raise UsageError(f"--np {np} is not --nodes {nodes} x --gpus-per-node {ranks_per_node}")
        return nodes, ranks_per_node
    world = 2 if np is None else np
    if nodes is not None:
        if world % nodes:
            raise UsageError(f"--np {world} ranks do not split over --nodes {nodes}")
        return nodes, world // nodes
    per = ranks_per_node or 1
    if world % per:
        raise UsageError(f"--np {world} ranks do not split into nodes of --gpus-per-node {per}")
    return world // per, per


@click.command("predict", epilog=f"A selector is {GRAMMAR} (see README, 'Selecting runs').")
@click.argument("selectors", nargs=-1, required=True, metavar="SELECTOR...")
@click.option("--preset", type=click.Choice(list(PRESETS)), default="tiny", show_default=True,
              help="train's model shape; the options below override it.")
@model_shape_options
@click.option("--batch", type=Count(0, MAX_INT32), default=8, show_default=True, help="Global batch in sequences per step.")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="full", show_default=True,
              help="full / hybrid: FSDP2 as train runs it; ddp: DistributedDataParallel of the same model.")
@click.option("--shard-size", type=Count(1, MAX_NODES * MAX_GPUS_PER_NODE), default=None,
              help="Hybrid shard group size (default: ranks per node).")
@click.option("--dtype", type=click.Choice((AUTO, *DTYPES)), default=AUTO, show_default=True,
              help="auto: fp32 on CPU nodes, bf16 on GPUs (as train).")
@click.option("--bucket-cap-mb", type=POSITIVE, default=None,
              help="DDP bucket cap in MiB (default: DDP's, 25 with a 1 MiB first bucket).")
@click.option("--np", type=Count(1, MAX_NODES * MAX_GPUS_PER_NODE), default=None, help="Ranks in all (default 2).")
@click.option("--nodes", type=Count(1, MAX_NODES), default=None, help="Nodes (default: --np / --gpus-per-node).")
@click.option("--gpus-per-node", "--ranks-per-node", "ranks_per_node", type=Count(1, MAX_GPUS_PER_NODE), default=None,
              help="Ranks per node (default 1).")
@click.option("--vs", "vs", multiple=True, metavar="SELECTOR",
              help="Also predict on another stored fabric, e.g. --vs env=sriov (repeatable).")
@click.option("--link", "links", multiple=True, metavar="RATE",
              help="Also predict over links of RATE (400Gbps) with the measured efficiency (repeatable).")
@click.option("--link-speed", default=None, metavar="RATE",
              help="The measured fabric's link rate (default: its collective runs' link_speed tag).")
@click.option("--check", "check", multiple=True, metavar="RUN",
              help="Predict stored train or ddp-comm runs (their model and layout) and give the error "
                   "against their measured step (repeatable).")
@json_option("per fabric a `predicted_collective` line per collective of the step and a `prediction`; a "
             "`prediction_check` per --check run; a `note` per caveat")
@since_option
@db_option
@click.pass_context
def predict(ctx: click.Context, selectors: tuple[str, ...], preset: str, layers: int | None, hidden: int | None,
            heads: int | None, kv_heads: int | None, seq: int | None, vocab: int | None, ffn: int | None,
            batch: int, strategy: str, shard_size: int | None, dtype: str, bucket_cap_mb: float | None,
            np: int | None, nodes: int | None, ranks_per_node: int | None, vs: tuple[str, ...],
            links: tuple[str, ...], link_speed: str | None, check: tuple[str, ...], as_json: bool,
            since: str | None, db: str | None) -> int:
    """Predict a training step's time from the fabric's measured curves.

    SELECTOR picks the stored runs of one fabric: its collective curves (`coll
    all_gather,reduce_scatter,all_reduce`, or imported nccl-tests logs) and its nodes'
    compute: a one-rank `train` run of the same model and per-rank batch, else `gemm` runs
    (and `stream`). Prints the step's collectives with their times, then per fabric the
    compute and communication time, the bounds with no and with full overlap, the predicted
    step, tokens/s, MFU and which of network and compute bounds the step (docs/workloads.md).
    """
    workload = None
    if check:
        given = _given(ctx, MODEL_OPTIONS)
        if given:
            raise UsageError(f"--check takes the model and layout from the run: drop --{given[0].replace('_', '-')}")
    else:
        if strategy != "ddp" and bucket_cap_mb is not None:
            raise UsageError("--bucket-cap-mb is for --strategy ddp")
        shape = resolve_shape(preset, layers=layers, hidden=hidden, heads=heads, seq=seq, vocab=vocab, ffn=ffn,
                              kv_heads=kv_heads)
        n, per = layout_of(np, nodes, ranks_per_node)
        layout = make_layout(strategy, n, per, shard_size)
        workload = Workload(TRAIN, layout, dtype, shape, preset if PRESETS.get(preset) == shape else "custom", batch,
                            bucket_cap_mb)
    report = stored_prediction(db, selectors, since, workload=workload, check=check, vs=vs, links=links,
                               link_speed=link_speed)
    if as_json:
        for obj in report_objects(report):
            emit(obj)
        return 0
    for text in report_lines(report):
        print(text)
    return 0


commands = [predict]
