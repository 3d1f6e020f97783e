"""System tests (qualify): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import psutil
import pytest
from json_schema import check_lines
from judge_helpers import cli
from junit_xml import SCHEMA, xmlschema
from paths import DATA
from probe_profiles import SMALL_STREAM, STREAM_FLOOR
from process_helpers import assert_all_gone, process_family, wait_until
from qualify_profiles import _profile, _sweep_qualify_profile

from clusterbench.records import INTERRUPTED
from clusterbench.store import Store

SCHEMA_qualify_preflight = xmlschema.XMLSchema(str(DATA / "schemas" / "junit-10.xsd"))


def _qualify_preflight_profile(tmp_path: Path, suite: list[dict], criteria: list[dict]) -> Path:
    p = tmp_path / "probe.yaml"
    p.write_text(json.dumps({"name": "probe", "suite": suite, "criteria": criteria}))
    return p


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
    # the report's verdict says what qualify says: before, "NOISY: ..." and then "PASS" (2 CPU
    # ranks on a shared machine are noisy; a pass despite noise is a pass)
    verdicts = [line.split(":")[0] for line in err.splitlines()
                if line.split(":")[0] in ("PASS", "FAIL", "NOISY", "REGRESSION")]
    assert verdicts == ["PASS"], err[-3000:]
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


def test_sigterm_during_a_step_stops_the_suite(tmp_path):
    """A SIGTERM (a scheduler's time limit, systemd's stop, `timeout`) in a step stored that step
    as interrupted, and then the suite went on with every later step, ignoring further signals,
    and ended exit 1 as if a step had failed."""
    db = str(tmp_path / "q.db")
    profile = _qualify_preflight_profile(tmp_path, [
        {"name": "long", "command": ["stream", "--device", "cpu", "-s", "8M", "-n", "100000"]},
        {"name": "after", "command": SMALL_STREAM},
    ], [STREAM_FLOOR])
    proc = subprocess.Popen([sys.executable, "-m", "clusterbench", "qualify", "--profile", str(profile),
                             "--db", db, "--no-preflight", "--json", "-o", str(tmp_path / "q.html")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # the step's ranks run once the command has children (the fork server and its rank)
        wait_until(lambda: psutil.Process(proc.pid).children() or proc.poll() is not None, 120,
                   "the step's ranks started")
        assert proc.poll() is None and psutil.Process(proc.pid).children()
        family = process_family(proc)
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:   # a test that fails, not one that leaves a suite running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 143, err
    assert "step 2/2" not in err and "Traceback" not in err, err
    assert "qualify interrupted by SIGTERM in step 1 of 2" in err.splitlines()[-1]
    steps = [d for d in check_lines(out) if d["kind"] == "step"]
    assert [(d["name"], d["exit"]) for d in steps] == [("long", 143)]
    with Store.open(db) as s:
        runs = s.list_runs()
    assert [r.status for r in runs] == [INTERRUPTED]
    assert_all_gone(family)


def test_the_junit_steps_suite_has_the_time_its_steps_took(capsys, db, tmp_path):
    """The steps' suite said time="0.000" however long the steps ran."""
    xml = tmp_path / "q.xml"
    profile = _qualify_preflight_profile(tmp_path, [{"name": "s1", "command": SMALL_STREAM},
                                  {"name": "s2", "command": SMALL_STREAM}], [STREAM_FLOOR])
    rc, _, err = cli(capsys, "qualify", "--profile", profile, "--db", db, "--no-preflight",
                     "--junit", xml, "-o", tmp_path / "q.html")
    assert rc == 0, err
    SCHEMA_qualify_preflight.validate(str(xml))
    steps = next(s for s in ET.parse(xml).getroot().findall("testsuite") if s.get("name") == "qualify probe steps")
    cases = [float(tc.get("time")) for tc in steps.findall("testcase")]
    assert len(cases) == 2 and all(t > 0 for t in cases)
    assert float(steps.get("time")) == pytest.approx(sum(cases), abs=0.002)


def test_qualify_names_the_report_it_wrote(capsys, db, tmp_path):
    rc, out, err = cli(capsys, "qualify", "--profile", _sweep_qualify_profile(tmp_path), "--db", db, "--no-preflight",
                       "-o", str(tmp_path / "nightly"), "--json")
    assert rc == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["kind"] == "summary" and summary["report"] == str(tmp_path / "nightly.html")
    assert Path(summary["report"]).is_file()
