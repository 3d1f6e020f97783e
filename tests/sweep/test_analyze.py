"""Tests of clusterbench.sweep.analyze: from per-node and per-pair results to suspects."""

from __future__ import annotations

import json

import pytest
from sweep_results import HOSTS, UNIT, _bw, _directed, _lat, _suspects

from clusterbench.errors import UsageError
from clusterbench.sweep import plan
from clusterbench.sweep.analyze import (
    SubsetResult,
    analyze,
    parse_topology,
    partners_victims,
    pick_directions,
    pick_value,
    read_directions,
)
from clusterbench.sweep.report import node_verdicts, table_lines, to_run
from clusterbench.sweep.run import parse_records


def _pairs(values: dict[tuple[str, str], float]) -> list[SubsetResult]:
    return [SubsetResult(k, "pair", v, "GB/s") for k, v in values.items()]


def _single(values: dict[str, float | None], unit: str = UNIT) -> list[SubsetResult]:
    return [SubsetResult((h,), "single", v, unit) if v is not None
            else SubsetResult((h,), "single", None, error="exit code 1") for h, v in values.items()]


def _pair(hosts: tuple[str, ...], v: float | None, error: str = "exit code 1") -> SubsetResult:
    return SubsetResult(hosts, "pair", v, UNIT) if v is not None else SubsetResult(hosts, "pair", None, error=error)


def _stored(results: list[SubsetResult], a) -> dict:  # type: ignore[no-untyped-def]
    run, ms = to_run(results, a, ["coll"], "busbw", ["clusterbench", "sweep"], "2024-01-01T00:00:00Z", {}, None)
    flagged = {m.params["host"] for m in ms if m.metric == "node_score" and m.params["suspect"]}
    return {"suspects": {s["host"] for s in run.meta["suspects"]}, "flagged": flagged, "status": run.status}


def _six_behind_three_switches(slow) -> tuple[list[SubsetResult], dict[str, str]]:  # type: ignore[no-untyped-def]
    hosts = [f"n{i}" for i in range(1, 7)]
    topo = {h: f"s{i // 2 + 1}" for i, h in enumerate(hosts)}
    return [_pair(p, 0.5 if slow(p, topo) else 1.0 + 0.001 * i) for i, p in enumerate(plan.pairs(hosts))], topo


HOSTS_sweep_directions = ["n1", "n2", "n3", "n4", "n5"]


HEALTHY = 10.0


def _net_stdout(src: str, dst: str, gbps: float, labels: dict[str, str] | None = None) -> str:
    """The line ``net --json`` prints for one ordered pair's bandwidth (``bytes``: what it moved)."""
    name = labels or {}
    seconds = 2.0
    bw = {"benchmark": "net", "metric": "bandwidth", "value": gbps, "unit": "GB/s",
          "params": {"src_host": name.get(src, src), "dst_host": name.get(dst, dst), "src_rank": 0,
                     "dst_rank": 1, "streams": 4, "bytes": int(gbps * 1e9 * seconds), "protocol": "tcp"}}
    return json.dumps(bw) + "\n"


def _pair_result(hosts: tuple[str, str], speed, labels: dict[str, str] | None = None) -> SubsetResult:  # type: ignore[no-untyped-def]
    """A pair subset as the sweep reads it from rank 0: both directions of the pair."""
    a, b = hosts
    stdout = _net_stdout(a, b, speed(a, b), labels) + _net_stdout(b, a, speed(b, a), labels)
    records = parse_records(stdout)
    value, unit = pick_value(records, "bandwidth")  # type: ignore[misc]
    return SubsetResult(hosts, "pair", value, unit, directions=pick_directions(records, "bandwidth", hosts))


def _noise(src: str, dst: str) -> float:
    # a few tenths of a percent, different for every direction, so the MAD is not 0
    return 1.0 + 0.001 * ((HOSTS_sweep_directions.index(src) * 7 + HOSTS_sweep_directions.index(dst) * 3) % 5)


def _sweep(send_drop: dict[str, float], receive_drop: dict[str, float]) -> list[SubsetResult]:
    def speed(src: str, dst: str) -> float:
        return HEALTHY * _noise(src, dst) * (1 - send_drop.get(src, 0.0)) * (1 - receive_drop.get(dst, 0.0))
    return [_pair_result(p, speed) for p in plan.pairs(HOSTS_sweep_directions)]


def _coll_records(busbw: float) -> list[dict]:
    return [{"metric": "busbw", "value": v, "unit": "GB/s", "params": {"op": "all_reduce", "bytes": b}}
            for b, v in ((1 << 20, busbw / 4), (1 << 28, busbw), (1 << 28, busbw + 1.0))]


def _records(a: str, b: str) -> list[dict]:
    return parse_records(_bw(a, b, 10.0) + _bw(b, a, 9.0))


def test_one_slow_node_is_named_with_its_pairs():
    fast, slow = 1.10, 0.12
    results = _pairs({p: (slow if "n3" in p else fast + 0.01 * i) for i, p in enumerate(plan.pairs(HOSTS))})
    a = analyze(results)
    assert [s.host for s in a.suspects] == ["n3"]
    ev = a.suspects[0].evidence
    assert "n3: 0.12 GB/s" in ev[0] and sum("n3" in e for e in ev[1:]) == 3


def test_three_nodes_one_shaped_and_a_noisy_pair_flags_only_the_shaped():
    a = analyze(_pairs({("a", "b"): 0.117, ("a", "c"): 1.17, ("b", "c"): 0.118}))
    assert [s.host for s in a.suspects] == ["b"]
    # one noisy pair drags both its nodes equally: nobody is flagged
    a = analyze(_pairs({("a", "b"): 0.8, ("a", "c"): 1.17, ("b", "c"): 1.15}))
    assert a.suspects == []


def test_uniform_noise_flags_nobody():
    vals = [1.00, 1.03, 0.98, 1.01, 0.99, 1.02]
    a = analyze(_pairs(dict(zip(plan.pairs(HOSTS), vals))))
    assert a.suspects == []


def test_singles_failures_and_switches():
    results = [SubsetResult((h,), "single", v, "GB/s") for h, v in
               zip(HOSTS, [5.0, 5.1, 2.0, 4.9])]
    results.append(SubsetResult(("n1", "n4"), "pair", None,
                                error="rendezvous at n1:29400 timed out after 8 s: n4 never joined"))
    results += _pairs({("n1", "n2"): 1.0, ("n2", "n3"): 1.0, ("n1", "n3"): 1.01})
    a = analyze(results)
    by = {s.host: s for s in a.suspects}
    assert set(by) == {"n3", "n4"}
    assert "single" in by["n3"].reason and "failed" in by["n4"].reason and "never joined" in by["n4"].evidence[0]
    topo = parse_topology("SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-4]\nSwitchName=top Switches=s[1-2]\n")
    assert topo == {"n1": "s1", "n2": "s1", "n3": "s2", "n4": "s2"}


def test_switch_grouping_names_the_nodes_behind_a_bad_switch():
    hosts = [f"n{i}" for i in range(1, 10)]
    topo = {h: f"s{(i // 3) + 1}" for i, h in enumerate(hosts)}
    vals = {}
    for i, p in enumerate(plan.pairs(hosts)):
        vals[p] = 0.5 if topo[p[0]] == "s3" or topo[p[1]] == "s3" else 1.0 + 0.001 * i
    a = analyze(_pairs(vals), switches=topo)
    assert set(a.switch_scores) == {"s1", "s2", "s3"}
    assert {s.host for s in a.suspects} == {"n7", "n8", "n9"}


def test_pick_value_uses_the_largest_size_and_lower_is_better():
    recs = [{"metric": "busbw", "value": v, "unit": "GB/s", "params": {"bytes": b, "placement": pl}}
            for b, v, pl in [(1024, 0.1, "out"), (1 << 20, 2.0, "out"), (1 << 20, 4.0, "in")]]
    assert pick_value(recs, "busbw") == (3.0, "GB/s")
    assert pick_value(recs, "nothing") is None
    lat = _pairs({("a", "b"): 10.0, ("a", "c"): 500.0, ("b", "c"): 505.0})
    assert [s.host for s in analyze(lat, higher_is_better=False).suspects] == ["c"]
    assert parse_records('# x\n{"metric": "busbw", "value": 1}\n{bad json\n') == [{"metric": "busbw", "value": 1}]


def test_rounds_keep_each_subsets_best_and_alternate_the_order(monkeypatch):
    """A transient slowdown in one round does not survive best-of-rounds; a slow node does."""
    from clusterbench.sweep import run as sweep_run

    calls: list[tuple[str, ...]] = []
    # round 1: the first launches are slow (a transient); every pair with c is slow (degraded)
    values = {("a", "b"): [0.5, 1.0], ("a", "c"): [0.6, 0.6], ("b", "c"): [0.6, 0.61]}

    def fake(cfg, hosts, stage, index):
        calls.append(tuple(hosts))
        v = values[tuple(hosts)][index // 3]
        return SubsetResult(tuple(hosts), stage, v, "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    cfg = sweep_run.SweepConfig(hosts=["a", "b", "c"], command=["coll"], metric="busbw", agent=["ssh"])
    subsets = [("pair", ("a", "b")), ("pair", ("a", "c")), ("pair", ("b", "c"))]
    best = sweep_run.run_sweep(cfg, subsets, rounds=2)
    assert calls == [("a", "b"), ("a", "c"), ("b", "c"), ("b", "c"), ("a", "c"), ("a", "b")]
    assert [r.value for r in best] == [1.0, 0.6, 0.61]
    assert [s.host for s in analyze(best).suspects] == ["c"]
    once = sweep_run.run_sweep(cfg, subsets, rounds=1)
    assert [r.value for r in once] == [0.5, 0.6, 0.6]
    # lower is better (a latency): the smallest value is kept
    lat = sweep_run.run_sweep(cfg, subsets, rounds=2, higher_is_better=False)
    assert [r.value for r in lat] == [0.5, 0.6, 0.6]


def test_topology_uses_the_same_parser():
    topo = parse_topology("SwitchName=s1 Nodes=rack1-n[1-2]\nSwitchName=s2 Nodes=rack2-n[01-02],x\n")
    assert topo == {"rack1-n1": "s1", "rack1-n2": "s1", "rack2-n01": "s2", "rack2-n02": "s2", "x": "s2"}
    with pytest.raises(UsageError, match=r"^topo.conf line 2: invalid Nodes= 'n\[a-b\]'"):
        parse_topology("# leaf\nSwitchName=s1 Nodes=n[a-b]\n", "topo.conf")


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


def test_a_one_way_drop_of_8_percent_is_flagged_with_its_direction():
    results = _sweep({"n3": 0.08}, {})
    a = analyze(results)
    assert _suspects(a) == {"n3": "send score is an outlier"}
    evidence = a.suspects[0].evidence
    assert evidence[0].startswith("send n3: ") and "-8" in evidence[0]
    # every direction n3 sent in, and none it received in
    assert sorted(e.split(":")[0] for e in evidence[1:]) == [f"n3 -> {h}" for h in ("n1", "n2", "n4", "n5")]
    # the pair score alone missed it: half the drop, under --min-rel-dev
    assert a.pair_scores["n3"] / a.pair_scores["n1"] == pytest.approx(0.96, abs=0.005)
    assert a.receive_scores["n3"] == pytest.approx(HEALTHY, rel=0.005)


def test_a_one_way_receive_drop_is_named_as_receive():
    a = analyze(_sweep({}, {"n5": 0.08}))
    assert _suspects(a) == {"n5": "receive score is an outlier"}
    assert a.suspects[0].evidence[0].startswith("receive n5: ")
    assert all(e.endswith("GB/s") and "-> n5:" in e for e in a.suspects[0].evidence[1:])


def test_a_two_way_drop_is_flagged_once():
    a = analyze(_sweep({"n2": 0.3}, {"n2": 0.3}))
    assert [s.host for s in a.suspects] == ["n2"]
    assert _suspects(a)["n2"] == "pair score is an outlier; send score is an outlier; receive score is an outlier"
    run, _ms = to_run(_sweep({"n2": 0.3}, {"n2": 0.3}), a, ["net"], "bandwidth", ["clusterbench", "sweep"],
                      "2024-01-01T00:00:00Z", {}, None)
    assert [s["host"] for s in run.meta["suspects"]] == ["n2"]


@pytest.mark.parametrize("send, receive", [({}, {}), ({"n1": 0.03}, {}), ({}, {"n4": 0.03})])
def test_healthy_nodes_are_never_flagged(send, receive):
    """Noise, and a one-way wobble under --min-rel-dev: nobody, and every node has both scores."""
    a = analyze(_sweep(send, receive))
    assert a.suspects == []
    assert set(a.send_scores) == set(a.receive_scores) == set(HOSTS_sweep_directions)


def test_healthy_partners_of_a_one_way_node_are_not_flagged():
    """n3's bad transmit side is one of four directions each partner receives in: not theirs."""
    a = analyze(_sweep({"n3": 0.5}, {}))
    assert set(_suspects(a)) == {"n3"}
    assert all(a.receive_scores[h] == pytest.approx(HEALTHY, rel=0.005) for h in HOSTS_sweep_directions)


def test_the_pair_value_takes_both_directions():
    """net's ``bytes`` is what a test moved: the largest of it was the faster direction alone."""
    records = parse_records(_net_stdout("a", "b", 10.0) + _net_stdout("b", "a", 2.0))
    assert pick_value(records, "bandwidth") == (6.0, "GB/s")
    assert pick_directions(records, "bandwidth", ("a", "b")) == {("a", "b"): 10.0, ("b", "a"): 2.0}


@pytest.mark.parametrize("stdout, hosts", [
    (_net_stdout("a", "b", 10.0), ("a", "b")),                            # one way only (a round trip)
    (_net_stdout("a", "b", 10.0) + _net_stdout("b", "a", 9.0), ("a", "c")),  # an end not in the subset
    (_net_stdout("a", "b", 10.0).replace('"tcp"', '"tcp", "bidirectional": true')
     + _net_stdout("b", "a", 9.0), ("a", "b")),                           # both ends sent at once
])
def test_no_direction_where_it_cannot_be_told(stdout, hosts):
    assert pick_directions(parse_records(stdout), "bandwidth", hosts) == {}


def test_a_node_that_names_itself_by_its_long_name():
    labels = {h: f"{h}.cluster.local" for h in HOSTS_sweep_directions}
    results = [_pair_result(p, lambda s, d: HEALTHY * _noise(s, d) * (0.92 if s == "n4" else 1.0), labels)
               for p in plan.pairs(HOSTS_sweep_directions)]
    assert _suspects(analyze(results)) == {"n4": "send score is an outlier"}


def test_stored_and_printed_per_direction():
    results = _sweep({"n3": 0.08}, {})
    a = analyze(results)
    _run, ms = to_run(results, a, ["net"], "bandwidth", ["clusterbench", "sweep"], "2024-01-01T00:00:00Z", {}, None)
    stages = {(m.params["host"], m.params["stage"]): m.params["suspect"] for m in ms if m.metric == "node_score"}
    assert stages[("n3", "send")] and stages[("n3", "receive")] and not stages[("n1", "send")]
    lines = table_lines(a, results, "bandwidth", None)
    assert lines[1].split() == ["host", "single", "pairs", "send", "receive", "flag"]
    row = next(ln.split() for ln in lines if ln.split()[:1] == ["n3"])
    assert row[-1] == "SUSPECT" and float(row[3]) == pytest.approx(9.2, rel=0.005)


def test_collectives_keep_their_value_scores_and_table():
    records = _coll_records(40.0)
    assert pick_value(records, "busbw") == (40.5, "GB/s")
    assert pick_directions(records, "busbw", ("a", "b")) == {}
    results = [SubsetResult(p, "pair", 40.0 + 0.01 * i if "c" not in p else 20.0, "GB/s")
               for i, p in enumerate(plan.pairs(["a", "b", "c", "d"]))]
    a = analyze(results)
    assert a.send_scores == {} and a.receive_scores == {}
    assert _suspects(a) == {"c": "pair score is an outlier"}
    lines = table_lines(a, results, "busbw", None)
    assert lines[0] == "# sweep: busbw (GB/s) per node; pair score = median of the node's pairs"
    assert lines[1].split() == ["host", "single", "pairs", "flag"]
    _run, ms = to_run(results, a, ["coll"], "busbw", ["clusterbench", "sweep"], "2024-01-01T00:00:00Z", {}, None)
    assert {m.params["stage"] for m in ms if m.metric == "node_score"} == {"pair"}


def test_a_latency_is_ranked_by_its_p50_not_the_mean_of_its_stats():
    records = parse_records(_lat("a", "b", {"min": 10.0, "avg": 14.0, "p50": 12.0, "max": 200.0}))
    assert pick_value(records, "latency_us") == (12.0, "us")
    # no p50: the average; a family without a typical stat keeps its first
    no_p50 = [r for r in records if r["params"]["stat"] != "p50"]
    assert pick_value(no_p50, "latency_us") == (14.0, "us")
    assert pick_value([r for r in records if r["params"]["stat"] in ("min", "max")], "latency_us") == (10.0, "us")


def test_host_verdicts_carry_send_and_receive_scores():
    results = _directed("n3")
    a = analyze(results)
    verdicts = {v.host: v for v in node_verdicts(a, results, HOSTS)}
    assert list(verdicts) == HOSTS
    n3, n1 = verdicts["n3"], verdicts["n1"]
    # the old keys, then the new ones: additive
    assert list(n1.fields()) == ["single", "pair", "send", "receive", "unit", "reason", "evidence"]
    assert n1.fields()["send"] == pytest.approx(a.send_scores["n1"]) and n1.fields()["single"] is None
    assert n3.status == "suspect" and n3.fields()["send"] == pytest.approx(a.send_scores["n3"])
    assert n3.fields()["receive"] == pytest.approx(a.receive_scores["n3"])
    assert n3.message().startswith("fail: send score is an outlier: send n3: ")
    assert [ln.split(":")[0] for ln in n1.score_lines()] == ["pair score", "send score", "receive score"]


def test_host_verdicts_of_a_test_without_directions_have_null_send_and_receive():
    results = [SubsetResult(p, "pair", 40.0 + 0.01 * i, "GB/s") for i, p in enumerate(plan.pairs(HOSTS))]
    [v, *_] = node_verdicts(analyze(results), results, HOSTS)
    assert v.fields()["send"] is None and v.fields()["receive"] is None
    assert [ln.split(":")[0] for ln in v.score_lines()] == ["pair score"]


@pytest.mark.parametrize("labels, hosts", [
    (("N1", "n2"), ("n1", "n2")),                                   # a hostname in capitals
    (("n1.cluster.local", "N2.Cluster.Local."), ("n1", "n2")),      # FQDNs (one with a root dot)
    (("n1", "n2"), ("n1.cluster.local", "n2.cluster.local")),       # --hosts long, nodes short
    (("10.0.0.1", "n2"), ("10.0.0.1", "n2.cluster")),               # an address, itself
])
def test_names_that_match_one_host(labels, hosts):
    d = read_directions(_records(*labels), "bandwidth", hosts)
    assert d.unmatched == () and d.values == {(hosts[0], hosts[1]): 10.0, (hosts[1], hosts[0]): 9.0}


@pytest.mark.parametrize("labels, hosts, unmatched", [
    # 10.0.0.9 is not 10.0.0.1 for sharing its first number
    (("10.0.0.9", "n2"), ("10.0.0.1", "n2"), ("10.0.0.9",)),
    (("gpu01", "gpu02"), ("10.0.0.1", "10.0.0.2"), ("gpu01", "gpu02")),
    (("GPU01", "gpu01.b"), ("gpu01.a", "gpu01.b"), ("GPU01 (could be gpu01.a or gpu01.b)",)),
    (("n1", "N1"), ("n1", "n2"), ("n1 (as is N1)", "N1 (as is n1)")),
])
def test_names_that_do_not_match_are_said(labels, hosts, unmatched):
    d = read_directions(_records(*labels), "bandwidth", hosts)
    assert d.values == {} and d.unmatched == unmatched


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "fast", None, True, 10**400])
def test_a_value_that_is_no_number_is_no_row(bad):
    rows = [{"metric": "busbw", "value": 10.0, "unit": "GB/s", "params": {"bytes": 8}},
            {"metric": "busbw", "value": bad, "unit": "GB/s", "params": {"bytes": 8}}]
    assert pick_value(rows, "busbw") == (10.0, "GB/s")
    assert pick_value(rows[1:], "busbw") is None


def _matched(n: int, bad: set[str], seed: int = 3) -> tuple[list[SubsetResult], str, list[str]]:
    """Random matchings (3 partners) over n nodes at the slower NIC of each pair; the first
    healthy node is given two of the degraded nodes as partners (by swapping names)."""
    hosts = [f"h{i:03d}" for i in range(n)]
    p = plan.build(hosts, single=False, pair_mode="random", partners=3, seed=seed)
    subsets = [s for rnd in p.rounds() for s in rnd.subsets]
    victim = next(h for h in hosts if h not in bad)
    partners = [b if a == victim else a for a, b in subsets if victim in (a, b)]
    rename = dict(zip(partners[:2], sorted(bad)[:2], strict=True))
    rename |= {v: k for k, v in rename.items()}
    subsets = [tuple(rename.get(h, h) for h in s) for s in subsets]
    speed = {h: (0.5 if h in bad else 1.0 + 0.001 * i) for i, h in enumerate(hosts)}
    return [SubsetResult(s, "pair", 40.0 * min(speed[h] for h in s), "GB/s") for s in subsets], victim, hosts


def test_a_healthy_node_slow_only_with_degraded_partners_is_not_named():
    """Two of its three partners degraded: the node's median pair is as slow as theirs, and it was
    named beside them (--on-fail drain would drain it). Without its pairs with them it is healthy."""
    bad = {"h010", "h020", "h030", "h040"}
    results, victim, _hosts = _matched(60, bad)
    a = analyze(results)
    assert a.pair_scores[victim] == pytest.approx(20.0)   # its median is the degraded one
    assert {s.host for s in a.suspects} == bad
    assert len(a.warnings) == 1 and victim in a.warnings[0] and "h010" in a.warnings[0]


def test_partners_victims_never_clears_a_degraded_node():
    """A degraded node is slow with anyone: even its pairs with healthy nodes are slow."""
    best = {frozenset(p): v for p, v in {("d1", "d2"): 5.0, ("d1", "a"): 5.0, ("d1", "b"): 5.0,
                                         ("d2", "c"): 5.0, ("d2", "e"): 5.0}.items()}
    scores = {"d1": 5.0, "d2": 5.0, **{h: 10.0 + 0.01 * i for i, h in enumerate("abcefghij")}}
    assert partners_victims(["d1", "d2"], best, scores, threshold=3.5, min_rel_dev=0.05,
                            higher_is_better=True) == {}
    # every pair of x is with a suspect: nothing else to judge it by, it stays named
    assert partners_victims(["d1", "x"], {frozenset(("x", "d1")): 5.0}, {**scores, "x": 5.0}, threshold=3.5,
                            min_rel_dev=0.05, higher_is_better=True) == {}
