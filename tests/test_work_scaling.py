"""Scaling tables from tagged runs: the OpenShift study's figures, and real 1- vs 2-rank runs."""

import json

import pytest
from work_helpers import cli

from clusterbench.errors import UsageError
from clusterbench.judge.scaling import Point, overall_value, scaling_table
from clusterbench.records import Measurement, Run
from clusterbench.store import Store

# OpenShift/Kubeflow study, 2xL40S nodes: samples/s by node count and network.
L40S = {"pod": {1: 2.04, 2: 2.91, 4: 3.73, 8: 5.46}, "vnic": {1: 2.04, 2: 3.98, 4: 7.16, 8: 12.68}}


def _store_train_run(store, nodes, value, tags):
    hosts = [f"node{i}" for i in range(nodes)]
    run = Run(benchmark="train", hosts=hosts, ranks=2 * nodes, tags=tags)
    p = {"model": "custom", "strategy": "hybrid", "batch": 32, "stat": "avg", "steps": 10}
    store.save_run(run, [Measurement("train", "samples_per_s", value, "samples/s", p),
                         Measurement("train", "samples_per_s", value * 0.9, "samples/s", {**p, "step": 3})])


def test_seed_scaling_table_from_tagged_runs(capsys, db):
    with Store.open(db) as store:
        _store_train_run(store, 1, 2.04, {"nodes": "1"})
        for net, by_n in L40S.items():
            for n, v in by_n.items():
                if n > 1:
                    _store_train_run(store, n, v, {"network": net})
    code, out, err = cli(capsys, "scaling", "network=pod", "network=vnic", "--baseline", "nodes=1", "--json",
                         "--db", db)
    assert code == 0, err
    eff = {(d["params"]["group"], d["params"]["nodes"]): d["value"]
           for d in map(json.loads, out.splitlines()) if d["metric"] == "scaling_efficiency"}
    assert eff[("network=pod", 8)] == pytest.approx(5.46 / (8 * 2.04))
    assert eff[("network=vnic", 8)] == pytest.approx(12.68 / (8 * 2.04))
    assert eff[("network=vnic", 2)] == pytest.approx(3.98 / (2 * 2.04))
    code, out, _ = cli(capsys, "scaling", "network=vnic", "--baseline", "nodes=1", "--db", db)
    assert code == 0 and "efficiency" in out and "0.777" in out


def test_groups_without_baseline_use_their_smallest_count_and_average_repeats():
    pts = [Point("a", 2, 2, 10.0), Point("a", 2, 2, 12.0), Point("a", 4, 4, 33.0)]
    rows = scaling_table(pts)
    assert [(r.nodes, r.runs, r.throughput) for r in rows] == [(2, 2, 11.0), (4, 1, 33.0)]
    assert rows[1].efficiency == pytest.approx(33.0 / (2 * 11.0))
    assert rows[1].speedup == pytest.approx(3.0)
    with pytest.raises(UsageError):
        scaling_table([])
    sweep = [Measurement("infer_tp", "samples_per_s", v, "samples/s", {"batch": b, "stat": "avg"})
             for b, v in ((128, 1.0), (256, 2.0))]
    with pytest.raises(UsageError, match="a sweep"):
        overall_value(sweep, "samples_per_s")
    assert overall_value(sweep[:1], "samples_per_s") == 1.0 and overall_value(sweep, "loss") is None


def test_real_runs_by_ranks_full_then_hybrid(capsys, db):
    """1 rank, then 2 ranks with hybrid sharding (shard groups of 1: two replicas), as one series."""
    for np, extra in (("1", []), ("2", ["--strategy", "hybrid", "--shard-size", "1"])):
        code, out, err = cli(capsys, "train", "--np", np, "--device", "cpu", "--steps", "2", "--warmup", "1",
                             "--batch", "4", "--no-comm-share", "--json", "--db", db, "--tag", "exp=scale", *extra)
        assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    assert {r["params"]["strategy"] for r in rows} == {"hybrid"}
    assert not [r for r in rows if r["metric"] == "comm_share"]
    with Store.open(db) as store:
        assert store.list_runs(limit=1)[0].meta["train"]["shard_size"] == 1
    code, out, err = cli(capsys, "scaling", "exp=scale", "--by", "ranks", "--json", "--db", db)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["params"]["nodes"] for r in rows if r["metric"] == "speedup") == [1, 2]
    code, _, err = cli(capsys, "scaling", "exp=nothing", "--db", db)
    assert code == 2 and "matches no run" in err
