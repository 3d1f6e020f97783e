"""A collective's sweep on a fake rank context, for the tests of bench/collectives."""

from __future__ import annotations

import torch

from clusterbench.bench.collectives import rank
from clusterbench.bench.collectives.config import coll_config as build_config


class _FakeCtx:
    rank, world_size, backend = 0, 2, "gloo"
    device = torch.device("cpu")


def _sweep(op: str, per_max: int, iters: int = 20, **kw):
    config = build_config(op, minbytes="8", maxbytes="8", iters=iters, **kw)
    s = rank.Sweep(_FakeCtx(), config, op, "float", "sum")
    s.allocate(per_max)
    return s
