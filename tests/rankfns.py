"""Per-rank functions used by driver tests (imported by the ranks by module path)."""

from __future__ import annotations

import os
import time

import torch
import torch.distributed as dist

from clusterbench.records import Measurement


def sum_ranks(ctx, config):
    t = torch.tensor([float(ctx.rank + 1)])
    for step in range(config.get("steps", 3)):
        dist.all_reduce(t)
        ctx.progress()
        ctx.record([Measurement("selftest", "value", float(t.item()), "", {"step": step})])
        t = torch.tensor([float(ctx.rank + 1)])


def die_after(ctx, config):
    for step in range(10):
        if ctx.rank == config["rank"] and step == config["step"]:
            if config.get("how") == "hang":
                time.sleep(3600)
            os._exit(9)
        t = torch.ones(4)
        dist.all_reduce(t)
        ctx.progress()
        ctx.record([Measurement("selftest", "value", float(t[0]), "", {"step": step})])


def raise_on(ctx, config):
    if ctx.rank == config["rank"]:
        raise ValueError("boom from a rank")
    dist.barrier()
