"""Tests of clusterbench.judge.workload: the communication plan and compute of one step, worked
out by hand for the tiny preset (tests/system/test_predict_plan.py checks the same plans against
what a real gloo step issues)."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from clusterbench.bench.workloads.ddp_comm import layer_elements
from clusterbench.bench.workloads.model import PRESETS, param_count, parameter_shapes, resolve_shape
from clusterbench.errors import UsageError
from clusterbench.judge.workload import (
    DDP_COMM,
    DDP_FIRST_BUCKET,
    TRAIN,
    Workload,
    bucket_caps,
    ddp_buckets,
    fsdp_units,
    local_params,
    make_layout,
    matmuls,
    model_flops,
    padded_numel,
    unit_numel,
)

TINY = PRESETS["tiny"]


def _numel(unit: str, shard: int = 1) -> int:
    return unit_numel(dict(fsdp_units(TINY))[unit], shard)


def test_units_are_the_root_then_each_block_and_hold_every_parameter():
    units = fsdp_units(TINY)
    assert [u for u, _ in units] == ["root", *(f"blocks.{i}" for i in range(TINY.layers))]
    assert sum(_numel(u) for u, _ in units) == param_count(TINY)
    # the root is what no block holds: embedding, final norm, head
    assert _numel("root") == 2 * TINY.vocab * TINY.hidden + TINY.hidden


def test_padding_rounds_dim_0_up_to_the_shard_group():
    assert padded_numel((64,), 2) == 64
    assert padded_numel((64,), 3) == 66
    assert padded_numel((50, 64), 3) == 51 * 64
    assert padded_numel((50, 64), 1) == 50 * 64


def test_fsdp_full_shard_gathers_each_unit_forward_and_each_block_again_backward():
    w = Workload(TRAIN, make_layout("full", 1, 2), "fp32", TINY, batch=4)
    plan = w.plan()
    gathers = [c for c in plan if c.op == "all_gather"]
    scatters = [c for c in plan if c.op == "reduce_scatter"]
    assert [(c.phase, c.unit) for c in gathers] == [
        ("forward", "root"), ("forward", "blocks.0"), ("forward", "blocks.1"),
        ("backward", "blocks.1"), ("backward", "blocks.0")]
    assert [c.unit for c in scatters] == ["blocks.1", "blocks.0", "root"]
    assert all(c.bytes == _numel(c.unit, 2) * 4 for c in plan)
    assert {(c.placement, c.op) for c in plan} == {("in", "all_gather"), ("out", "reduce_scatter")}
    assert all(c.ranks == 2 and c.nodes == 1 for c in plan)


def test_bf16_gathers_half_the_bytes_and_still_reduces_fp32():
    w = Workload(TRAIN, make_layout("full", 2, 1), "bf16", TINY, batch=4)
    for c in w.plan():
        assert c.bytes == _numel(c.unit, 2) * (2 if c.op == "all_gather" else 4)
        assert c.dtype == ("bfloat16" if c.op == "all_gather" else "float")
        assert c.nodes == 2


def test_hybrid_reduces_in_the_node_and_all_reduces_the_shard_across_nodes():
    layout = make_layout("hybrid", 2, 2)
    assert (layout.shard_size, layout.replicas, layout.shard_nodes, layout.replica_nodes) == (2, 2, 1, 2)
    plan = Workload(TRAIN, layout, "fp32", TINY, batch=8).plan()
    ops = Counter(c.op for c in plan)
    assert ops == {"all_gather": 5, "reduce_scatter": 3, "all_reduce": 3}
    for c in plan:
        if c.op == "all_reduce":
            assert (c.ranks, c.nodes, c.bytes) == (2, 2, _numel(c.unit, 2) // 2 * 4)
        else:
            assert (c.ranks, c.nodes) == (2, 1)


def test_a_shard_group_of_one_only_all_reduces():
    plan = Workload(TRAIN, make_layout("hybrid", 2, 1, 1), "fp32", TINY, batch=4).plan()
    assert {c.op for c in plan} == {"all_reduce"}
    assert sum(c.bytes for c in plan) == param_count(TINY) * 4


def test_ddp_buckets_close_once_they_reach_the_cap():
    assert ddp_buckets([3, 3, 3], 5) == [6, 3]
    assert ddp_buckets([3, 3, 3], 5, first_cap=2) == [3, 6]
    assert ddp_buckets([5], 5) == [5]
    assert bucket_caps(None) == (25 * 2**20, DDP_FIRST_BUCKET)
    assert bucket_caps(2.0) == (2 * 2**20, 2 * 2**20)


def test_ddp_plan_moves_every_gradient_once_in_buckets_of_the_cap():
    shape = resolve_shape("tiny", hidden=256, layers=4)
    cap = 0.5
    plan = Workload(TRAIN, make_layout("ddp", 2, 1), "fp32", shape, batch=2, bucket_cap_mb=cap).plan()
    assert sum(c.bytes for c in plan) == param_count(shape) * 4
    assert len(plan) > 1
    assert all(c.bytes >= cap * 2**20 for c in plan[:-1])
    assert all((c.op, c.ranks, c.nodes, c.placement) == ("all_reduce", 2, 2, "in") for c in plan)
    # one rank exchanges nothing
    assert Workload(TRAIN, make_layout("ddp", 1, 1), "fp32", shape, batch=2).plan() == []


def test_ddp_comm_plan_is_equal_layers_in_buckets():
    layout = make_layout("ddp", 3, 1)
    w = Workload(DDP_COMM, layout, bucket_cap_mb=8.0, layers=8, size_bytes=32 << 20)
    plan = w.plan()
    per = layer_elements(8, 32 << 20) * 4
    assert [c.bytes for c in plan] == [2 * per] * 4     # two 4 MiB layers reach the 8 MiB cap
    assert all(c.ranks == 3 for c in plan)


def test_matmuls_count_forward_and_both_backward_products():
    local = 2
    mms = matmuls(TINY, local)
    t = local * TINY.seq
    linear = [m for m in mms if not m.what.startswith("attention")]
    # each linear weight: 2 t n_in n_out forward, twice that backward
    weights = sum(math.prod(d) for name, d in parameter_shapes(TINY)
                  if len(d) == 2 and not name.startswith("embed"))
    assert sum(m.flops for m in linear) == pytest.approx(6 * t * weights)
    assert model_flops(TINY, 10) > 0


def test_fsdp_shards_the_optimizer_and_ddp_does_not():
    full = make_layout("full", 1, 2)
    assert local_params(TINY, full) == sum(_numel(u, 2) for u, _ in fsdp_units(TINY)) // 2
    assert local_params(TINY, make_layout("ddp", 1, 2)) == param_count(TINY)
    w = Workload(TRAIN, full, "fp32", TINY, batch=4)
    parts = dict(w.memory().parts)
    assert set(parts) == {"elementwise", "optimizer", "fsdp copies"}
    assert parts["optimizer"] == 20 * 4 * local_params(TINY, full)


@pytest.mark.parametrize(("args", "message"), [
    (("ddp", 1, 2, 2), "--shard-size is for --strategy hybrid"),
    (("full", 1, 2, 2), "--shard-size is for --strategy hybrid"),
    (("mirror", 1, 2, None), "unknown strategy"),
    (("full", 0, 2, None), "at least 1 node"),
])
def test_bad_layouts_are_usage_errors(args, message):
    with pytest.raises(UsageError, match=message):
        make_layout(*args)


def test_a_batch_the_ranks_cannot_split_is_a_usage_error():
    with pytest.raises(UsageError, match="--batch 3 is not divisible by the 2 ranks"):
        Workload(TRAIN, make_layout("full", 1, 2), "fp32", TINY, batch=3)
    with pytest.raises(UsageError, match="unknown dtype"):
        Workload(TRAIN, make_layout("full", 1, 2), "fp8", TINY, batch=2)
