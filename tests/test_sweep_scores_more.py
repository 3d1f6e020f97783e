"""``sweep``'s scores on constructed ``net --json`` output: one latency stat, a latency of 0 that is
no measurement, each node's send and receive scores as --json and --junit tell them, and record
host names matched to ``--hosts`` (or said once not to match)."""

from __future__ import annotations

import json
import types
import xml.etree.ElementTree as ET

import pytest

from clusterbench.sweep import plan
from clusterbench.sweep import run as sweep_run
from clusterbench.sweep.analyze import SubsetResult, analyze, pick_value, read_directions
from clusterbench.sweep.report import node_verdicts, table_lines, to_run
from clusterbench.sweep.run import SweepConfig, parse_records, run_sweep

HOSTS = ["n1", "n2", "n3", "n4"]


def _lat(src: str, dst: str, stats: dict[str, float]) -> str:
    """The lines ``net --json`` prints for one pair's round trip, one per stat."""
    return "".join(json.dumps({"benchmark": "net", "metric": "latency_us", "value": v, "unit": "us",
                               "params": {"src_host": src, "dst_host": dst, "src_rank": 0, "dst_rank": 1,
                                          "streams": 1, "bytes": 8, "protocol": "tcp", "iterations": 200,
                                          "stat": s}}) + "\n"
                   for s, v in stats.items())


def _bw(src: str, dst: str, gbps: float) -> str:
    return json.dumps({"benchmark": "net", "metric": "bandwidth", "value": gbps, "unit": "GB/s",
                       "params": {"src_host": src, "dst_host": dst, "streams": 4, "bytes": int(gbps * 2e9),
                                  "protocol": "tcp"}}) + "\n"


def _fake_launch(monkeypatch, stdout_of) -> None:  # type: ignore[no-untyped-def]
    """Every subset's rank 0 prints ``stdout_of(hosts)`` and every host succeeds."""
    monkeypatch.setattr(sweep_run.tr, "run_torchrun_on_hosts",
                        lambda hosts, *_a, **_k: types.SimpleNamespace(stdout=stdout_of(tuple(hosts))))
    monkeypatch.setattr(sweep_run.tr, "diagnose", lambda *_a: None)


def _sweep(monkeypatch, stdout_of, metric: str, hib: bool, hosts=HOSTS, single: bool = True):  # type: ignore[no-untyped-def]
    _fake_launch(monkeypatch, stdout_of)
    cfg = SweepConfig(hosts=list(hosts), command=["net"], metric=metric, agent=["ssh"])
    subsets = ([("single", (h,)) for h in hosts] if single else []) + [("pair", p) for p in plan.pairs(hosts)]
    results = run_sweep(cfg, subsets, higher_is_better=hib)
    return results, analyze(results, higher_is_better=hib)


def _suspects(a) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {s.host: s.reason for s in a.suspects}


# --- 1. latency_us: one stat, and 0 is no measurement ------------------------------------------

def test_a_latency_is_ranked_by_its_p50_not_the_mean_of_its_stats():
    records = parse_records(_lat("a", "b", {"min": 10.0, "avg": 14.0, "p50": 12.0, "max": 200.0}))
    assert pick_value(records, "latency_us") == (12.0, "us")
    # no p50: the average; a family without a typical stat keeps its first
    no_p50 = [r for r in records if r["params"]["stat"] != "p50"]
    assert pick_value(no_p50, "latency_us") == (14.0, "us")
    assert pick_value([r for r in records if r["params"]["stat"] in ("min", "max")], "latency_us") == (10.0, "us")


def test_one_slow_round_trip_does_not_make_a_suspect(monkeypatch):
    """n3's max is one round trip of 30x (a scheduler hiccup); its typical round trip is everyone's.
    The mean of min/avg/p50/max made n3 2.7x slower than its neighbours: a suspect."""
    def stdout(hosts: tuple[str, ...]) -> str:
        src, dst = (hosts * 2)[:2]
        worst = 900.0 if "n3" in hosts else 30.0
        return _lat(src if len(hosts) > 1 else f"{src}/rank0", dst if len(hosts) > 1 else f"{dst}/rank1",
                    {"min": 20.0, "avg": 25.0, "p50": 24.0 + 0.1 * HOSTS.index(hosts[0]), "max": worst})
    _results, a = _sweep(monkeypatch, stdout, "latency_us", hib=False)
    assert a.suspects == []
    assert a.pair_scores["n3"] == pytest.approx(24.1, abs=0.11)


@pytest.mark.parametrize("zero", [0.0, -3.0])
def test_a_latency_of_zero_is_a_failed_run_naming_its_node(monkeypatch, zero):
    """n2's clock says its round trips took no time: once the best of all and never flagged."""
    def stdout(hosts: tuple[str, ...]) -> str:
        src, dst = (hosts * 2)[:2]
        p50 = zero if src == "n2" else 24.0 + 0.1 * HOSTS.index(dst)
        return _lat(src, dst, {"min": min(p50, 20.0), "avg": 25.0 if p50 > 0 else p50, "p50": p50, "max": 30.0})
    results, a = _sweep(monkeypatch, stdout, "latency_us", hib=False)
    # n2's one score left is the pair n1 timed
    assert "n2" not in a.single_scores and a.pair_scores["n2"] == pytest.approx(24.1)
    assert min(a.pair_scores.values()) > 0
    assert set(_suspects(a)) == {"n2"}
    assert _suspects(a)["n2"] == "single run failed; pair run failed"
    failed = [r for r in results if r.error]
    # the pairs n2 timed; (n1, n2) was timed by n1 and counts
    assert {r.hosts for r in failed} == {("n2",), ("n2", "n3"), ("n2", "n4")}
    assert all(r.error.startswith("host n2 measured latency_us ") and "above 0" in r.error for r in failed)


def test_a_zero_in_one_round_costs_that_round_only(monkeypatch):
    calls: list[int] = []

    def stdout(hosts: tuple[str, ...]) -> str:
        calls.append(1)
        src, dst = (hosts * 2)[:2]
        return _lat(src, dst, {"p50": 0.0 if len(calls) == 1 else 24.0})
    _fake_launch(monkeypatch, stdout)
    cfg = SweepConfig(hosts=["a", "b"], command=["net"], metric="latency_us", agent=["ssh"])
    [r] = run_sweep(cfg, [("pair", ("a", "b"))], rounds=2, higher_is_better=False)
    assert r.value == 24.0 and r.error is None


def test_a_bandwidth_of_zero_is_still_a_measurement(monkeypatch):
    """Higher is better: 0 loses on its own, it is the slowest node, not a failed run."""
    def stdout(hosts: tuple[str, ...]) -> str:
        a, b = hosts
        speed = 0.0 if "n4" in hosts else 10.0 + 0.01 * HOSTS.index(a)
        return _bw(a, b, speed) + _bw(b, a, speed)
    results, a = _sweep(monkeypatch, stdout, "bandwidth", hib=True, single=False)
    assert not any(r.error for r in results)
    assert "pair score is an outlier" in _suspects(a)["n4"]


# --- 2. send and receive scores in --json host lines and --junit cases --------------------------

def _directed(send_drop: str) -> list[SubsetResult]:
    def speed(s: str, d: str) -> float:
        return 10.0 * (1 + 0.001 * ((HOSTS.index(s) * 7 + HOSTS.index(d) * 3) % 5)) * (0.92 if s == send_drop else 1.0)
    out = []
    for a, b in plan.pairs(HOSTS):
        records = parse_records(_bw(a, b, speed(a, b)) + _bw(b, a, speed(b, a)))
        value, unit = pick_value(records, "bandwidth")  # type: ignore[misc]
        out.append(SubsetResult((a, b), "pair", value, unit, directions=read_directions(records, "bandwidth", (a, b)).values))
    return out


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


def test_a_node_flagged_for_its_send_score_fails_its_junit_case(capsys, tmp_path, monkeypatch):
    from judge_helpers import cli

    by_hosts = {r.hosts: r for r in _directed("n3")}
    monkeypatch.setattr(sweep_run, "run_subset", lambda cfg, hosts, stage, index: by_hosts[tuple(hosts)])
    out = tmp_path / "sweep.xml"
    rc, _, err = cli(capsys, "sweep", "--hosts", ",".join(HOSTS), "--no-single", "--db", str(tmp_path / "s.db"),
                     "--junit", str(out), "-q", "--", "net")
    assert rc == 1, err
    cases = {c.get("name"): c for c in ET.parse(out).getroot().iter("testcase")}
    failure = cases["n3"].find("failure")
    assert failure is not None and "send" in failure.get("message", "")
    assert all(cases[h].find("failure") is None for h in ("n1", "n2", "n4"))


# --- 3. record host names against --hosts ---------------------------------------------------------

def _records(a: str, b: str) -> list[dict]:
    return parse_records(_bw(a, b, 10.0) + _bw(b, a, 9.0))


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


def test_unmatched_names_are_warned_once(monkeypatch):
    """--hosts by address, nodes naming themselves by hostname: no direction can be told."""
    addresses = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    names = dict(zip(addresses, ["gpu01", "gpu02", "gpu03"], strict=True))

    def stdout(hosts: tuple[str, ...]) -> str:
        if len(hosts) == 1:
            return _bw(f"{names[hosts[0]]}/rank0", f"{names[hosts[0]]}/rank1", 20.0)
        a, b = (names[h] for h in hosts)
        return _bw(a, b, 10.0) + _bw(b, a, 10.0)
    results, a = _sweep(monkeypatch, stdout, "bandwidth", hib=True, hosts=addresses)
    assert a.send_scores == {} and len(a.pair_scores) == 3
    assert len(a.warnings) == 1
    assert "gpu01, gpu02, gpu03" in a.warnings[0] and "CLUSTERBENCH_HOSTNAME" in a.warnings[0]
    lines = table_lines(a, results, "bandwidth", None)
    assert [ln for ln in lines if ln.startswith("# warning:")] == [f"# warning: {a.warnings[0]}"]
    run, _ms = to_run(results, a, ["net"], "bandwidth", ["clusterbench", "sweep"], "2024-01-01T00:00:00Z", {}, None)
    assert run.meta["warnings"] == a.warnings


def test_matching_names_warn_nothing(monkeypatch):
    def stdout(hosts: tuple[str, ...]) -> str:
        if len(hosts) == 1:
            return _bw(f"{hosts[0]}/rank0", f"{hosts[0]}/rank1", 20.0)
        a, b = (f"{h.upper()}.example.org" for h in hosts)
        return _bw(a, b, 10.0) + _bw(b, a, 10.0)
    results, a = _sweep(monkeypatch, stdout, "bandwidth", hib=True)
    assert a.warnings == [] and set(a.send_scores) == set(HOSTS)
    run, _ms = to_run(results, a, ["net"], "bandwidth", ["clusterbench", "sweep"], "2024-01-01T00:00:00Z", {}, None)
    assert "warnings" not in run.meta


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "fast", None, True, 10**400])
def test_a_value_that_is_no_number_is_no_row(bad):
    rows = [{"metric": "busbw", "value": 10.0, "unit": "GB/s", "params": {"bytes": 8}},
            {"metric": "busbw", "value": bad, "unit": "GB/s", "params": {"bytes": 8}}]
    assert pick_value(rows, "busbw") == (10.0, "GB/s")
    assert pick_value(rows[1:], "busbw") is None
