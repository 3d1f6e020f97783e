"""`clusterbench qualify --profile P`: a profile's suite run, stored as one group, validated,
reported (HTML, JUnit) with exit 0/1/2; profile suites validated strictly."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from json_schema import check_lines
from judge_helpers import cli

from clusterbench.errors import UsageError
from clusterbench.judge.profiles import dump_profile, load_profile, parse_profile
from clusterbench.store import Store

xmlschema = pytest.importorskip("xmlschema", reason="xmlschema (test extra) validates against the JUnit XSD")
SCHEMA = xmlschema.XMLSchema(str(Path(__file__).parent / "data" / "schemas" / "junit-10.xsd"))
CRITERION = {"name": "c", "benchmark": "stream", "metric": "bandwidth", "op": ">=", "value": 1}


def test_cpu_smoke_end_to_end(capsys, db, tmp_path):
    html, xml = tmp_path / "smoke.html", tmp_path / "smoke.xml"
    rc, out, err = cli(capsys, "qualify", "--profile", "cpu-smoke", "--db", db, "-o", str(html),
                       "--junit", str(xml), "--node", "smoke01", "--json", "--tag", "site=lab")
    assert rc == 0, err
    lines = check_lines(out)                             # stdout holds only JSON lines, each valid
    assert [d["kind"] for d in lines[:4]] == ["step"] * 4 and all(d["exit"] == 0 for d in lines[:4])
    crit = [d for d in lines if d["kind"] == "criterion"]
    assert len(crit) == 5 and {d["status"] for d in crit} == {"pass"}
    summary = lines[-1]
    assert summary["kind"] == "summary" and summary["status"] == "pass" and summary["node"] == "smoke01"
    assert "Collective test: all_reduce" in err                # the steps' own tables went to stderr
    with Store.open(db) as s:
        runs = s.runs_with_tags({"qualify": summary["group"]})
    # the preflight and the four steps, one group, this node's, with the user's tag
    assert sorted(r.benchmark for r in runs) == ["coll", "gemm", "preflight", "stream", "transfer"]
    assert all(r.tags["node"] == "smoke01" and r.tags["profile"] == "cpu-smoke" and r.tags["site"] == "lab"
               for r in runs)
    assert summary["runs"] == sorted(r.id for r in runs if r.benchmark != "preflight")
    page = html.read_text()
    assert "clusterbench qualify cpu-smoke (smoke01)" in page and "stream Triad floor" in page
    assert (tmp_path / "smoke.md").is_file()
    SCHEMA.validate(str(xml))
    from xml.etree import ElementTree as ET

    suites = ET.parse(xml).getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["preflight smoke01", "qualify cpu-smoke steps",
                                               "validate cpu-smoke"]
    assert suites[1].get("tests") == "4" and suites[2].get("tests") == "5" and suites[2].get("failures") == "0"


def _profile(tmp_path, suite, criteria=None) -> Path:
    p = tmp_path / "p.yaml"
    p.write_text(json.dumps({"name": "t", "suite": suite, "criteria": criteria or [CRITERION]}))
    return p


def test_a_failing_criterion_and_a_failing_step(capsys, db, tmp_path):
    suite = [{"name": "small", "command": ["stream", "--device", "cpu", "-s", "1M", "-n", "3"]},
             {"name": "too big", "command": ["stream", "--device", "cpu", "-s", "64T", "-n", "3"]}]
    crit = [{"name": "Triad of a supercomputer", "benchmark": "stream", "metric": "bandwidth",
             "params": {"kernel": "Triad"}, "op": ">=", "value": 1e9, "unit": "GB/s"}]
    prof = _profile(tmp_path, suite, crit)
    xml = tmp_path / "q.xml"
    rc, out, err = cli(capsys, "qualify", "--profile", str(prof), "--db", db, "-o", str(tmp_path / "q.html"),
                       "--junit", str(xml), "--node", "n7", "--no-preflight", "--on-fail", "drain")
    assert rc == 1, err
    assert "# step 'too big' failed (exit 2): -s 70368744177664: 3 double arrays need" in err
    lines = out.splitlines()
    drain_line = lines[lines.index("# --on-fail drain (dry run, add --apply to run these):") + 1]
    argv = shlex.split(drain_line)
    assert argv[:4] == ["scontrol", "update", "NodeName=n7", "State=DRAIN"]
    assert argv[4].startswith("Reason=clusterbench: step too big exit 2; Triad of a supercomputer ")
    assert "FAIL: 1/2 step(s) ran, 0 pass, 1 fail" in lines[-1]
    SCHEMA.validate(str(xml))
    text = xml.read_text()
    assert '<error message="exit 2: -s 70368744177664' in text and "Triad of a supercomputer" in text


@pytest.mark.parametrize("suite, why", [
    ([{"name": "x", "command": ["results", "list"]}], "not a benchmark command"),
    ([{"name": "x", "command": ["stream", "--db", "/tmp/elsewhere.db"]}], "--db is set by qualify"),
    ([{"name": "x", "command": ["stream", "--json"]}], "--json is set by qualify"),
    ([{"name": "x", "command": "stream -n 5"}], "must be a non-empty list"),
    ([{"name": "x", "command": ["stream", "-n\n5"]}], "control character"),
    ([{"name": "x", "command": ["stream"], "timeout": 5}], "unknown key(s) timeout"),
    ([{"name": "x", "command": ["stream"]}, {"name": "x", "command": ["gemm"]}], "duplicate suite step"),
    ([], "non-empty list of steps"),
])
def test_suite_schema_is_strict(suite, why):
    with pytest.raises(UsageError, match=why.replace("(", r"\(").replace(")", r"\)")):
        parse_profile({"name": "t", "suite": suite, "criteria": [CRITERION]}, "t.yaml")


def test_bad_step_and_missing_suite_are_usage_errors_before_anything_runs(capsys, db, tmp_path):
    prof = _profile(tmp_path, [{"name": "ok", "command": ["stream", "--device", "cpu"]},
                               {"name": "typo", "command": ["gemm", "--dtipe", "fp32"]}])
    rc, _, err = cli(capsys, "qualify", "--profile", str(prof), "--db", db)
    assert rc == 2 and err.count("\n") == 1
    assert "suite step 'typo'" in err and "--dtipe" in err
    no_suite = tmp_path / "n.yaml"
    no_suite.write_text(json.dumps({"name": "n", "criteria": [CRITERION]}))
    rc, _, err = cli(capsys, "qualify", "--profile", str(no_suite), "--db", db)
    assert rc == 2 and "declares no suite" in err
    rc, _, err = cli(capsys, "qualify", "--profile", "cpu-smoke", "--db", db, "--launch", "k8s --nodes 2")
    assert rc == 2 and "--launch 'k8s'" in err
    with Store.open(db) as s:
        assert s.list_runs() == []


def test_builtin_suites_parse_and_dry_run(capsys, db):
    amd = load_profile("amd-mi300x-oem")
    names = [s.name for s in amd.suite]
    assert len(names) == 8 and any("Table 1" in n for n in names) and any("Table 6" in n for n in names)
    cmds = [list(s.command) for s in amd.suite]
    assert ["coll", "all_reduce", "-b", "8G", "-e", "8G"] in cmds
    assert {c[2] for c in cmds if c[:2] == ["gemm", "--preset"]} == {
        "rocblas-fp32-4k", "rocblas-half-batched", "rocblas-int8-batched"}
    assert load_profile("cpu-smoke").suite
    # a profile dumped (baseline create) and loaded again keeps its suite
    assert parse_profile(__import__("yaml").safe_load(dump_profile(amd)), "x").suite == amd.suite
    rc, out, err = cli(capsys, "qualify", "--profile", "amd-mi300x-oem", "--dry-run", "--db", db,
                       "--launch", "slurm --nodes 2 --gpus-per-node 8 --submit")
    assert rc == 0, err
    steps = [shlex.split(line) for line in out.splitlines() if not line.startswith("#")]
    assert len(steps) == 8
    first = steps[0]
    sep = first.index("--")
    assert first[:sep] == ["clusterbench", "launch", "slurm", "--nodes", "2", "--gpus-per-node", "8", "--submit",
                           "--db", db]
    assert first[sep + 1:sep + 4] == ["transfer", "--matrix", "a2a"]
    assert "profile=amd-mi300x-oem" in first and not any(w.startswith("node=") for w in first)
    with Store.open(db) as s:
        assert s.list_runs() == []


@pytest.mark.parametrize("command, launch, word", [
    (["stream", "--help"], None, "--help"),                           # would print help and pass
    (["stream", "--device", "cpu"], "slurm --nodes 2 --bogus", "--bogus"),   # a launcher option
    (["stream", "--device", "cpu"], "slurm --nodes 2", None),          # fine: the control case
])
def test_steps_that_would_not_run_are_refused_before_anything_runs(capsys, db, tmp_path, command, launch, word):
    prof = _profile(tmp_path, [{"name": "s", "command": command}])
    rc, out, err = cli(capsys, "qualify", "--profile", str(prof), "--db", db, "--dry-run",
                       *(["--launch", launch] if launch else []))
    if word is None:
        assert rc == 0, err
        return
    assert rc == 2 and err.count("\n") == 1 and "suite step 's'" in err and word in err
    assert "Usage" not in out


def test_dry_run_json_is_one_step_line_per_step(capsys, db):
    rc, out, err = cli(capsys, "qualify", "--profile", "cpu-smoke", "--dry-run", "--json", "--db", db)
    assert rc == 0, err
    lines = check_lines(out)
    suite = load_profile("cpu-smoke").suite
    assert [(d["kind"], d["name"], d["exit"]) for d in lines] == [("step", s.name, None) for s in suite]
    assert all(d["argv"][0] == "clusterbench" and d["argv"][1:1 + len(d["command"])] == d["command"]
               for d in lines)
