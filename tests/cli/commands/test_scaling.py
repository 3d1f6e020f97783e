"""Tests of clusterbench.cli.commands.scaling: ``clusterbench scaling``."""

import json

import pytest
from json_schema import check_lines
from judge_helpers import json_lines, run_cli
from nccl_read_paths import DATA
from work_helpers import cli

from clusterbench.records import Measurement, Run
from clusterbench.store import Store


def _train_run(store: Store, hosts: list[str], value: float, tags: dict[str, str], ranks: int = 8) -> int:
    run = Run(benchmark="train", hosts=hosts, ranks=ranks, tags=tags)
    return store.save_run(run, [Measurement("train", "samples_per_s", value, "samples/s", {"stat": "avg"})])


# OpenShift/Kubeflow study, 2xL40S nodes: samples/s by node count and network.
L40S = {"pod": {1: 2.04, 2: 2.91, 4: 3.73, 8: 5.46}, "vnic": {1: 2.04, 2: 3.98, 4: 7.16, 8: 12.68}}


def _store_train_run(store, nodes, value, tags):
    hosts = [f"node{i}" for i in range(nodes)]
    run = Run(benchmark="train", hosts=hosts, ranks=2 * nodes, tags=tags)
    p = {"model": "custom", "strategy": "hybrid", "batch": 32, "stat": "avg", "steps": 10}
    store.save_run(run, [Measurement("train", "samples_per_s", value, "samples/s", p),
                         Measurement("train", "samples_per_s", value * 0.9, "samples/s", {**p, "step": 3})])


def test_scaling_lines(tmp_path):
    from clusterbench.records import Measurement, Run
    from clusterbench.store import Store

    db = str(tmp_path / "s.db")
    with Store.open(db) as s:
        for nodes, value in ((1, 2.0), (2, 3.5), (4, 6.0)):
            s.save_run(Run(benchmark="train", hosts=[f"n{i}" for i in range(nodes)], ranks=nodes,
                           tags={"net": "x"}),
                       [Measurement("train", "samples_per_s", value, "samples/s", {"stat": "avg"})])
    code, out, err = run_cli("scaling", "net=x", "--json", "--db", db)
    assert code == 0, err
    objs = check_lines(out)
    assert {o["kind"] for o in objs} == {"measurement"} and {o["run"] for o in objs} == {None}


def test_scaling_of_imported_logs_tagged_with_their_node_count(tmp_path):
    """Imported runs are stored as benchmark ``import``: ``--benchmark all_reduce`` found "no
    complete all_reduce run" in a database of them. The 4-node log names no host: its ``nodes``
    tag gives its count (it was counted as 1 node and averaged into the baseline)."""
    db = tmp_path / "n.db"
    for name, nodes in (("seed-mi300x-rccl-all_reduce-8gpu.txt", 1), ("a3mega-h100-2node-all_reduce.txt", 2),
                        ("seed-tensorwave-mi355x-4node-all_reduce.txt", 4)):
        code, _, err = run_cli("import", DATA / name, "--tag", f"nodes={nodes}", "--tag", "g=x", "--db", db)
        assert code == 0, err
    code, text, err = run_cli("scaling", "g=x", "--benchmark", "all_reduce", "--metric", "avg_busbw",
                              "--json", "--db", db)
    assert code == 0, err
    speedups = {m["params"]["nodes"]: m for m in json_lines(text) if m["metric"] == "speedup"}
    assert sorted(speedups) == [1, 2, 4]
    assert all(m["params"]["runs"] == 1 for m in speedups.values())


def test_scaling_run_without_hosts_or_nodes_tag_is_refused(tmp_path):
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        _train_run(store, ["n0"], 4.0, {"g": "a"})
        rid = _train_run(store, [], 9.0, {"g": "a"}, ranks=0)
    code, _, err = run_cli("scaling", "g=a", "--db", db)
    assert code == 2
    assert f"run {rid} records no hosts and has no nodes tag" in err
    code, _, err = run_cli("scaling", "g=a", "--by", "ranks", "--db", db)
    assert code == 2
    assert f"run {rid} records no rank count" in err


def test_scaling_json_past_the_largest_float_is_valid(tmp_path):
    """A speedup of 2e+631 was a `measurement` with value null, which the schema refuses."""
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        _train_run(store, ["n0"], 5e-324, {"g": "huge"})
        _train_run(store, ["n0", "n1"], 1e308, {"g": "huge"})
    code, text, err = run_cli("scaling", "g=huge", "--json", "--db", db)
    assert code == 0, err
    lines = json_lines(text)   # every line checked against the published schema
    assert [(x["kind"], x.get("metric")) for x in lines] == [
        ("measurement", "speedup"), ("measurement", "scaling_efficiency"), ("note", None), ("note", None)]
    assert "speedup of g=huge at 2 nodes is 2e+631" in lines[2]["text"]


def test_scaling_selector_twice_counts_each_run_once(tmp_path):
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        _train_run(store, ["n0"], 3.0, {"g": "d"})
        _train_run(store, ["n0", "n1"], 6.0, {"g": "d"})
    code, text, _ = run_cli("scaling", "g=d", "g=d", "--json", "--db", db)
    assert code == 0
    assert [m["params"]["runs"] for m in json_lines(text)] == [1, 1, 1, 1]


def test_scaling_empty_baseline_selector_is_refused(tmp_path):
    """``--baseline ''`` was taken as no baseline at all, silently."""
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        _train_run(store, ["n0"], 3.0, {"g": "d"})
    code, _, err = run_cli("scaling", "g=d", "--baseline", "", "--db", db)
    assert code == 2
    assert "empty selector" in err


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
