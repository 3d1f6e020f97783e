"""Tests of clusterbench.bench.workloads.ddp_comm: ``ddp_comm``."""

from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from clusterbench.bench.workloads import ddp_comm as ddp_mod
from clusterbench.bench.workloads.ddp_comm import (
    BYTES_PER_PARAM,
    build_dummy,
    layer_elements,
    nodes_for_theory,
)
from clusterbench.errors import UsageError
from clusterbench.ranks.context import RankOptions


# No postponed annotations in this file: DDP compares the hook's annotations with the real types.
def _record_bucket(seen: list[int], bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    seen.append(bucket.buffer().numel() * bucket.buffer().element_size())
    done: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    done.set_result(bucket.buffer())
    return done


def test_ddp_bytes_are_the_bytes_of_its_real_buckets(tmp_path: Path) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        for layers, size, cap in ((4, 10 * 2**20 + 3, 1.0), (3, 1000, 25.0)):
            elements = layer_elements(layers, size)
            ddp = DDP(build_dummy(layers, elements, torch.device("cpu")), bucket_cap_mb=cap,
                      gradient_as_bucket_view=True)
            seen: list[int] = []
            ddp.register_comm_hook(seen, _record_bucket)
            for _ in range(2):   # the second step runs on the rebuilt buckets
                seen.clear()
                ddp(torch.ones(1)).backward()
            assert sum(seen) == elements * layers * BYTES_PER_PARAM
    finally:
        dist.destroy_process_group()


def test_ddp_many_tiny_layers_are_refused_before_any_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ddp_mod, "cpu_memory_available", lambda: 8 * 2**30)
    args = {"bucket_cap_mb": 25.0, "steps": 1, "warmup": 0, "np": 2, "options": RankOptions(device="cpu")}
    ddp_mod.ddp_comm_config(layers=16, size="64M", **args)  # type: ignore[arg-type]
    # 64 MiB of gradients fit; 2**24 parameter tensors of one element on each of 2 ranks do not.
    with pytest.raises(UsageError, match="--layers 16777216 is too many"):
        ddp_mod.ddp_comm_config(layers=2**24, size="64M", **args)  # type: ignore[arg-type]


def test_layer_split_and_nodes():
    assert layer_elements(16, 536 << 20) == (536 << 20) // 4 // 16
    with pytest.raises(UsageError):
        layer_elements(0, 1 << 20)
    with pytest.raises(UsageError, match="too small"):
        layer_elements(16, 32)
    assert nodes_for_theory(["h1", "h1", "h2", "h2"], 4) == 2
    assert nodes_for_theory(["h1", "h1"], 2) == 2
