"""``clusterbench ddp-comm``: DDP gradient all_reduce over dummy layers, algbw and efficiency."""

import json

import pytest
import torch
from work_helpers import cli, json_rows, overall, stored

from clusterbench.bench.workloads.ddp_comm import (
    layer_elements,
    nodes_for_theory,
    summarize,
)
from clusterbench.errors import UsageError
from clusterbench.judge.theory import link_efficiency


def test_runs_stores_and_is_consistent(capsys, db):
    code, out, err = cli(capsys, "ddp-comm", "--np", "2", "--device", "cpu", "--layers", "4", "--size", "4M",
                         "--bucket-cap-mb", "1", "--steps", "3", "--warmup", "1", "--link-speed", "10Gbps",
                         "--json", "--db", db)
    assert code == 0, err
    rows = json_rows(out)
    grad_bytes = 4 << 20
    steps = [m for m in rows if "step" in m.params]
    assert sorted({m.params["step"] for m in steps}) == [0, 1, 2]
    for s in range(3):
        ms = {m.metric: m for m in steps if m.params["step"] == s}
        assert ms["algbw"].value * 1e9 * ms["step_time_ms"].value / 1e3 == pytest.approx(grad_bytes)
        assert ms["algbw"].params["bytes"] == grad_bytes and ms["algbw"].params["bucket_cap_mb"] == 1.0
    avg_bw = overall(rows, "algbw")
    assert avg_bw.value * 1e9 * overall(rows, "step_time_ms").value / 1e3 == pytest.approx(grad_bytes)
    # the efficiency is judged from the stored run and its link_speed tag, not stored itself
    (eff,) = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "efficiency"]
    # One host: each rank stands for a node, so n = 2 and the optimum is B*2/2 = 1.25 GB/s.
    assert eff["nodes"] == 2 and eff["optimal_algbw"] == pytest.approx(1.25)
    assert eff["efficiency"] == pytest.approx(avg_bw.value / 1.25)
    [(run, ms)] = stored(db)
    assert run.status == "complete" and run.benchmark == "ddp_comm" and len(ms) == len(rows)
    assert run.tags["link_speed"] == "10Gbps" and not [m for m in ms if m.metric == "efficiency"]
    code, out, _ = cli(capsys, "results", "show", str(run.id), "--db", db)
    assert code == 0 and "algbw(GB/s)" in out
    assert "# efficiency ddp_comm: algbw" in out and "of the optimal 1.25 GB/s for 2 nodes over 10Gbps" in out


def test_summary_records_measurements_and_efficiency_is_judged_at_read_time():
    base = {"layers": 16, "bytes": 100, "bucket_cap_mb": 25.0, "ranks": 2}
    ms = summarize([0.5, 0.25], 10**9, base, ["a", "b"], 2)
    by = {(m.metric, m.params["stat"]): m.value for m in ms}
    assert by[("step_time_ms", "avg")] == pytest.approx(375.0)
    assert by[("algbw", "max")] == pytest.approx(4.0)
    assert ("efficiency", "avg") not in by
    # The AWS study: 6.21 GB/s over 2 machines at 100 Gbps is 50% of the optimal 12.5 GB/s.
    ms = summarize([10**9 / 6.21e9], 10**9, base, ["a", "a", "b", "b"], 4)
    (eff,) = link_efficiency(ms, 4, 100e9 / 8)
    assert eff.nodes == 2 and eff.ratio == pytest.approx(6.21 / 12.5)


def test_layer_split_and_nodes():
    assert layer_elements(16, 536 << 20) == (536 << 20) // 4 // 16
    with pytest.raises(UsageError):
        layer_elements(0, 1 << 20)
    with pytest.raises(UsageError, match="too small"):
        layer_elements(16, 32)
    assert nodes_for_theory(["h1", "h1", "h2", "h2"], 4) == 2
    assert nodes_for_theory(["h1", "h1"], 2) == 2


@pytest.mark.parametrize("args,message", [
    (["--layers", "0"], "--layers must be at least 1"),
    (["--size", "-4M"], "invalid --size"),
    (["--link-speed", "fast"], "invalid rate"),
    (["--size", "1T", "--np", "2"], "does not fit"),
])
def test_bad_input(capsys, db, args, message):
    code, _, err = cli(capsys, "ddp-comm", "--device", "cpu", *args, "--db", db)
    assert code == 2 and message in err and err.count("\n") == 1
    assert stored(db) == []


@pytest.mark.gpu
def test_gpu_nccl_ddp_comm(capsys, db):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA or ROCm GPU")
    code, out, err = cli(capsys, "ddp-comm", "--np", "1", "--device", "cuda", "--size", "64M", "--steps", "2",
                         "--json", "--db", db)
    assert code == 0, err
    assert overall(json_rows(out), "algbw").value > 0
