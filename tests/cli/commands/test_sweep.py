"""Tests of clusterbench.cli.commands.sweep: ``clusterbench sweep``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET_sweep_scores_more

import pytest
from judge_helpers import cli, run_cli
from junit_xml import _cases, _read
from qualify_profiles import CASES, _runs
from stored_runs import _no_wall, _ok
from sweep_results import HOSTS, UNIT, _directed

from clusterbench.sweep import plan
from clusterbench.sweep import run as sweep_run
from clusterbench.sweep.analyze import SubsetResult

SWEEPS = {
    # every node's score around 1e-300 but e's: a z-score and a deviation of 1e302 and more
    "near zero": {"a": 1e-300, "b": 1.01e-300, "c": 1.02e-300, "d": 0.99e-300, "e": -7.5},
    "far apart": {"a": 1.7e308, "b": 1e300, "c": 5e-324, "d": 12.5, "e": -1.7e308},
}


IDS = [" ".join(bad) for _, bad, _ in CASES]


@pytest.fixture
def launched(monkeypatch) -> list[tuple[str, ...]]:
    """The subsets a sweep launches (none really)."""
    seen: list[tuple[str, ...]] = []

    def fake(cfg, hosts, stage, index):  # type: ignore[no-untyped-def]
        seen.append(tuple(hosts))
        return SubsetResult(tuple(hosts), stage, 40.0 + index % 3 * 0.1, "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    return seen


@pytest.fixture
def launched_sweep_qualify(monkeypatch) -> list[tuple[str, ...]]:
    """The subsets a sweep launches (none really: node c is slow in every subset it is in)."""
    seen: list[tuple[str, ...]] = []

    def fake(cfg, hosts, stage, index):  # type: ignore[no-untyped-def]
        seen.append(tuple(hosts))
        return SubsetResult(tuple(hosts), stage, 20.0 if "c" in hosts else 40.0 + index % 3 * 0.1, "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    return seen


@pytest.mark.parametrize("scores", SWEEPS.values(), ids=SWEEPS)
@pytest.mark.parametrize("link", ["100Gbps", "1bps"])
def test_sweep_of_far_scores(tmp_path, monkeypatch, scores, link):
    """A sweep whose subsets measured values at the float limits (each pair the slower of its two
    nodes): its table, suspects, stored run, JSON and JUnit, and the stored run shown again."""
    from clusterbench.sweep import run as sweep_run
    from clusterbench.sweep.analyze import SubsetResult

    def fake(cfg, hosts, stage, index):  # type: ignore[no-untyped-def]
        return SubsetResult(tuple(hosts), stage, min(scores[h] for h in hosts), "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    topology = tmp_path / "topology.conf"
    topology.write_text("SwitchName=s1 Nodes=a,b\nSwitchName=s2 Nodes=c,d\nSwitchName=s3 Nodes=e\n")
    db = str(tmp_path / "s.db")
    argv = ["sweep", "--hosts", "a,b,c,d,e", "--link-rate", link, "--topology", topology,
            "--junit", tmp_path / "j.xml", "--db", db]
    rc, out, err = run_cli(*argv)
    _ok(rc, out, err, (0, 1))
    _no_wall(argv, out, err + (tmp_path / "j.xml").read_text())
    # every row's cells end in the same column (the flag after them is empty or SUSPECT)
    assert len({len(line.removesuffix("SUSPECT").rstrip()) for line in out.splitlines()[2:]
                if not line.startswith("#")}) == 1, out
    rc, out, err = run_cli(*argv[:-1], str(tmp_path / "j.db"), "--json")
    _ok(rc, out, err, (0, 1))
    _no_wall(argv, out, err)
    for shown in (["results", "show", "1"], ["validate", "1", "--profile", "cpu-smoke"]):
        rc, out, err = run_cli(*shown, "--db", db)
        _ok(rc, out, err, (0, 1, 2))
        _no_wall(shown, out, err)


def test_sweep_junit_one_case_per_node(capsys, tmp_path, monkeypatch):
    """The sweep's verdict per node (subset runs replaced by recorded values: n3 is slow)."""
    from clusterbench.sweep import run as sweep_run
    from clusterbench.sweep.analyze import SubsetResult

    def fake(cfg, hosts, stage, index):
        return SubsetResult(tuple(hosts), stage, 12.0 if "n3" in hosts else 24.0 + index % 2 * 0.2, "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    out = tmp_path / "sweep.xml"
    rc, _, err = cli(capsys, "sweep", "--hosts", "n[1-4]", "--db", str(tmp_path / "s.db"), "--junit", str(out),
                     "--", "coll", "all_reduce")
    assert rc == 1, err
    root = _read(out)
    suite = root.find("testsuite")
    assert suite.get("name") == "sweep coll busbw" and suite.get("failures") == "1"
    cases = _cases(root)
    assert set(cases) == {"n1", "n2", "n3", "n4"}
    failure = cases["n3"].find("failure")
    assert "single score is an outlier" in failure.get("message")
    assert "single score: 12" in failure.text and "pair score: 12" in failure.text
    assert "single score: 24" in cases["n1"].find("system-out").text


@pytest.mark.parametrize("good, bad, words", CASES, ids=IDS)
def test_sweep_refuses_a_bad_test_value_before_any_node_runs(capsys, db, launched, good, bad, words):
    rc, out, err = cli(capsys, "sweep", "--hosts", "a,b,c,d", "--db", db, "--on-fail", "drain", "--", *bad)
    assert rc == 2 and err.count("\n") == 1 and "the test after --" in err and words in err, err
    assert launched == [] and "scontrol" not in out and _runs(db) == []
    rc, _, err = cli(capsys, "sweep", "--hosts", "a,b", "--pairs", "none", "--db", db, "--json", "--", *good)
    assert rc in (0, 1) and launched == [("a",), ("b",)], err


@pytest.mark.parametrize("dead, slow, topology, suspects", [
    ("d", "", "", ["d"]),                      # failed every run: alone, with no score
    ("", "c", "", ["c"]),                      # slow everywhere
    ("", "", "", []),                          # every node equal
    ("", "a", "SwitchName=s1 Nodes=a,b\nSwitchName=s2 Nodes=c,d\nSwitchName=s3 Nodes=e,f\n", ["a"]),
])
def test_sweep_json_lines(capsys, db, tmp_path, monkeypatch, dead, slow, topology, suspects):

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


@pytest.mark.parametrize("args, words", [
    (["--", "coll", "all_reduce", "--iters", "x"], "the test after --"),      # every node would fail it
    (["--", "coll", "all_reduce", "--bogus"], "--bogus"),
    (["--", "coll", "all_reduce", "-b", "1X"], "invalid minbytes (-b) '1X'"),   # a value, not a type
    (["--", "coll", "nosuch"], "unknown collective 'nosuch'"),
    (["--metric", "bandwidht", "--", "net"], "bandwidht"),                     # no record would match
    (["--metric", "bandwidth", "--", "results", "list"], "not a benchmark command"),
])
def test_sweep_refuses_a_test_every_node_would_fail(capsys, db, launched_sweep_qualify, args, words):
    rc, out, err = cli(capsys, "sweep", "--hosts", "a,b,c,d", "--db", db, "--on-fail", "drain", *args)
    assert rc == 2 and err.count("\n") == 1 and words in err, err
    assert launched_sweep_qualify == [] and "scontrol" not in out and _runs(db) == []


def test_sweep_refuses_a_node_name_on_fail_refuses_before_any_node_runs(capsys, db, launched_sweep_qualify):
    rc, _, err = cli(capsys, "sweep", "--hosts", "10.0.0.1,c,fe80::2", "--db", db, "--on-fail", "drain",
                     "--", "coll", "all_reduce")
    assert rc == 2 and "invalid node name 'fe80::2'" in err
    assert launched_sweep_qualify == [] and _runs(db) == []


def test_sweep_apply_without_the_tool_is_refused_before_any_node_runs(capsys, db, launched_sweep_qualify, tmp_path,
                                                                       monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    rc, _, err = cli(capsys, "sweep", "--hosts", "a,b,c,d", "--db", db, "--on-fail", "taint", "--apply",
                     "--", "coll", "all_reduce")
    assert rc == 2 and "kubectl not found" in err
    assert launched_sweep_qualify == [] and _runs(db) == []


def test_a_node_flagged_for_its_send_score_fails_its_junit_case(capsys, tmp_path, monkeypatch):
    from judge_helpers import cli

    by_hosts = {r.hosts: r for r in _directed("n3")}
    monkeypatch.setattr(sweep_run, "run_subset", lambda cfg, hosts, stage, index: by_hosts[tuple(hosts)])
    out = tmp_path / "sweep.xml"
    rc, _, err = cli(capsys, "sweep", "--hosts", ",".join(HOSTS), "--no-single", "--db", str(tmp_path / "s.db"),
                     "--junit", str(out), "-q", "--", "net")
    assert rc == 1, err
    cases = {c.get("name"): c for c in ET_sweep_scores_more.parse(out).getroot().iter("testcase")}
    failure = cases["n3"].find("failure")
    assert failure is not None and "send" in failure.get("message", "")
    assert all(cases[h].find("failure") is None for h in ("n1", "n2", "n4"))


def test_sweep_print_shows_the_plan_and_runs_nothing(capsys, db, launched_sweep_qualify):
    rc, out, err = cli(capsys, "sweep", "--hosts", "gpu[01-06]", "--db", db, "--print", "--parallel", "2",
                       "--test-seconds", "60", "--", "coll", "all_reduce")
    _ok(rc, out, err)
    lines = out.splitlines()
    assert lines[:4] == ["# sweep of 6 nodes", "# single (every node alone): 1 round of 6",
                         "# pair (all pairs, circle method): 5 rounds of 3",
                         "# plan: 6 rounds, 21 launches, 13 waves (at most 2 launches at once); projected 13 min "
                         "at 60 s a test"]
    rounds = [line.split(": ", 1)[1].split() for line in lines[4:]]
    assert len(rounds) == 6 and rounds[0] == [f"gpu0{i}" for i in range(1, 7)]
    pairs = {frozenset(p.split("+")) for r in rounds[1:] for p in r}
    assert len(pairs) == 15 and all(len(r) == 3 for r in rounds[1:])
    assert launched_sweep_qualify == [] and _runs(db) == []


def test_a_1024_node_pair_sweep_prints_at_most_1100_rounds_of_disjoint_pairs(capsys, db, launched_sweep_qualify):
    """The issue's bound, as --print shows the plan a sweep runs: all pairs of 1,024 nodes."""
    rc, out, err = cli(capsys, "sweep", "--hosts", "gpu[0001-1024]", "--pairs", "all", "--db", db, "--print")
    _ok(rc, out, err)
    rounds = [line.split(": ", 1)[1].split() for line in out.splitlines() if line.startswith("round ")]
    assert len(rounds) == 1024 <= 1100
    assert len(rounds[0]) == 1024 and all(len(r) == 512 for r in rounds[1:])
    for r in rounds[1:]:   # disjoint: each node once a round
        assert len({h for p in r for h in p.split("+")}) == 1024
    assert len({p for r in rounds[1:] for p in r}) == 1024 * 1023 // 2   # every pair, once
    assert launched_sweep_qualify == [] and _runs(db) == []


# What start-up may not load for `sweep --print`: PyTorch and the other heavy libraries, and the
# parts of clusterbench the plan does not need (the store, ranks, launchers, judging, reports)
HEAVY = ("torch", "numpy", "scipy", "yaml", "matplotlib", "sqlite3", "psycopg", "prometheus_client", "rich",
         "jsonschema")
NOT_FOR_A_PLAN = ("clusterbench.store", "clusterbench.ranks.context", "clusterbench.ranks.driver",
                  "clusterbench.runner", "clusterbench.judge", "clusterbench.bench", "clusterbench.ingest",
                  "clusterbench.launch.torchrun", "clusterbench.sweep.analyze", "clusterbench.sweep.run",
                  "clusterbench.sweep.report", "clusterbench.report")


def test_sweep_print_loads_no_torch_store_or_analysis():
    from import_graph import loaded_by

    got = loaded_by("clusterbench.cli", "clusterbench.cli.commands.sweep", "clusterbench.sweep.plan_text")
    assert "clusterbench.sweep.plan" in got and "click" in got   # (the walk reaches what it imports)
    assert not got & set(HEAVY)
    assert sorted(m for m in got if m.startswith(NOT_FOR_A_PLAN)) == []


def test_sweep_print_json_and_random_matchings(capsys, db, launched_sweep_qualify):
    from json_schema import check_lines

    hosts = f"gpu[001-{plan.AUTO_ALL_PAIRS_UP_TO + 8:03d}]"
    rc, out, err = cli(capsys, "sweep", "--hosts", hosts, "--db", db, "--print", "--json", "--no-single",
                       "--partners", "4", "--rounds", "2")
    _ok(rc, out, err)
    [line] = check_lines(out)
    assert line["kind"] == "summary" and line["run"] is None and line["hosts"] == plan.AUTO_ALL_PAIRS_UP_TO + 8
    assert line["counts"] == {"rounds": 4, "launches": 80, "waves": 4, "passes": 2} and line["seconds"] == 240.0
    assert launched_sweep_qualify == [] and _runs(db) == []


@pytest.mark.parametrize("args, words", [
    (["--pairs", "ring", "--partners", "5"], "--partners is for --pairs random (or auto), not --pairs ring"),
    (["--pairs", "all", "--seed", "2"], "--seed is for --pairs random"),
    (["--batch", "3", "--partners", "5"], "--batch and --partners cannot be used together"),
    (["--parallel", "0"], "--parallel"),
])
def test_sweep_refuses_options_that_would_change_nothing(capsys, db, launched_sweep_qualify, args, words):
    rc, _, err = cli(capsys, "sweep", "--hosts", "a,b,c,d", "--db", db, *args, "--", "coll", "all_reduce")
    assert rc == 2 and err.count("\n") == 1 and words in err, err
    assert launched_sweep_qualify == []


def test_sweep_runs_its_rounds_and_names_the_slow_node(capsys, db, launched_sweep_qualify):
    """The default (auto: all pairs for 4 nodes) runs every pair once, in rounds of disjoint ones."""
    rc, out, err = cli(capsys, "sweep", "--hosts", "a,b,c,d", "--db", db, "--no-single", "--", "coll", "all_reduce")
    assert rc == 1, err
    ran = [frozenset(s) for s in launched_sweep_qualify]
    assert len(ran) == 6 and set(ran) == {frozenset(p) for p in plan.pairs(["a", "b", "c", "d"])}
    assert "# plan: 3 rounds, 6 launches, 3 waves (a whole round at once)" in err
    assert "SUSPECT" in out and "c" in out
