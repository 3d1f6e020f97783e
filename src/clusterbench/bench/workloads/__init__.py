"""End-to-end workloads: FSDP training, DDP gradient sync, tensor-parallel inference."""

from __future__ import annotations

from clusterbench.envinfo.software import usable_cores
from clusterbench.ranks.context import RankContext


def cpu_memory_available() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


def share_cpu(ctx: RankContext) -> None:
    """On CPU ranks, split the host's cores between the local ranks instead of letting each
    rank start one thread per core (oversubscription makes every collective wait)."""
    if ctx.device.type != "cpu":
        return
    import torch

    cores = usable_cores()
    torch.set_num_threads(max(1, cores // max(1, ctx.env.local_world_size)))
