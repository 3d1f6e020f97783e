"""The analysis half of ``sweep`` on constructed results: who becomes a suspect (a failed run, a
slow node, a node behind a slow switch), how topology.conf is read, and what the table and the
stored run say for each case."""

from __future__ import annotations

import pytest

from clusterbench.errors import UsageError
from clusterbench.sweep import plan
from clusterbench.sweep.analyze import SubsetResult, analyze, parse_topology
from clusterbench.sweep.report import table_lines, to_run

UNIT = "GB/s"


def _single(values: dict[str, float | None], unit: str = UNIT) -> list[SubsetResult]:
    return [SubsetResult((h,), "single", v, unit) if v is not None
            else SubsetResult((h,), "single", None, error="exit code 1") for h, v in values.items()]


def _pair(hosts: tuple[str, ...], v: float | None, error: str = "exit code 1") -> SubsetResult:
    return SubsetResult(hosts, "pair", v, UNIT) if v is not None else SubsetResult(hosts, "pair", None, error=error)


def _suspects(a) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {s.host: s.reason for s in a.suspects}


def _stored(results: list[SubsetResult], a) -> dict:  # type: ignore[no-untyped-def]
    run, ms = to_run(results, a, ["coll"], "busbw", ["clusterbench", "sweep"], "2024-01-01T00:00:00Z", {}, None)
    flagged = {m.params["host"] for m in ms if m.metric == "node_score" and m.params["suspect"]}
    return {"suspects": {s["host"] for s in run.meta["suspects"]}, "flagged": flagged, "status": run.status}


# --- a failed run: the node that fails, not every node that ran beside it ---------------------

def test_a_dead_node_is_the_only_suspect_of_the_runs_it_failed():
    """d fails its own run and every pair it is in, with an error that names nobody (a crash, an
    exit code): a, b and c, which worked everywhere else, were drained beside it."""
    results = _single({"a": 10.0, "b": 10.1, "c": 9.9, "d": None})
    results += [_pair(p, None if "d" in p else 5.0) for p in plan.pairs(["a", "b", "c", "d"])]
    a = analyze(results)
    assert _suspects(a) == {"d": "single run failed; pair run failed"}
    assert _stored(results, a)["suspects"] == {"d"}
    # a node that failed everything has no score: it is told apart from a slow one by its reason
    assert "d" not in a.single_scores and "d" not in a.pair_scores


def test_a_dead_node_in_a_ring_without_single_runs():
    hosts = ["a", "b", "c", "d", "e"]
    results = [_pair(p, None if "c" in p else 5.0) for p in plan.pairs(hosts, "ring")]
    assert _suspects(analyze(results)) == {"c": "pair run failed"}


def test_two_nodes_one_dead():
    results = _single({"a": 10.0, "b": None}) + [_pair(("a", "b"), None)]
    assert set(_suspects(analyze(results))) == {"b"}


def test_a_failure_with_no_one_to_blame_more_names_every_host_of_it():
    """One failed pair between nodes that work everywhere else: the link, or either end."""
    hosts = ["a", "b", "c", "d"]
    results = [_pair(p, None if p == ("c", "d") else 5.0) for p in plan.pairs(hosts)]
    assert _suspects(analyze(results)) == {"c": "pair run failed", "d": "pair run failed"}
    # only two nodes, only one run: nothing tells them apart
    assert set(_suspects(analyze([_pair(("a", "b"), None)]))) == {"a", "b"}


def test_a_failure_that_names_its_host_is_laid_on_it_alone():
    hosts = ["a", "b", "c", "d"]
    results = [_pair(p, None if p == ("c", "d") else 5.0,
                     error="rendezvous at c:29400 timed out after 60 s: d never joined") for p in plan.pairs(hosts)]
    assert set(_suspects(analyze(results))) == {"d"}


# --- a bad switch: its nodes, not the neighbour of one bad node --------------------------------

def _six_behind_three_switches(slow) -> tuple[list[SubsetResult], dict[str, str]]:  # type: ignore[no-untyped-def]
    hosts = [f"n{i}" for i in range(1, 7)]
    topo = {h: f"s{i // 2 + 1}" for i, h in enumerate(hosts)}
    return [_pair(p, 0.5 if slow(p, topo) else 1.0 + 0.001 * i) for i, p in enumerate(plan.pairs(hosts))], topo


def test_one_slow_node_does_not_name_its_switch_neighbour():
    results, topo = _six_behind_three_switches(lambda p, t: "n1" in p)
    a = analyze(results, switches=topo)
    assert _suspects(a) == {"n1": "pair score is an outlier"}


def test_a_slow_switch_names_every_node_behind_it():
    # the uplink of s3 is slow: every pair that leaves s3 is slow, n5+n6 (inside) is not
    results, topo = _six_behind_three_switches(lambda p, t: (t[p[0]] == "s3") != (t[p[1]] == "s3"))
    a = analyze(results, switches=topo)
    assert set(_suspects(a)) == {"n5", "n6"}
    assert all("behind switch s3" in r for r in _suspects(a).values())


def test_a_slow_switch_with_lower_is_better():
    hosts = [f"n{i}" for i in range(1, 10)]
    topo = {h: f"s{i // 3 + 1}" for i, h in enumerate(hosts)}
    results = [_pair(p, 50.0 if "s1" in (topo[p[0]], topo[p[1]]) else 10.0 + 0.01 * i)
               for i, p in enumerate(plan.pairs(hosts))]
    a = analyze(results, switches=topo, higher_is_better=False)
    assert {h for h, r in _suspects(a).items() if "switch s1" in r} == {"n1", "n2", "n3"}
    assert analyze(results, switches=topo).suspects == []   # fast is never a fault


# --- scores: direction, duplicates, values --------------------------------------------------------

def test_a_pair_measured_twice_counts_once_with_its_best_value():
    """(a, b) twice, the second time slow: it was counted twice, dragging a and b below the rest."""
    hosts = ["a", "b", "c", "d"]
    results = [_pair(p, 5.0 + 0.01 * i) for i, p in enumerate(plan.pairs(hosts))]
    results += [_pair(("b", "a"), 1.0), _pair(("a", "b"), 1.0)]
    a = analyze(results)
    assert a.suspects == [] and a.pair_scores["a"] == pytest.approx(5.01)
    twice = [_pair(("a", "b"), 5.0), _pair(("b", "a"), 1.0)]
    assert analyze(twice).pair_scores == {"a": 5.0, "b": 5.0}
    assert analyze(twice, higher_is_better=False).pair_scores == {"a": 1.0, "b": 1.0}


@pytest.mark.parametrize("values, hib, flagged", [
    ({"a": 10.0, "b": 10.0, "c": 10.0}, True, set()),                 # every node equal
    ({"a": 10.0, "b": 10.0, "c": 0.0}, True, {"c"}),                  # a zero bandwidth
    ({"a": 0.0, "b": 0.0, "c": 0.0}, True, set()),
    ({"a": 10.0, "b": 10.0, "c": 100.0}, False, {"c"}),               # a latency: high is bad
    ({"a": 10.0, "b": 10.0, "c": 1.0}, False, set()),                 # ... and low is not
    ({"a": 10.0, "b": 10.0, "c": 100.0}, True, set()),
    ({"a": 1e308, "b": 1e308, "c": 1e-300}, True, {"c"}),
    ({"a": 1.7e308, "b": 1.7e308, "c": 1.6e308}, True, {"c"}),
    ({"a": -1.0, "b": -1.0, "c": -5.0}, True, {"c"}),
])
def test_single_scores(values, hib, flagged):
    results = _single(values)
    a = analyze(results, higher_is_better=hib)
    assert set(_suspects(a)) == flagged
    lines = table_lines(a, results, "busbw", None)
    assert ("# no suspect: every node is within the threshold of the median" in lines) == (not flagged)
    assert sum("SUSPECT" in ln for ln in lines) == 2 * len(flagged)


def test_two_nodes_are_not_said_to_agree():
    """With two nodes there is no majority to judge by: the table said they were within the
    threshold of the median while one had a tenth of the other's bandwidth."""
    results = _single({"a": 10.0, "b": 1.0}) + [_pair(("a", "b"), 5.0)]
    a = analyze(results)
    assert a.suspects == []
    lines = table_lines(a, results, "busbw", None)
    assert not any("within the threshold" in ln for ln in lines)
    assert any("fewer than 3 nodes" in ln for ln in lines)


def test_a_node_missing_from_some_tests_is_judged_on_the_others():
    results = _single({"a": 10.0, "b": 10.0, "c": 10.0, "d": 2.0})
    results += [_pair(("a", "b"), 5.0), _pair(("b", "c"), 5.0), _pair(("a", "c"), 5.0)]
    a = analyze(results)
    assert _suspects(a) == {"d": "single score is an outlier"} and "d" not in a.pair_scores
    assert any(ln.split()[:3] == ["d", "2", "-"] for ln in table_lines(a, results, "busbw", None))


# --- topology.conf ----------------------------------------------------------------------------

def test_topology_keys_are_case_insensitive_and_values_may_be_quoted():
    assert parse_topology("switchname=s1 nodes=a,b\nSWITCHNAME=s2 NODES=\"c,d\"\n") == \
        {"a": "s1", "b": "s1", "c": "s2", "d": "s2"}


def test_topology_continuation_lines_and_comments():
    text = ("# leaf switches\n"
            "SwitchName=s1 \\\n"
            "   Nodes=gpu[01-02]   # rack 1\n"
            "SwitchName=s2 Nodes=gpu[03-04] LinkSpeed=100\n"
            "#SwitchName=s3 Nodes=gpu05\n"
            "SwitchName=top Switches=s[1-2]\n")
    assert parse_topology(text) == {"gpu01": "s1", "gpu02": "s1", "gpu03": "s2", "gpu04": "s2"}
    with pytest.raises(UsageError, match=r"^t.conf line 2: invalid Nodes= 'n\[a-b\]'"):
        parse_topology("# x\nSwitchName=s1 \\\n Nodes=n[a-b]\n", "t.conf")


def test_a_node_in_two_leaf_switches_is_refused():
    with pytest.raises(UsageError, match=r"^t.conf line 2: node b is already behind leaf switch s1"):
        parse_topology("SwitchName=s1 Nodes=a,b\nSwitchName=s2 Nodes=b,c\n", "t.conf")


def test_a_huge_topology_is_refused():
    lines = "".join(f"SwitchName=s{i} Nodes=r{i}n[1-60000]\n" for i in range(3))
    with pytest.raises(UsageError, match="more than 100000 nodes"):
        parse_topology(lines, "t.conf")


def test_hosts_outside_the_topology_are_left_out_of_the_switches():
    hosts = ["a", "b", "c", "d"]
    results = [_pair(p, 5.0 + 0.01 * i) for i, p in enumerate(plan.pairs(hosts))]
    a = analyze(results, switches=parse_topology("SwitchName=s1 Nodes=a,b,x\nSwitchName=s2 Nodes=c\n"))
    assert set(a.switch_scores) == {"s1", "s2"} and a.suspects == []


# --- plan -----------------------------------------------------------------------------------------

def test_plan_refuses_a_host_twice():
    """A host twice made a pair of a node with itself, its score counted twice."""
    with pytest.raises(UsageError, match="listed twice"):
        plan.pairs(["a", "b", "a"])
    with pytest.raises(UsageError, match="listed twice"):
        plan.batches(["a", "b", "a", "c"], 2)
    assert plan.pairs(["a"]) == []
    # a ring of two closed itself with the same pair backwards: launched and counted twice
    assert plan.pairs(["a", "b"], "ring") == [("a", "b")]
    assert plan.pairs(["a", "b", "c"], "ring") == [("a", "b"), ("b", "c"), ("c", "a")]


# --- the command's --json lines -------------------------------------------------------------------

@pytest.mark.parametrize("dead, slow, topology, suspects", [
    ("d", "", "", ["d"]),                      # failed every run: alone, with no score
    ("", "c", "", ["c"]),                      # slow everywhere
    ("", "", "", []),                          # every node equal
    ("", "a", "SwitchName=s1 Nodes=a,b\nSwitchName=s2 Nodes=c,d\nSwitchName=s3 Nodes=e,f\n", ["a"]),
])
def test_sweep_json_lines(capsys, db, tmp_path, monkeypatch, dead, slow, topology, suspects):
    import json

    from judge_helpers import cli

    from clusterbench.sweep import run as sweep_run

    def fake(cfg, hosts, stage, index):  # type: ignore[no-untyped-def]
        if dead in hosts:
            return SubsetResult(tuple(hosts), stage, None, error="exit code 1")
        return SubsetResult(tuple(hosts), stage, 2.0 if slow in hosts else 40.0 + index % 3 * 0.1, UNIT)

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    hosts = "a,b,c,d,e,f"
    extra: list[str] = []
    if topology:
        (tmp_path / "topology.conf").write_text(topology)
        extra = ["--topology", str(tmp_path / "topology.conf")]
    rc, out, err = cli(capsys, "sweep", "--hosts", hosts, "--db", db, "--json", "-q", *extra, "--", "coll", "all_reduce")
    lines = [json.loads(ln) for ln in out.splitlines()]
    host = {d["host"]: d for d in lines if d["kind"] == "host"}
    assert rc == (1 if suspects else 0), err
    assert sorted(h for h, d in host.items() if d["status"] == "suspect") == suspects
    assert lines[-1]["kind"] == "summary" and lines[-1]["suspects"] == suspects
    if dead:
        assert host[dead]["single"] is None and host[dead]["pair"] is None and "failed" in host[dead]["reason"]
