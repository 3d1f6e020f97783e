"""``train``: fully sharded data-parallel training (FSDP2 ``fully_shard``) of the synthetic decoder.

Each rank trains on its own synthetic batches (``batch / world_size`` sequences per step);
strategies: ``full`` shards parameters, gradients and optimizer state over all ranks;
``hybrid`` shards within groups of ``shard_size`` ranks (default: the ranks of one host) and
replicates across groups, as FSDP's HYBRID_SHARD. The model is built on the meta device and
materialised already sharded, so no rank ever holds the whole model.

Per step (rank 0): ``loss`` (mean over ranks), ``step_time_ms``, ``samples_per_s``,
``tokens_per_s``. Overall, over the steps after warm-up: the same throughput figures with
``stat=avg``, ``peak_memory_bytes`` (max over ranks), ``comm_share`` and ``mfu`` where measurable.
"""

from __future__ import annotations

import math
import os
import resource
import time
from dataclasses import dataclass
from typing import Any

from clusterbench.bench.workloads import cpu_memory_available, share_cpu
from clusterbench.bench.workloads.model import (
    ATTENTION_COUNT,
    PRESETS,
    ModelShape,
    activation_bytes,
    build_model,
    check_dimension,
    param_count,
    synthetic_batch,
    train_flops_per_token,
    training_state_bytes,
)
from clusterbench.errors import UsageError
from clusterbench.families.workloads.spec import (
    COMM_SHARE,
    LOSS,
    MFU,
    PEAK_MEMORY,
    SAMPLES_PER_S,
    STEP_TIME,
    TOKENS_PER_S,
    TRAIN,
)
from clusterbench.ranks.context import RankContext, RankOptions, resolve_device_type
from clusterbench.ranks.driver import host_ranks, planned_world_size
from clusterbench.records import Measurement

STRATEGIES = ("full", "hybrid")
DTYPES = ("auto", "bf16", "fp32")


@dataclass(frozen=True)
class TrainConfig:
    shape: ModelShape
    batch: int                  # global: sequences per step over all ranks
    steps: int = 20
    warmup: int = 2
    strategy: str = "full"
    shard_size: int | None = None  # hybrid only; default: ranks per host
    dtype: str = "auto"
    lr: float = 3e-3
    preset: str = ""
    comm_share: bool = True


def check_batch(batch: int, world_size: int) -> int:
    """Per-rank batch, or a UsageError when the global batch does not split evenly."""
    check_batch_size(batch)
    if batch % world_size:
        raise UsageError(f"--batch {batch} is not divisible by the {world_size} ranks")
    return batch // world_size


def check_batch_size(batch: int) -> None:
    """What ``check_batch`` checks that holds for any number of ranks."""
    if batch < 1:
        raise UsageError(f"--batch must be at least 1, got {batch}")
    check_dimension(batch, "--batch")


def shard_ranks(strategy: str, world_size: int, shard_size: int | None, local_world_size: int) -> int:
    """Ranks one parameter is sharded over: all of them (full) or one group (hybrid)."""
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}: expected {' or '.join(STRATEGIES)}")
    if strategy == "full":
        return world_size
    size = shard_size or max(1, min(local_world_size, world_size))
    if size < 1 or world_size % size:
        raise UsageError(f"--shard-size {size} does not divide the {world_size} ranks")
    return size


def check_model_fits(shape: ModelShape, shard: int, capacity_bytes: int, ranks_sharing: int, where: str,
                     activations: int = 0) -> None:
    """Refuse a model whose parameters, gradients and AdamW state, plus ``activations`` (a lower
    bound per rank), exceed the memory."""
    state = training_state_bytes(shape, shard) * ranks_sharing
    acts = activations * ranks_sharing
    if state + acts > capacity_bytes:
        what = f" and at least {acts / 2**30:.3g} GiB of activations" if activations else ", before activations"
        raise UsageError(
            f"model does not fit: {param_count(shape) / 1e9:.3g}B parameters need {state / 2**30:.3g} GiB "
            f"for fp32 weights, gradients and AdamW state{what} ({ranks_sharing} rank(s) sharing {where} of "
            f"{capacity_bytes / 2**30:.1f} GiB); use more ranks, a smaller model, --batch or --seq")


def train_options(*, batch: int, steps: int, warmup: int, strategy: str, shard_size: int | None, dtype: str,
                  on_cpu: bool) -> None:
    """The checks of ``clusterbench train``'s options (besides the model's shape) that need
    neither the ranks nor this host's memory (a sweep's test, a qualify step are checked so before
    any node runs them). ``on_cpu``: the ranks train on CPUs (known without the host only for
    --device cpu)."""
    if warmup >= steps:   # every step a warm-up: a "complete" run with no throughput
        raise UsageError(f"--warmup {warmup} leaves none of the {steps} --steps timed: give more steps")
    check_batch_size(batch)
    if strategy != "hybrid" and shard_size is not None:   # else ignored: full shards over all ranks
        raise UsageError(f"--shard-size is for --strategy hybrid; --strategy {strategy} shards over all ranks")
    if dtype == "bf16" and on_cpu:
        raise UsageError("--dtype bf16 needs a GPU (CPU ranks train in fp32)")


def train_config(shape: ModelShape, *, preset: str, batch: int, steps: int, warmup: int, strategy: str,
                 shard_size: int | None, dtype: str, lr: float, comm_share: bool, np: int | None,
                 options: RankOptions) -> TrainConfig:
    """Validate ``clusterbench train``'s options before any rank starts."""
    on_cpu = resolve_device_type(options.device) == "cpu"
    train_options(batch=batch, steps=steps, warmup=warmup, strategy=strategy, shard_size=shard_size, dtype=dtype,
                  on_cpu=on_cpu)
    world = planned_world_size(np, options)
    local_batch = check_batch(batch, world)
    if strategy == "hybrid" and shard_size is not None and world % shard_size:
        raise UsageError(f"--shard-size {shard_size} does not divide the {world} ranks")
    if on_cpu:
        local = host_ranks(world)
        # A huge --seq or --batch failed the run on a rank (out of memory) instead of being refused.
        check_model_fits(shape, shard_ranks(strategy, world, shard_size, local), cpu_memory_available(), local,
                         "available host RAM", activation_bytes(shape, local_batch, 4))
    return TrainConfig(shape=shape, batch=batch, steps=steps, warmup=warmup, strategy=strategy,
                       shard_size=shard_size, dtype=dtype, lr=lr,
                       preset=preset if PRESETS.get(preset) == shape else "custom", comm_share=comm_share)


def resolve_dtype(option: str, device: Any) -> str:
    import torch

    if option not in DTYPES:
        raise UsageError(f"unknown dtype {option!r}: expected {', '.join(DTYPES)}")
    if option == "bf16" and device.type != "cuda":
        raise UsageError("--dtype bf16 needs a GPU (CPU ranks train in fp32)")
    if option != "auto":
        return option
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return "bf16"
    return "fp32"


def _memory_capacity(ctx: RankContext) -> tuple[int, int, str]:
    """(bytes, ranks sharing them, what) for the fit check."""
    import torch

    if ctx.device.type == "cuda":
        return torch.cuda.get_device_properties(ctx.device).total_memory, 1, "device memory"
    import psutil

    return psutil.virtual_memory().available, ctx.env.local_world_size, "available host RAM"


def _init_local_shards(model: Any, seed_coord: int) -> None:
    """Fill each rank's parameter shards. Ranks holding the same shard (hybrid replicas) get the
    same values, so replicas start identical, as they would from a checkpoint."""
    import torch

    with torch.no_grad():
        for i, (_name, p) in enumerate(model.named_parameters()):
            local = p.to_local() if hasattr(p, "to_local") else p
            if p.dim() == 1:
                local.fill_(1.0)
                continue
            gen = torch.Generator(device=local.device)
            gen.manual_seed(7919 * i + seed_coord)
            std = 0.02 if i == 0 else 1.0 / math.sqrt(p.shape[1])
            local.normal_(0.0, std, generator=gen)


def _peak_memory(ctx: RankContext) -> tuple[int, str]:
    import torch

    if ctx.device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(ctx.device)), "device_allocated"
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024, "host_rss"


def _union_us(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, -math.inf
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def _is_comm_event(event: Any, on_device: bool) -> bool:
    n = event.name.lower()
    if on_device:  # kernels only: ProcessGroupNCCL's host-side "nccl:..." ranges just enqueue
        from torch.autograd import DeviceType

        return getattr(event, "device_type", None) == DeviceType.CUDA and ("nccl" in n or "rccl" in n)
    return n.startswith("gloo:")


def measure_comm_share(step_fn: Any, device: Any) -> float:
    """Share of one profiled step's wall time during which a collective was in flight.

    NCCL/RCCL: communication kernels on the device; gloo: the collectives on its worker threads.
    Overlapped communication counts too, so this is communication's footprint, not its cost.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    os.environ.setdefault("KINETO_LOG_LEVEL", "100")  # silence the profiler's start/stop banners
    on_device = device.type == "cuda"
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_device else [])
    with profile(activities=acts) as prof:
        if on_device:
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        step_fn()
        if on_device:
            torch.cuda.synchronize(device)
        wall_us = (time.perf_counter() - t0) * 1e6
    comm = [(e.time_range.start, e.time_range.end) for e in prof.events()
            if _is_comm_event(e, on_device)]
    return min(1.0, _union_us(comm) / wall_us) if wall_us > 0 else 0.0


def fsdp2() -> tuple[Any, Any]:
    """``fully_shard`` and ``MixedPrecisionPolicy``: public in ``torch.distributed.fsdp`` since
    torch 2.6, in ``torch.distributed._composable.fsdp`` in 2.4 and 2.5 (the minimum is 2.4)."""
    try:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard
    return fully_shard, MixedPrecisionPolicy


def main(ctx: RankContext, config: TrainConfig) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.nn import functional as F

    fully_shard, MixedPrecisionPolicy = fsdp2()

    share_cpu(ctx)
    shape, world = config.shape, ctx.world_size
    local_batch = check_batch(config.batch, world)
    shard = shard_ranks(config.strategy, world, config.shard_size, ctx.env.local_world_size)
    capacity, sharing, where = _memory_capacity(ctx)
    dtype = resolve_dtype(config.dtype, ctx.device)
    check_model_fits(shape, shard, capacity, sharing, where,
                     activation_bytes(shape, local_batch, 2 if dtype == "bf16" else 4))

    if config.strategy == "hybrid":
        mesh = init_device_mesh(ctx.device.type, (world // shard, shard),
                                mesh_dim_names=("replicate", "shard"))
        seed_coord = mesh.get_local_rank("shard")
    else:
        mesh = init_device_mesh(ctx.device.type, (world,), mesh_dim_names=("shard",))
        seed_coord = ctx.rank
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) \
        if dtype == "bf16" else MixedPrecisionPolicy()
    with torch.device("meta"):
        model = build_model(shape)
    for block in model.blocks:
        fully_shard(block, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    model.to_empty(device=ctx.device)
    _init_local_shards(model, seed_coord)
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr)

    n_params = param_count(shape)
    base = {"model": config.preset or "custom", "strategy": config.strategy, "dtype": dtype,
            "batch": config.batch, "seq": shape.seq, "layers": shape.layers, "hidden": shape.hidden,
            "ranks": world}
    ctx.meta({"train": {**base, "params": n_params, "shard_size": shard,
                                "shape": shape.to_dict(), "steps": config.steps,
                                "warmup": config.warmup}})

    def one_step(step: int) -> Any:
        x, y = synthetic_batch(shape, local_batch, step, ctx.rank, ctx.device)
        logits = model(x)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    # Said before the first step, so the note prints under the table's header live, where
    # results show prints it, instead of between the last step and the overall rows.
    peak_tflops, device_name = _mfu_peak(ctx, dtype)
    tokens = config.batch * shape.seq
    timed: list[float] = []
    plan = ctx.plan(TRAIN, "steps", [1.0] * config.steps)
    for step in range(config.steps):
        ctx.barrier()
        t0 = ctx.now()
        loss = one_step(step)
        dt = ctx.now() - t0
        mean_loss = loss.float().clone()
        dist.all_reduce(mean_loss)  # SUM: gloo has no AVG
        value = float(mean_loss.item()) / world
        if not math.isfinite(value):
            ctx.fail(f"loss is {value} at step {step}")
            return
        if step >= config.warmup:
            timed.append(dt)
        p = {**base, "step": step}
        ctx.record([
            LOSS(TRAIN, value, p),
            STEP_TIME(TRAIN, dt * 1e3, p),
            SAMPLES_PER_S(TRAIN, config.batch / dt, p),
            TOKENS_PER_S(TRAIN, tokens / dt, p),
        ])
        ctx.progress()
        plan.step()

    summary = _summary(ctx, config, base, timed, tokens, peak_tflops, device_name)
    if config.comm_share and world > 1:
        share = measure_comm_share(lambda: one_step(config.steps), ctx.device)
        t = torch.tensor([share], dtype=torch.float64, device=ctx.device)
        dist.all_reduce(t)
        summary.append(COMM_SHARE(TRAIN, float(t.item()) / world, {**base, "stat": "avg"}))
        ctx.progress()
    ctx.record(summary)


def _mfu_peak(ctx: RankContext, dtype: str) -> tuple[float | None, str | None]:
    """The device's dense peak for MFU and its name; a note when there is none."""
    from clusterbench import peaks
    from clusterbench.envinfo import inventory

    device_name = ctx.device_names[0] if ctx.device_names else None
    part = peaks.partition_of(device_name, {"": inventory.cached()}) if ctx.device.type == "cuda" else None
    if part:
        ctx.note(f"mfu: {device_name} is a partition of the GPU ({part}): no whole-GPU peak applies", TRAIN)
    peak_tflops = peaks.dense_tflops(device_name, dtype, part) if ctx.device.type == "cuda" else None
    if not peak_tflops and not part:
        ctx.note(f"mfu: no {dtype} peak for {device_name or 'this device'} in the peak table", TRAIN)
    return peak_tflops, device_name


def _summary(ctx: RankContext, config: TrainConfig, base: dict[str, Any], timed: list[float],
             tokens: int, peak_tflops: float | None, device_name: str | None) -> list[Measurement]:
    import torch
    import torch.distributed as dist

    peak, kind = _peak_memory(ctx)
    t = torch.tensor([peak], dtype=torch.float64, device=ctx.device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    out = [PEAK_MEMORY(TRAIN, float(t.item()), {**base, "stat": "max", "memory": kind})]
    total = sum(timed)
    s = {**base, "stat": "avg", "steps": len(timed)}
    samples_per_s = config.batch * len(timed) / total
    tokens_per_s = tokens * len(timed) / total
    out += [
        SAMPLES_PER_S(TRAIN, samples_per_s, s),
        TOKENS_PER_S(TRAIN, tokens_per_s, s),
        STEP_TIME(TRAIN, total / len(timed) * 1e3, s),
    ]
    if peak_tflops:
        achieved = train_flops_per_token(config.shape) * tokens_per_s / ctx.world_size / 1e12
        out.append(MFU(TRAIN, achieved / peak_tflops, {**s, "peak_tflops": peak_tflops, "device": device_name,
                                                       "attention": ATTENTION_COUNT}))
    return out
