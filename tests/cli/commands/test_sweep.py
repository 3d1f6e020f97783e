"""Tests of clusterbench.cli.commands.sweep: ``clusterbench sweep``."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET_sweep_scores_more
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from judge_helpers import cli, run_cli
from paths import TESTS

from clusterbench.sweep import plan
from clusterbench.sweep import run as sweep_run
from clusterbench.sweep.analyze import SubsetResult, pick_value, read_directions
from clusterbench.sweep.run import parse_records


def _ok(rc: int, out: str, err: str, codes: tuple[int, ...] = (0,)) -> None:
    assert rc in codes, (rc, err)
    assert "Traceback" not in out + err and "internal error" not in err, err


# digits in one run: what %.2f prints for a value past 1e24 (WALL would take a list of run ids)
DIGITS = re.compile(r"\d{25,}")


def _no_wall(argv: list[str], out: str, err: str) -> None:
    for line in (out + err).splitlines():
        assert not DIGITS.search(line), (argv, line)


SWEEPS = {
    # every node's score around 1e-300 but e's: a z-score and a deviation of 1e302 and more
    "near zero": {"a": 1e-300, "b": 1.01e-300, "c": 1.02e-300, "d": 0.99e-300, "e": -7.5},
    "far apart": {"a": 1.7e308, "b": 1e300, "c": 5e-324, "d": 12.5, "e": -1.7e308},
}


xmlschema = pytest.importorskip("xmlschema", reason="xmlschema (test extra) validates against the JUnit XSD")


SCHEMA = xmlschema.XMLSchema(str(TESTS / "data" / "schemas" / "junit-10.xsd"))


def _read(path: Path) -> ET.Element:
    SCHEMA.validate(str(path))
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    for suite in root.findall("testsuite"):   # the counts CI systems show are the cases'
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
            assert int(suite.get(attr)) == sum(c.find(tag) is not None for c in cases)
    return root


def _cases(root: ET.Element) -> dict[str, ET.Element]:
    return {c.get("name"): c for c in root.iter("testcase")}


# (a good step, the same command with one bad value, the words of the error naming that value)
CASES = [
    (["stream", "--sizes", "1K:4K"], ["stream", "--sizes", "1X"], "invalid --sizes '1X'"),
    (["stream", "--dtype", "float"], ["stream", "--dtype", "bogus"], "unknown dtype 'bogus' for stream"),
    (["stream", "--kernels", "Triad"], ["stream", "--kernels", "Tirad"], "unknown kernel 'Tirad'"),
    (["stream", "-s", "1K"], ["stream", "-s", "0"], "invalid -s/--arraysize '0'"),
    (["gemm", "--dtype", "fp32,bf16"], ["gemm", "--dtype", "bogus"], "unknown dtype 'bogus'"),
    (["gemm", "-m", "1K"], ["gemm", "-m", "1X"], "invalid -m '1X'"),
    (["gemm", "--transA", "T"], ["gemm", "--transA", "Q"], "invalid --transA 'Q'"),
    (["gemm", "--samples", "1"], ["gemm", "--samples", "0"], "--samples and --cold-iters must be at least 1"),
    (["transfer", "--bytes", "1K"], ["transfer", "--bytes", "1X"], "invalid --bytes '1X'"),
    # G1 names a GPU the node may have: only the node can judge it
    (["transfer", "--test", "G0->G1"], ["transfer", "--test", "G0->Q1"], "invalid memory type 'Q'"),
    (["transfer", "--method", "kernel"], ["transfer", "--method", "dma"], "unknown --method 'dma'"),
    (["transfer", "--matrix", "h2d"], ["transfer", "--matrix", "x2y"], "unknown --matrix 'x2y'"),
    (["net", "--streams", "8"], ["net", "--streams", "0"], "--streams must be 1..128, got 0"),
    (["net", "--link-rate", "100Gbps"], ["net", "--link-rate", "fast"], "invalid rate 'fast'"),
    (["train", "--heads", "8"], ["train", "--heads", "3"], "--hidden 64 is not divisible by --heads 3"),
    (["train", "--warmup", "1"], ["train", "--warmup", "20"], "--warmup 20 leaves none of the 20 --steps"),
    (["train", "--strategy", "hybrid", "--shard-size", "2"], ["train", "--shard-size", "2"],
     "--shard-size is for --strategy hybrid"),
    # bf16 on auto: the node's GPUs decide; on --device cpu every node refuses it
    (["train", "--dtype", "bf16"], ["train", "--device", "cpu", "--dtype", "bf16"], "--dtype bf16 needs a GPU"),
    (["ddp-comm", "--size", "64M"], ["ddp-comm", "--size", "1X"], "invalid --size '1X'"),
    (["ddp-comm", "--bucket-cap-mb", "50"], ["ddp-comm", "--bucket-cap-mb", "1e300"], "--bucket-cap-mb 1e+300"),
    (["ddp-comm", "--link-speed", "100Gbps"], ["ddp-comm", "--link-speed", "fast"], "invalid rate 'fast'"),
    (["infer-tp", "--batch-sizes", "8,16"], ["infer-tp", "--batch-sizes", "0,8"], "--batch-sizes must be positive"),
    (["infer-tp", "--batch-sizes", "8..64"], ["infer-tp", "--batch-sizes", "1X..8"], "invalid --batch-sizes '1X'"),
    (["infer-tp", "--dtype", "fp16"], ["infer-tp", "--device", "cpu", "--dtype", "fp16"],
     "--dtype fp16 needs a GPU"),
]


IDS = [" ".join(bad) for _, bad, _ in CASES]


def _runs(db: str) -> list[object]:
    from clusterbench.store import Store

    if not Path(db).exists():
        return []
    with Store.open(db) as s:
        return list(s.list_runs())


@pytest.fixture
def launched(monkeypatch) -> list[tuple[str, ...]]:
    """The subsets a sweep launches (none really)."""
    seen: list[tuple[str, ...]] = []

    def fake(cfg, hosts, stage, index):  # type: ignore[no-untyped-def]
        seen.append(tuple(hosts))
        return SubsetResult(tuple(hosts), stage, 40.0 + index % 3 * 0.1, "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    return seen


UNIT = "GB/s"


@pytest.fixture
def launched_sweep_qualify(monkeypatch) -> list[tuple[str, ...]]:
    """The subsets a sweep launches (none really: node c is slow in every subset it is in)."""
    seen: list[tuple[str, ...]] = []

    def fake(cfg, hosts, stage, index):  # type: ignore[no-untyped-def]
        seen.append(tuple(hosts))
        return SubsetResult(tuple(hosts), stage, 20.0 if "c" in hosts else 40.0 + index % 3 * 0.1, "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    return seen


HOSTS = ["n1", "n2", "n3", "n4"]


def _bw(src: str, dst: str, gbps: float) -> str:
    return json.dumps({"benchmark": "net", "metric": "bandwidth", "value": gbps, "unit": "GB/s",
                       "params": {"src_host": src, "dst_host": dst, "streams": 4, "bytes": int(gbps * 2e9),
                                  "protocol": "tcp"}}) + "\n"


def _directed(send_drop: str) -> list[SubsetResult]:
    def speed(s: str, d: str) -> float:
        return 10.0 * (1 + 0.001 * ((HOSTS.index(s) * 7 + HOSTS.index(d) * 3) % 5)) * (0.92 if s == send_drop else 1.0)
    out = []
    for a, b in plan.pairs(HOSTS):
        records = parse_records(_bw(a, b, speed(a, b)) + _bw(b, a, speed(b, a)))
        value, unit = pick_value(records, "bandwidth")  # type: ignore[misc]
        out.append(SubsetResult((a, b), "pair", value, unit, directions=read_directions(records, "bandwidth", (a, b)).values))
    return out


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
