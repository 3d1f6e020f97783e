"""Tests of clusterbench.bench.workloads.infer_tp: ``infer_tp``."""

import pytest

from clusterbench.bench.workloads.infer_tp import (
    SEED_BATCHES,
    InferTpConfig,
    memory_need,
    parse_batches,
    validate,
)
from clusterbench.errors import UsageError


def test_batch_lists():
    assert parse_batches("128..32768") == SEED_BATCHES
    assert parse_batches("1,3, 5") == (1, 3, 5)
    for bad in ("", "64..32", "0..4"):
        with pytest.raises(UsageError):
            parse_batches(bad)


def test_validation_and_memory():
    with pytest.raises(UsageError, match="not divisible"):
        validate(InferTpConfig(hidden=100), 8)
    with pytest.raises(UsageError, match="--layers"):
        validate(InferTpConfig(layers=0), 1)
    validate(InferTpConfig(), 8)
    # 4 layers of 4096^2 bf16 = 128 MiB full + 16 MiB shard + 4 x 32768 x 4096 x 2 = 1 GiB activations
    assert memory_need(InferTpConfig(), 8, 2) == 128 * 2**20 + 16 * 2**20 + 2**30
