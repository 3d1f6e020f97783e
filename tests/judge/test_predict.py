"""Tests of clusterbench.judge.predict: a step's time from curves and node rates."""

from __future__ import annotations

import pytest

from clusterbench.bench.workloads.model import PRESETS
from clusterbench.errors import UsageError
from clusterbench.judge.fabric import Curve, GemmPoint, NodeRates, StepPoint
from clusterbench.judge.predict import (
    COMPUTE,
    NETWORK,
    Fabric,
    predict,
    time_collectives,
)
from clusterbench.judge.workload import DDP_COMM, TRAIN, Workload, make_layout, matmuls

TINY = PRESETS["tiny"]
SIZES = (1 << 10, 1 << 14, 1 << 18, 1 << 22)


def curve(op: str, ranks: int, per_byte: float, floor: float = 1e-4, placement: str = "in") -> Curve:
    """A latency floor plus bytes at a rate: the shape of a measured curve."""
    return Curve(op, ranks, ranks, placement, "float", SIZES, tuple(floor + s * per_byte for s in SIZES), (7,))


def fabric(per_byte: float, ranks: int = 2) -> Fabric:
    return Fabric("env=test", [curve("all_gather", ranks, per_byte), curve("reduce_scatter", ranks, per_byte,
                                                                           placement="out"),
                               curve("all_reduce", ranks, per_byte)], link_bps=125e6, link_text="1Gbps",
                  runs=(7,))


def node(tflops: float = 0.05, bandwidth: float | None = 10.0, cpu: bool = True) -> NodeRates:
    points = [GemmPoint(m.m, m.n, m.k, "fp32", tflops, "h1 cpu") for m in matmuls(TINY, 1)]
    return NodeRates(gemm=points, bandwidth_gbs=bandwidth, bandwidth_where="h1 cpu", cpu=cpu)


def tiny(ranks: int = 2, strategy: str = "full") -> Workload:
    return Workload(TRAIN, make_layout(strategy, ranks, 1), "fp32", TINY, "tiny", batch=ranks)


def test_each_collective_is_timed_on_its_curve():
    w = tiny()
    timed, caveats = time_collectives(w.plan(), fabric(1e-8))
    assert [t.collective for t in timed] == w.plan()
    for t in timed:
        assert t.seconds == pytest.approx(t.curve.at(t.collective.bytes).seconds)
    assert caveats == []


def test_a_size_outside_the_curve_is_said():
    small = Fabric("env=small", [Curve(op, 2, 2, "in" if op != "reduce_scatter" else "out", "float",
                                       (1 << 20, 1 << 22), (1e-3, 4e-3), (3,))
                                 for op in ("all_gather", "reduce_scatter", "all_reduce")])
    _, caveats = time_collectives(tiny().plan(), small)
    assert any("below the measured sizes 1M..4M (run 3): timed with the smallest" in c for c in caveats), caveats


def test_a_missing_curve_is_a_usage_error_that_says_what_to_run():
    only_ar = Fabric("env=x", [curve("all_reduce", 2, 1e-8)])
    with pytest.raises(UsageError, match=r"no all_gather curve on 2 ranks.*clusterbench coll all_gather"):
        predict(tiny(), only_ar, node())


def test_cpu_ranks_do_not_overlap_and_the_bound_follows_the_larger_part():
    slow_net = predict(tiny(), fabric(1e-6), node())
    assert slow_net.step_s == pytest.approx(slow_net.compute_s + slow_net.comm_s)
    assert slow_net.bound == NETWORK and slow_net.comm_share > 0.5
    assert slow_net.full_overlap_s == max(slow_net.compute_s, slow_net.comm_s)
    fast_net = predict(tiny(), fabric(1e-12), node(tflops=1e-4))
    assert fast_net.bound == COMPUTE
    assert fast_net.tokens_per_s == pytest.approx(2 * TINY.seq / fast_net.step_s)
    assert fast_net.mfu is None      # no peak for a CPU


def test_compute_from_gemm_is_products_at_the_rate_plus_memory_at_stream():
    w = tiny()
    p = predict(w, fabric(1e-8), node(tflops=0.05, bandwidth=10.0))
    flops = sum(m.flops for m in w.matmuls())
    parts = dict(p.compute.parts)
    assert p.compute.source == "GEMM rate"
    assert parts["matrix products"] == pytest.approx(flops / 0.05e12)
    assert parts["memory-bound"] == pytest.approx(w.memory().total / 10e9)
    no_stream = predict(w, fabric(1e-8), node(bandwidth=None))
    assert any("no stream run" in n for n in no_stream.notes)
    assert no_stream.compute_s < p.compute_s


def test_a_one_rank_step_of_the_model_is_the_compute_when_measured():
    w = tiny()
    rates = node()
    rates.steps.append(StepPoint(tuple(sorted(TINY.to_dict().items())), 1, "fp32", 0.5, "h2", (11,)))
    p = predict(w, fabric(1e-8), rates)
    assert p.compute.source == "one-rank step"
    alone = dict(p.compute.parts)
    assert alone["one-rank step (run 11, h2)"] == 0.5
    # two ranks shard the optimizer but add FSDP's copies: the difference goes at stream bandwidth
    assert p.compute_s == pytest.approx(0.5 + alone["sharding's difference (optimizer, copies)"])
    assert p.compute.from_gemm_s is not None     # kept for comparison


def test_no_gemm_run_in_the_dtype_is_a_usage_error():
    bf16 = Workload(TRAIN, make_layout("full", 2, 1), "bf16", TINY, batch=2)
    with pytest.raises(UsageError, match="no bf16 gemm run"):
        predict(bf16, fabric(1e-8), node())


def test_gpu_timelines_lie_between_the_two_bounds():
    rates = node(cpu=False)
    for w in (tiny(), tiny(strategy="ddp"),
              Workload(DDP_COMM, make_layout("ddp", 2, 1), bucket_cap_mb=1.0, layers=4, size_bytes=4 << 20)):
        for per_byte in (1e-6, 1e-9):
            p = predict(w, fabric(per_byte), rates)
            assert p.full_overlap_s - 1e-12 <= p.step_s <= p.no_overlap_s + 1e-12, (w.kind, per_byte)
            assert p.overlap != predict(w, fabric(per_byte), node()).overlap


def test_a_link_what_if_scales_the_curves():
    f = fabric(1e-8)
    slower = f.at_link("100Mbps", 12.5e6)
    assert slower.what_if == "link" and slower.label == "--link 100Mbps"
    assert predict(tiny(), slower, node()).comm_s > predict(tiny(), f, node()).comm_s
    with pytest.raises(UsageError, match="link rate of env=x is not known"):
        Fabric("env=x", f.curves).at_link("1Gbps", 125e6)


def test_ddp_comm_has_no_products_and_an_algbw():
    w = Workload(DDP_COMM, make_layout("ddp", 2, 1), bucket_cap_mb=1.0, layers=4, size_bytes=4 << 20)
    p = predict(w, fabric(1e-8), NodeRates(bandwidth_gbs=10.0))
    assert p.compute.source == "memory bandwidth"
    assert p.algbw_gbs == pytest.approx((4 << 20) / p.step_s / 1e9)
    assert p.tokens_per_s is None
