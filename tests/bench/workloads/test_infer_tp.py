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


def test_cpu_ranks_get_a_sweep_that_takes_seconds_unless_one_is_asked():
    """The seed's sweep (hidden 4096, batches 128..32768) ran over 9.5 min on 2 cores (about 40 estimated)."""
    from clusterbench.bench.workloads.infer_tp import CPU_BATCHES, SEED_BATCHES, infer_tp_options

    def opts(hidden=None, batch_sizes=None, on_cpu=True):
        return infer_tp_options(hidden=hidden, layers=4, batch_sizes=batch_sizes, mode="column", dtype="auto",
                                iters=10, warmup=3, check=True, on_cpu=on_cpu)

    cpu = opts()
    assert (cpu.hidden, cpu.batches) == (1024, CPU_BATCHES) and CPU_BATCHES == (128, 256, 512, 1024, 2048)
    assert cpu.about.startswith("CPU ranks: hidden 1024, batch sizes 128..2048 by default")
    gpu = opts(on_cpu=False)
    assert (gpu.hidden, gpu.batches, gpu.about) == (4096, SEED_BATCHES, "")
    asked = opts(hidden=4096, batch_sizes="128..32768")
    assert (asked.hidden, asked.batches, asked.about) == (4096, SEED_BATCHES, "")
    assert opts(hidden=512).hidden == 512 and opts(hidden=512).batches == CPU_BATCHES
