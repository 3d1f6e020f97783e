"""``ddp_comm``: gradient synchronisation cost of DistributedDataParallel, with no real compute.

After Y. Bulatov's "Benchmarking AWS 100Gbps network": a model of ``layers`` dummy layers holding
``size_bytes`` of fp32 parameters (defaults 16 layers, 536 MiB, "an approximate common
transformer") whose forward and backward do almost nothing, so a training step is DDP's bucketed
gradient all_reduce. The achieved algbw is gradient bytes / step time (nccl-tests' algbw, S/t),
comparable with ``clusterbench theory``'s optimum B*n/(2(n-1)) for n nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterbench.bench.workloads import cpu_memory_available, share_cpu
from clusterbench.errors import UsageError
from clusterbench.families.workloads.spec import ALGBW, DDP_COMM, STEP_TIME
from clusterbench.ranks.context import RankContext, RankOptions, resolve_device_type
from clusterbench.ranks.driver import host_ranks, planned_world_size
from clusterbench.records import Measurement
from clusterbench.units import parse_size

DEFAULT_SIZE = 536 << 20
BYTES_PER_PARAM = 4  # fp32 gradients, as DDP reduces them
# DDP turns --bucket-cap-mb into int(MiB x 2**20) bytes for its C++ reducer, which takes an int64:
# a larger cap failed the run on every rank with a TypeError instead of being refused.
BUCKET_BYTES_LIMIT = 2**63
# Host memory one dummy layer costs besides its data, a lower bound: its parameter and gradient
# tensor objects and autograd's bookkeeping (about 3 KiB measured on CPU). Without it, --layers 2**31
# of one element each passed the memory check and the ranks ran out of host memory building them.
LAYER_HOST_BYTES = 1024


@dataclass(frozen=True)
class DdpCommConfig:
    layers: int = 16
    size_bytes: int = DEFAULT_SIZE
    bucket_cap_mb: float = 25.0   # DDP's default
    steps: int = 10
    warmup: int = 2


def layer_elements(layers: int, size_bytes: int) -> int:
    """fp32 elements per dummy layer; the total is rounded down to whole elements per layer."""
    if layers < 1:
        raise UsageError(f"--layers must be at least 1, got {layers}")
    n = size_bytes // BYTES_PER_PARAM // layers
    if n < 1:
        raise UsageError(f"--size {size_bytes} bytes is too small for {layers} layers of fp32 parameters")
    return n


def check_gradients_fit(size_bytes: int, capacity: int, sharing: int, where: str) -> None:
    # Parameters plus gradients (bucket views share the gradients' storage), per rank.
    need = 2 * size_bytes * sharing
    if need > capacity:
        raise UsageError(f"--size {size_bytes / 2**20:.0f} MiB does not fit: {sharing} rank(s) need "
                         f"{need / 2**30:.1f} GiB for parameters and gradients, {where} is "
                         f"{capacity / 2**30:.1f} GiB")


def check_layers_fit(layers: int, capacity: int, sharing: int) -> None:
    need = layers * LAYER_HOST_BYTES * sharing
    if need > capacity:
        raise UsageError(f"--layers {layers} is too many: {sharing} rank(s) need at least {need / 2**30:.3g} GiB "
                         f"of host RAM for the layers' tensor objects alone ({LAYER_HOST_BYTES} bytes each), "
                         f"available host RAM is {capacity / 2**30:.1f} GiB")


def check_bucket_cap(bucket_cap_mb: float) -> None:
    if not 0 < bucket_cap_mb * 2**20 < BUCKET_BYTES_LIMIT:   # NaN and inf fail too
        raise UsageError(f"--bucket-cap-mb {bucket_cap_mb:g} is out of range: DDP takes a positive bucket "
                         f"cap below {BUCKET_BYTES_LIMIT >> 20} MiB")


def ddp_comm_options(*, layers: int, size: str, bucket_cap_mb: float, steps: int, warmup: int) -> DdpCommConfig:
    """The checks of ``clusterbench ddp-comm``'s options that need neither the ranks nor this
    host's memory (a sweep's test, a qualify step are checked so before any node runs them)."""
    size_bytes = parse_size(size, "--size")
    layer_elements(layers, size_bytes)
    check_bucket_cap(bucket_cap_mb)
    return DdpCommConfig(layers=layers, size_bytes=size_bytes, bucket_cap_mb=bucket_cap_mb, steps=steps,
                         warmup=warmup)


def ddp_comm_config(*, layers: int, size: str, bucket_cap_mb: float, steps: int, warmup: int,
                 np: int | None, options: RankOptions) -> DdpCommConfig:
    """Validate ``clusterbench ddp-comm``'s options before any rank starts."""
    cfg = ddp_comm_options(layers=layers, size=size, bucket_cap_mb=bucket_cap_mb, steps=steps, warmup=warmup)
    if resolve_device_type(options.device) == "cpu":
        local = host_ranks(planned_world_size(np, options))
        check_layers_fit(layers, cpu_memory_available(), local)
        check_gradients_fit(layer_elements(layers, cfg.size_bytes) * layers * BYTES_PER_PARAM,
                            cpu_memory_available(), local, "available host RAM")
    return cfg


def check_link_speed_ranks(world_size: int) -> None:
    """``--link-speed`` asks for the efficiency against the link's all_reduce optimum, which n = 1
    does not have: a one-rank run stored the tag and judged nothing, without a word."""
    if world_size < 2:
        raise UsageError("--link-speed needs 2 or more ranks: one rank exchanges no gradients over any link")


def nodes_for_theory(hosts: list[str], world_size: int) -> int:
    """The n of B*n/(2(n-1)): distinct hosts; on one host, each rank stands for a node
    (as in an emulated cluster where ranks talk through a shaped link)."""
    distinct = len(set(hosts))
    return distinct if distinct > 1 else world_size


def build_dummy(layers: int, elements: int, device: Any) -> Any:
    import torch
    from torch import nn

    class Dummy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ParameterList(
                nn.Parameter(torch.zeros(elements, device=device)) for _ in range(layers))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            # One element per layer: every layer gets a full-size gradient (zeros but one) that DDP
            # must all_reduce, at the cost of a memset instead of a matmul.
            for p in self.layers:
                x = x + p[:1]
            return x.sum()

    return Dummy()


def main(ctx: RankContext, config: DdpCommConfig) -> None:
    import psutil
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    share_cpu(ctx)
    elements = layer_elements(config.layers, config.size_bytes)
    grad_bytes = elements * config.layers * BYTES_PER_PARAM
    # Every rank, GPU or not, builds the layers' tensor objects in host memory.
    check_layers_fit(config.layers, psutil.virtual_memory().available, ctx.env.local_world_size)
    if ctx.device.type == "cuda":
        capacity, sharing, where = torch.cuda.get_device_properties(ctx.device).total_memory, 1, \
            "device memory"
    else:
        capacity, sharing, where = psutil.virtual_memory().available, ctx.env.local_world_size, \
            "available host RAM"
    check_gradients_fit(grad_bytes, capacity, sharing, where)

    model = build_dummy(config.layers, elements, ctx.device)
    ddp = DDP(model, device_ids=[ctx.device.index] if ctx.device.type == "cuda" else None,
              bucket_cap_mb=config.bucket_cap_mb, gradient_as_bucket_view=True)
    x = torch.ones(1, device=ctx.device)
    base = {"layers": config.layers, "bytes": grad_bytes, "bucket_cap_mb": config.bucket_cap_mb,
            "ranks": ctx.world_size}
    timed: list[float] = []
    plan = ctx.plan(DDP_COMM, "steps", [1.0] * (config.warmup + config.steps))
    for step in range(config.warmup + config.steps):
        ctx.barrier()
        t0 = ctx.now()
        ddp(x).backward()
        dt = ctx.now() - t0
        ddp.zero_grad(set_to_none=False)
        ctx.progress()
        plan.step()
        if step < config.warmup:
            continue
        timed.append(dt)
        p = {**base, "step": step - config.warmup}
        ctx.record([
            STEP_TIME(DDP_COMM, dt * 1e3, p),
            ALGBW(DDP_COMM, grad_bytes / dt / 1e9, p),
        ])
    ctx.record(summarize(timed, grad_bytes, base, ctx.hosts, ctx.world_size))


def summarize(timed: list[float], grad_bytes: int, base: dict[str, Any], hosts: list[str],
              world_size: int) -> list[Measurement]:
    """Average and best step and their algbw. The overall rows carry ``nodes``, the n that the
    all_reduce theory uses, so efficiency against a link speed can be judged at read time."""
    avg = sum(timed) / len(timed)
    best = min(timed)
    avg_bw = grad_bytes / avg / 1e9
    base = {**base, "nodes": nodes_for_theory(hosts, world_size)}
    return [
        STEP_TIME(DDP_COMM, avg * 1e3, {**base, "stat": "avg"}),
        STEP_TIME(DDP_COMM, best * 1e3, {**base, "stat": "min"}),
        ALGBW(DDP_COMM, avg_bw, {**base, "stat": "avg"}),
        ALGBW(DDP_COMM, grad_bytes / best / 1e9, {**base, "stat": "max"}),
    ]
