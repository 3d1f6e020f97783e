"""``infer_tp``: toy tensor-parallel inference, as in dstack's AMD partitions study.

A stack of ``layers`` square linear layers (``hidden`` x ``hidden``, GELU between them) is split
over the ranks in one of two ways:

- ``column``: each rank holds ``hidden / n`` output rows of every weight, computes its slice of
  the outputs, and an ``all_gather`` rebuilds the full activation for the next layer;
- ``row``: each rank holds ``hidden / n`` input columns, multiplies its slice of the activation,
  and an ``all_reduce`` sums the partial outputs.

With one rank the layers run whole, without collectives: the seed's "1 GPU" baseline against
N ranks on partitions. For every batch size the latency of a full forward pass and samples/s
are reported; a correctness check against the unsplit layers runs first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterbench.bench.workloads import cpu_memory_available, share_cpu
from clusterbench.bench.workloads.model import check_dimension
from clusterbench.errors import UsageError
from clusterbench.families.workloads.spec import INFER_SAMPLES_PER_S, INFER_TP, LATENCY
from clusterbench.ranks.context import RankContext, RankOptions, resolve_device_type
from clusterbench.ranks.driver import host_ranks, planned_world_size
from clusterbench.units import parse_size

MODES = ("column", "row")
SEED_BATCHES = tuple(128 << i for i in range(9))  # 128 ... 32768, the seed's sweep
SEED_HIDDEN = 4096
# CPU ranks by default: the seed's sweep with hidden 4096 was about 40 min on 2 cores; a quarter
# of the width and its first five batch sizes take seconds there (the workload shape is the same)
CPU_BATCHES = SEED_BATCHES[:5]                    # 128 ... 2048
CPU_HIDDEN = 1024
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


@dataclass(frozen=True)
class InferTpConfig:
    hidden: int = 4096
    layers: int = 4
    batches: tuple[int, ...] = SEED_BATCHES
    mode: str = "column"
    dtype: str = "auto"
    iters: int = 10
    warmup: int = 3
    check: bool = True
    about: str = ""     # a note the rank prints (the CPU's smaller defaults)


def validate(config: InferTpConfig, world_size: int) -> None:
    check_shape(config)
    if config.hidden < 1 or config.hidden % world_size:
        raise UsageError(f"--hidden {config.hidden} is not divisible by the {world_size} ranks")


def check_shape(config: InferTpConfig) -> None:
    """What ``validate`` checks that holds for any number of ranks."""
    if config.mode not in MODES:
        raise UsageError(f"unknown mode {config.mode!r}: expected column or row")
    if config.layers < 1:
        raise UsageError(f"--layers must be at least 1, got {config.layers}")
    if not config.batches or min(config.batches) < 1:
        raise UsageError("--batch-sizes must be positive integers")
    for value, option in ((config.layers, "--layers"), (config.hidden, "--hidden"),
                          (max(config.batches), "--batch-sizes")):
        check_dimension(value, option)


def memory_need(config: InferTpConfig, world_size: int, dtype_bytes: int) -> int:
    """Bytes one rank needs: full weights while they are generated and checked, then its shards,
    plus the largest batch's activations (input, output, gathered buffer and its copy)."""
    weights = config.layers * config.hidden * config.hidden * dtype_bytes
    acts = 4 * max(config.batches) * config.hidden * dtype_bytes
    return weights + weights // world_size + acts


def check_layers_fit(need: int, capacity: int, where: str) -> None:
    if need > capacity:
        raise UsageError(f"infer-tp does not fit: each rank needs {need / 2**30:.1f} GiB, "
                         f"{where} is {capacity / 2**30:.1f} GiB; lower --hidden, --layers or the batch sizes")


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
    # Each size once (8,8 or 1K,1024): a repeated size gave rows with the same params, two lines
    # live but one in results show, and compare and baselines pooled them as if they were repeats.
    return tuple(dict.fromkeys(parse_size(t, "--batch-sizes") for t in items))


def infer_tp_options(*, hidden: int | None, layers: int, batch_sizes: str | None, mode: str, dtype: str,
                     iters: int, warmup: int, check: bool, on_cpu: bool) -> InferTpConfig:
    """The checks of ``clusterbench infer-tp``'s options that need neither the ranks nor this
    host's devices and memory (a sweep's test, a qualify step are checked so before any node runs
    them). ``on_cpu``: the ranks run on CPUs (known without the host only for --device cpu); a
    width or batch sizes not given are the CPU's smaller defaults there, the seed's elsewhere."""
    given = [o for o, v in (("--hidden", hidden), ("--batch-sizes", batch_sizes)) if v is not None]
    batches = parse_batches(batch_sizes) if batch_sizes is not None else (CPU_BATCHES if on_cpu else SEED_BATCHES)
    width = hidden if hidden is not None else (CPU_HIDDEN if on_cpu else SEED_HIDDEN)
    about = "" if not on_cpu or len(given) == 2 else (
        f"CPU ranks: hidden {width}, batch sizes {batches[0]}..{batches[-1]} by default (the seed's "
        f"{SEED_HIDDEN} and {SEED_BATCHES[0]}..{SEED_BATCHES[-1]} on GPUs, about 40 min on 2 cores); "
        "--hidden and --batch-sizes change them")
    cfg = InferTpConfig(hidden=width, layers=layers, batches=batches, mode=mode,
                        dtype=dtype, iters=iters, warmup=warmup, check=check, about=about)
    check_shape(cfg)
    if on_cpu and dtype in ("bf16", "fp16"):
        raise UsageError(f"--dtype {dtype} needs a GPU (CPU ranks run fp32)")
    return cfg


def infer_tp_config(*, hidden: int | None, layers: int, batch_sizes: str | None, mode: str, dtype: str, iters: int,
                 warmup: int, check: bool, np: int | None, options: RankOptions) -> InferTpConfig:
    """Validate ``clusterbench infer-tp``'s options before any rank starts."""
    on_cpu = resolve_device_type(options.device) != "cuda"
    cfg = infer_tp_options(hidden=hidden, layers=layers, batch_sizes=batch_sizes, mode=mode, dtype=dtype,
                           iters=iters, warmup=warmup, check=check, on_cpu=on_cpu)
    world = planned_world_size(np, options)
    validate(cfg, world)
    if on_cpu:
        check_layers_fit(memory_need(cfg, world, DTYPE_BYTES["fp32"]), cpu_memory_available() // host_ranks(world),
                         "its share of available host RAM")
    return cfg


def _dtype(option: str, device: Any) -> tuple[Any, str]:
    import torch

    if option == "auto":
        option = "bf16" if device.type == "cuda" and torch.cuda.is_bf16_supported() else "fp32"
    table = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    if option not in table:
        raise UsageError(f"unknown dtype {option!r}: expected auto, bf16, fp16 or fp32")
    return table[option], option


class TensorParallelStack:
    """The layers' shards on one rank and the forward pass that joins them."""

    def __init__(self, full: list[Any], mode: str, rank: int, world: int) -> None:
        h = full[0].shape[0]
        part = h // world
        sl = slice(rank * part, (rank + 1) * part)
        self.mode, self.world, self.sl = mode, world, sl
        # weight[out, in]: column mode keeps output rows, row mode keeps input columns.
        self.shards = [(w[sl, :] if mode == "column" else w[:, sl]).contiguous() for w in full]

    def forward(self, x: Any) -> Any:
        import torch
        import torch.distributed as dist
        from torch.nn import functional as F

        for i, w in enumerate(self.shards):
            if self.world == 1:
                y = x @ w.t()
            elif self.mode == "column":
                local = x @ w.t()                                   # [b, h/n]
                gathered = torch.empty((self.world * local.shape[0], local.shape[1]), dtype=local.dtype,
                                       device=local.device)
                dist.all_gather_into_tensor(gathered, local)            # [n*b, h/n], rank-major
                y = gathered.view(self.world, *local.shape).permute(1, 0, 2).reshape(x.shape[0], -1)
            else:
                y = x[:, self.sl] @ w.t()                           # partial sums, [b, h]
                dist.all_reduce(y)
            x = F.gelu(y) if i + 1 < len(self.shards) else y
        return x


def _reference(full: list[Any], x: Any) -> Any:
    from torch.nn import functional as F

    for i, w in enumerate(full):
        y = x @ w.t()
        x = F.gelu(y) if i + 1 < len(full) else y
    return x


def main(ctx: RankContext, config: InferTpConfig) -> None:
    import torch
    import torch.distributed as dist

    share_cpu(ctx)
    world = ctx.world_size
    validate(config, world)
    if config.about:
        ctx.note(config.about, INFER_TP)
    dtype, dtype_name = _dtype(config.dtype, ctx.device)
    need = memory_need(config, world, DTYPE_BYTES[dtype_name])
    if ctx.device.type == "cuda":
        check_layers_fit(need, torch.cuda.get_device_properties(ctx.device).total_memory, "device memory")
    else:
        import psutil

        check_layers_fit(need, psutil.virtual_memory().available // ctx.env.local_world_size,
                   "its share of available host RAM")

    h = config.hidden
    gen = torch.Generator(device=ctx.device)
    gen.manual_seed(1234)  # same full weights on every rank; each keeps its shard
    full = [torch.randn(h, h, generator=gen, device=ctx.device, dtype=torch.float32).div_(h ** 0.5).to(dtype)
            for _ in range(config.layers)]
    stack = TensorParallelStack(full, config.mode, ctx.rank, world)
    # No "ranks" param: 1 whole device vs N partitions is the comparison this benchmark is for,
    # so their rows must pair up in ``compare`` (the run records its ranks).
    base = {"mode": config.mode, "hidden": h, "layers": config.layers, "dtype": dtype_name}

    if config.check:
        probe = torch.randn(4, h, generator=gen, device=ctx.device, dtype=torch.float32).to(dtype)
        want = _reference(full, probe).float()
        got = stack.forward(probe).float()
        err = float((got - want).abs().max() / want.abs().max().clamp_min(1e-12))
        tol = 1e-4 if dtype_name == "fp32" else 5e-2
        if err > tol:
            ctx.fail(f"tensor-parallel output differs from the unsplit layers: relative error "
                             f"{err:.3g} > {tol:g}")
            return
    del full

    # every forward pass of every batch size; the work, the batch (its FLOPs are batch x 2 h^2 layers)
    passes = config.warmup + config.iters
    plan = ctx.plan(INFER_TP, "forward passes", [float(b) for b in config.batches for _ in range(passes)])
    for batch in config.batches:
        x = torch.randn(batch, h, generator=gen, device=ctx.device, dtype=torch.float32).to(dtype)
        times: list[float] = []
        for i in range(passes):
            ctx.barrier()
            t0 = ctx.now()
            stack.forward(x)
            dt = ctx.now() - t0
            if i >= config.warmup:
                times.append(dt)
            ctx.progress()
            plan.step()
        # Every rank's output is ready only when the slowest rank is done: use the max over ranks.
        t = torch.tensor(times, dtype=torch.float64, device=ctx.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        mean = float(t.mean())
        p = {**base, "batch": batch, "stat": "avg", "iters": config.iters}
        ctx.record([
            LATENCY(INFER_TP, mean * 1e3, p),
            LATENCY(INFER_TP, float(t.min()) * 1e3, {**p, "stat": "min"}),
            INFER_SAMPLES_PER_S(INFER_TP, batch / mean, p),
        ])
        del x
