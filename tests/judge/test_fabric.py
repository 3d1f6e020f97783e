"""Tests of clusterbench.judge.fabric: collective curves and node rates read from stored runs."""

from __future__ import annotations

import pytest

from clusterbench.bench.workloads.model import PRESETS
from clusterbench.judge.fabric import (
    ABOVE,
    BELOW,
    INSIDE,
    Curve,
    choose_curve,
    curves_of,
    link_of,
    node_rates,
)
from clusterbench.records import Measurement, Run

TINY = PRESETS["tiny"]


def coll_run(run_id: int, op: str, times_us: dict[int, float], hosts=("h1", "h2"), placement: str = "in",
             tags: dict[str, str] | None = None, status: str = "complete") -> tuple[Run, list[Measurement]]:
    run = Run(op, hosts=list(hosts), ranks=len(hosts), tags=dict(tags or {}), status=status, id=run_id)
    ms = []
    for size, t in times_us.items():
        params = {"bytes": size, "dtype": "float", "placement": placement, "ranks": len(hosts)}
        ms.append(Measurement(op, "time_us", t, "us", params))
        ms.append(Measurement(op, "time_us", t * 2, "us", {**params, "stat": "max"}))  # the spread: not a time
        ms.append(Measurement(op, "busbw", 1.0, "GB/s", params))
    return run, ms


def gemm_run(run_id: int, host: str, tflops: float, m: int = 64, dtype: str = "fp32",
             device: str = "cpu") -> tuple[Run, list[Measurement]]:
    params = {"m": m, "n": m, "k": m, "dtype": dtype, "device": device, "stat": "median"}
    return Run("gemm", hosts=[host], ranks=1, id=run_id), [Measurement("gemm", "tflops", tflops, "TFLOP/s", params)]


def test_a_curve_interpolates_in_log_size_and_log_time():
    c = Curve("all_reduce", 2, 2, "in", "float", (1000, 4000, 16000), (1.0, 1.0, 4.0), (1,))
    assert c.at(1000).seconds == 1.0 and c.at(1000).where == INSIDE
    assert c.at(2000).seconds == pytest.approx(1.0)            # the flat stretch stays flat
    assert c.at(8000).seconds == pytest.approx(2.0)            # slope 1: time grows with size
    assert c.at(500).seconds == 1.0 and c.at(500).where == BELOW
    above = c.at(32000)
    assert above.where == ABOVE and above.seconds == pytest.approx(8.0)   # the largest size's bandwidth


def test_a_slower_link_scales_what_lies_above_the_fitted_latency():
    # t = 0.5 + size / 1000: the latency stays, the wire time scales
    c = Curve("all_reduce", 2, 2, "in", "float", (1000, 4000, 16000), (1.5, 4.5, 16.5), (1,))
    assert c.latency_s == pytest.approx(0.5)
    assert c.at_link(4.0).seconds == pytest.approx((4.5, 16.5, 64.5))
    assert c.at_link(0.25).seconds == pytest.approx((0.75, 1.5, 4.5))


def test_the_fitted_latency_stays_within_zero_and_the_fastest_time():
    flat = Curve("all_reduce", 2, 2, "in", "float", (1000, 4000), (2.0, 2.0), (1,))
    assert flat.latency_s == pytest.approx(2.0)             # latency-bound: nothing scales
    assert flat.at_link(10.0).seconds == pytest.approx((2.0, 2.0))
    steep = Curve("all_reduce", 2, 2, "in", "float", (1000, 2000), (1.0, 3.0), (1,))
    assert steep.latency_s == 0.0                           # a negative intercept is no latency
    assert Curve("all_reduce", 2, 2, "in", "float", (1000,), (1.0,), (1,)).latency_s == 0.0


def test_curves_average_runs_per_size_and_skip_spreads_and_incomplete_runs():
    runs = [coll_run(1, "all_reduce", {1024: 10.0, 4096: 20.0}),
            coll_run(2, "all_reduce", {1024: 30.0, 4096: 40.0}),
            coll_run(3, "all_reduce", {1024: 1e6}, status="incomplete"),
            coll_run(4, "all_gather", {1024: 5.0}, hosts=("h1", "h2", "h3"))]
    curves = curves_of(runs)
    assert [(c.op, c.ranks, c.nodes) for c in curves] == [("all_gather", 3, 3), ("all_reduce", 2, 2)]
    ar = curves[1]
    assert ar.sizes == (1024, 4096)
    assert ar.seconds == pytest.approx((20e-6, 30e-6))
    assert ar.runs == (1, 2)


def test_the_curve_chosen_is_the_same_group_and_what_differs_is_said():
    curves = curves_of([coll_run(1, "reduce_scatter", {1024: 1.0}, placement="in"),
                        coll_run(2, "reduce_scatter", {1024: 1.0, 2048: 2.0}, placement="in")])
    choice = choose_curve(curves, "reduce_scatter", 2, 2, "out", "float")
    assert choice is not None
    assert choice.caveats == ("reduce_scatter is issued out-place, measured in-place",)
    assert choose_curve(curves, "reduce_scatter", 4, 4, "out", "float") is None
    assert choose_curve(curves, "all_gather", 2, 2, "in", "float") is None


def test_link_speed_tags_of_the_collective_runs():
    runs = [coll_run(1, "all_reduce", {1024: 1.0}, tags={"link_speed": "1Gbps"}),
            gemm_run(2, "h1", 1.0)]
    runs[1][0].tags["link_speed"] = "9Gbps"      # not a collective run: not the fabric's link
    assert link_of(runs) == {"1Gbps"}


def test_node_rates_take_the_slowest_host_of_each_shape():
    node = node_rates([gemm_run(1, "h1", 0.10), gemm_run(2, "h1", 0.12), gemm_run(3, "h1", 0.14),
                       gemm_run(4, "h2", 0.08), gemm_run(5, "h2", 0.5, m=256)])
    assert node.cpu and not node.empty
    small = node.gemm_for(60, 70, 64, "fp32")
    assert small is not None and (small.m, small.tflops, small.where) == (64, 0.08, "h2 cpu")
    assert node.gemm_for(200, 300, 256, "fp32").m == 256
    assert node.gemm_for(64, 64, 64, "bf16") is None


def test_a_one_rank_train_run_is_the_node_step_of_its_model():
    meta = {"train": {"shape": TINY.to_dict(), "batch": 2, "dtype": "fp32"}}
    runs = []
    for run_id, host, ms_ in ((1, "h1", 100.0), (2, "h2", 140.0), (3, "h2", 160.0)):
        run = Run("train", hosts=[host], ranks=1, meta=meta, id=run_id)
        runs.append((run, [Measurement("train", "step_time_ms", ms_, "ms", {"stat": "avg"}),
                           Measurement("train", "step_time_ms", 1.0, "ms", {"step": 0})]))
    two_ranks = Run("train", hosts=["h1", "h2"], ranks=2, meta=meta, id=4)
    runs.append((two_ranks, [Measurement("train", "step_time_ms", 999.0, "ms", {"stat": "avg"})]))
    node = node_rates(runs)
    step = node.step_for(TINY.to_dict(), 2, "fp32")
    assert step is not None
    assert (step.seconds, step.where, step.runs) == (pytest.approx(0.150), "h2", (1, 2, 3))
    assert node.step_for(TINY.to_dict(), 4, "fp32") is None
    assert len(node.steps) == 1      # the 2-rank run is a workload, not the node's step
