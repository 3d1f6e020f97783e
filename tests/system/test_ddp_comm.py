"""System tests (ddp comm): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

import json

import pytest
from work_helpers import cli, json_rows, overall, stored

DDP = ["--device", "cpu", "--size", "4K", "--layers", "2", "--steps", "1", "--warmup", "0"]


def test_ddp_comm_link_speed_on_one_rank_is_refused(capsys: pytest.CaptureFixture[str], db: str) -> None:
    # One rank has no all_reduce optimum: the run stored the tag and judged nothing, silently.
    code, out, err = cli(capsys, "ddp-comm", "--np", "1", *DDP, "--link-speed", "100Gbps", "--db", db)
    assert code == 2 and "--link-speed needs 2 or more ranks" in err and "Traceback" not in err
    assert out == ""
    code, out, err = cli(capsys, "ddp-comm", "--np", "1", *DDP, "--db", db)
    assert code == 0, err
    assert "# 2 dummy layers, 4,096 bytes of gradients, bucket cap 25 MiB, 1 rank: no gradients exchanged" in out


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
