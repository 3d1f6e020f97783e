"""``sweep`` over a test whose records name sender and receiver (``net``): a node slow one way only
is scored and flagged by that direction, on constructed ``net --json`` output."""

from __future__ import annotations

import json

import pytest

from clusterbench.sweep import plan
from clusterbench.sweep.analyze import SubsetResult, analyze, pick_directions, pick_value
from clusterbench.sweep.report import table_lines, to_run
from clusterbench.sweep.run import parse_records

HOSTS = ["n1", "n2", "n3", "n4", "n5"]
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
    return 1.0 + 0.001 * ((HOSTS.index(src) * 7 + HOSTS.index(dst) * 3) % 5)


def _sweep(send_drop: dict[str, float], receive_drop: dict[str, float]) -> list[SubsetResult]:
    def speed(src: str, dst: str) -> float:
        return HEALTHY * _noise(src, dst) * (1 - send_drop.get(src, 0.0)) * (1 - receive_drop.get(dst, 0.0))
    return [_pair_result(p, speed) for p in plan.pairs(HOSTS)]


def _suspects(a) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {s.host: s.reason for s in a.suspects}


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
    assert set(a.send_scores) == set(a.receive_scores) == set(HOSTS)


def test_healthy_partners_of_a_one_way_node_are_not_flagged():
    """n3's bad transmit side is one of four directions each partner receives in: not theirs."""
    a = analyze(_sweep({"n3": 0.5}, {}))
    assert set(_suspects(a)) == {"n3"}
    assert all(a.receive_scores[h] == pytest.approx(HEALTHY, rel=0.005) for h in HOSTS)


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
    labels = {h: f"{h}.cluster.local" for h in HOSTS}
    results = [_pair_result(p, lambda s, d: HEALTHY * _noise(s, d) * (0.92 if s == "n4" else 1.0), labels)
               for p in plan.pairs(HOSTS)]
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


# --- collectives: no directions, nothing changes -----------------------------------------------

def _coll_records(busbw: float) -> list[dict]:
    return [{"metric": "busbw", "value": v, "unit": "GB/s", "params": {"op": "all_reduce", "bytes": b}}
            for b, v in ((1 << 20, busbw / 4), (1 << 28, busbw), (1 << 28, busbw + 1.0))]


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
