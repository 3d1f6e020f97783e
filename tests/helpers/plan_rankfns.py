"""Per-rank functions that record the collectives one real training step issues, for
tests/system/test_predict_plan.py: the step runs under the torch profiler after two warm-up steps
(FSDP's lazy init and DDP's bucket rebuild happen there), and rank 0 stores what it saw in the
run's meta as ``issued``: a list of [op, elements].

What the profiler shows: c10d's ``_allgather_base_`` (output, input) and ``_reduce_scatter_base_``
(output, input) with their tensors' sizes; ``allreduce_`` without them (a list of tensors), so an
all_reduce's size comes from gloo's own ``gloo:all_reduce`` range, which gloo also opens for each
reduce_scatter it runs as an all_reduce of the input: those are taken out by size."""

from __future__ import annotations

import math

import torch

from clusterbench.bench.workloads.ddp_comm import build_ddp
from clusterbench.bench.workloads.model import build_model, synthetic_batch
from clusterbench.bench.workloads.train import build_trainer


def _profiled(step) -> list[list[object]]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step()
    issued: list[list[object]] = []
    all_reduces, gloo_reduces = 0, []
    for e in prof.events():
        if e.name == "c10d::_allgather_base_":
            issued.append(["all_gather", math.prod(e.input_shapes[0])])
        elif e.name == "c10d::_reduce_scatter_base_":
            issued.append(["reduce_scatter", math.prod(e.input_shapes[1])])
        elif e.name == "c10d::allreduce_":
            all_reduces += 1
        elif e.name == "gloo:all_reduce":
            gloo_reduces.append(math.prod(e.input_shapes[0]))
    for op, n in issued:
        if op == "reduce_scatter" and n in gloo_reduces:
            gloo_reduces.remove(n)
    assert len(gloo_reduces) == all_reduces, (gloo_reduces, all_reduces)
    return issued + [["all_reduce", n] for n in gloo_reduces]


def fsdp_step(ctx, config) -> None:
    trainer = build_trainer(ctx, config)
    for step in range(2):
        trainer.step(step)
    ctx.barrier()
    issued = _profiled(lambda: trainer.step(2))
    ctx.meta({"issued": issued})


def ddp_comm_step(ctx, config) -> None:
    ddp, _ = build_ddp(ctx, config)
    x = torch.ones(1)
    for _ in range(2):
        ddp(x).backward()
        ddp.zero_grad(set_to_none=False)
    ctx.barrier()
    issued = _profiled(lambda: ddp(x).backward())
    ctx.meta({"issued": issued})


def ddp_model_step(ctx, config) -> None:
    """train's decoder under DistributedDataParallel (config: shape, batch per rank, bucket cap)."""
    from torch.nn import functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    shape = config["shape"]
    kwargs = {} if config["bucket_cap_mb"] is None else {"bucket_cap_mb": config["bucket_cap_mb"]}
    model = DDP(build_model(shape), **kwargs)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(i: int) -> None:
        x, y = synthetic_batch(shape, config["local_batch"], i, ctx.rank, ctx.device)
        F.cross_entropy(model(x).float().flatten(0, 1), y.flatten()).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for i in range(2):
        step(i)
    ctx.barrier()
    issued = _profiled(lambda: step(2))
    ctx.meta({"issued": issued})
