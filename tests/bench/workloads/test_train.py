"""Tests of clusterbench.bench.workloads.train: ``train``."""

import pytest

from clusterbench.bench.workloads.model import PRESETS
from clusterbench.bench.workloads.train import _union_us, shard_ranks
from clusterbench.bench.workloads.train import check_model_fits as check_fits
from clusterbench.errors import UsageError


def test_fsdp2_import_paths(monkeypatch):
    """torch >= 2.6: torch.distributed.fsdp; 2.4-2.5: torch.distributed._composable.fsdp."""
    import sys
    import types

    from clusterbench.bench.workloads import train

    shard, policy = train.fsdp2()
    assert callable(shard) and policy is not None
    old = types.ModuleType("torch.distributed.fsdp")  # 2.5: no fully_shard here
    composable = types.ModuleType("torch.distributed._composable.fsdp")
    composable.fully_shard, composable.MixedPrecisionPolicy = "fs", "mp"
    monkeypatch.setitem(sys.modules, "torch.distributed.fsdp", old)
    monkeypatch.setitem(sys.modules, "torch.distributed._composable.fsdp", composable)
    assert train.fsdp2() == ("fs", "mp")


def test_fit_and_shard_arithmetic():
    assert shard_ranks("full", 16, None, 8) == 16
    assert shard_ranks("hybrid", 16, None, 8) == 8
    with pytest.raises(UsageError):
        shard_ranks("hybrid", 16, 3, 8)
    # 8B on 8 GPUs of 80 GB: 16 B x 8.03e9 / 8 = 16 GB per rank fits; on one GPU it does not.
    check_fits(PRESETS["8b"], 8, 80 * 10**9, 1, "device memory")
    with pytest.raises(UsageError, match="does not fit"):
        check_fits(PRESETS["8b"], 1, 80 * 10**9, 1, "device memory")


def test_comm_interval_union():
    assert _union_us([(0, 10), (5, 15), (20, 25)]) == 20
    assert _union_us([(0, 10), (2, 3)]) == 10
    assert _union_us([]) == 0
