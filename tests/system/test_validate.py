"""System tests (validate): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

from child_cli import _cb, _deep_array, _one_error
from drain_profiles import EVIL, PROFILE, PWNED, _stream_runs
from judge_helpers import cli, json_lines
from slurm_fixtures import _node

from clusterbench.launch import drain


def _laughs(levels: int) -> str:
    lines = ['      l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"      l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(["name: lol", "criteria:", "  - name: x", "    benchmark: coll", "    metric: busbw",
                      "    op: '>='", "    value: 1", "    params:", *lines]) + "\n"


def test_yaml_nested_thousands_deep_is_refused(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: deep\ncriteria: " + _deep_array(20_000) + "\n")
    err = _one_error(_cb("validate", "--profile", deep, "--db", tmp_path / "cb.db"))
    assert err == f"clusterbench: error: profile {deep}: nested more than {sys.getrecursionlimit()} levels deep"


def test_billion_laughs_profile_is_refused_not_expanded(tmp_path):
    """Nine levels of nine aliases are 9^9 (387 million) strings once written out."""
    bomb = tmp_path / "lol.yaml"
    bomb.write_text(_laughs(9))
    p = _cb("validate", "--profile", bomb, "--db", tmp_path / "cb.db")   # expanded, it would not end
    err = _one_error(p)
    assert err == f"clusterbench: error: profile {bomb}: its aliases expand it past 100000 values: " \
                  "refused, not expanded"
    assert p.stdout == ""


def test_cli_dry_run_prints_the_exact_commands(capsys, db, tmp_path):
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE)
    _stream_runs(db, {"n1": 90.0, "n2": 120.0, "n3": 130.0}, "a")
    rc, out, err = cli(capsys, "validate", "check=a", "--profile", str(prof), "--db", db, "--on-fail", "drain")
    assert rc == 1, err
    lines = out.splitlines()
    start = lines.index("# --on-fail drain (dry run, add --apply to run these):")
    cmd = shlex.split(lines[start + 1])
    assert cmd == ["scontrol", "update", "NodeName=n1", "State=DRAIN", f"Reason=clusterbench: {EVIL} 90 GB/s >= 100 GB/s"]
    # passing nodes are left alone without --undrain; n1's state is read first (where scontrol
    # has no cluster to ask, a note says so and the drain is still planned)
    assert all(line.startswith("# n1: state not read") for line in lines[start + 2:])
    rc, out, err = cli(capsys, "validate", "check=a", "--profile", str(prof), "--db", db, "--on-fail", "taint",
                       "--json")
    acts = [d for d in json_lines(out) if d["kind"] == "drain"]
    assert [(a["node"], a["action"], a["dry_run"], a["applied"]) for a in acts] == [("n1", "taint", True, False)]
    crit = next(d for d in json_lines(out) if d["kind"] == "criterion")
    assert crit["failing"] == {"n1": 90.0}
    assert acts[0]["commands"] == drain.taint_argv("n1", acts[0]["reason"])
    assert not os.path.exists(PWNED)


def test_slurm_drain_resume_and_someone_elses_drain(slurm, capsys, db, tmp_path, monkeypatch):
    for k, v in slurm.items():
        monkeypatch.setenv(k, v)
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE)
    subprocess.run(["scontrol", "update", "NodeName=n2", "State=DRAIN", "Reason=RMA ticket 42"],
                   env=slurm, check=True, timeout=30)
    _stream_runs(db, {"n1": 90.0, "n2": 120.0}, "night1")
    rc, out, err = cli(capsys, "validate", "check=night1", "--profile", str(prof), "--db", db,
                       "--on-fail", "drain", "--apply", "--undrain", "--json")
    assert rc == 1, err
    acts = {d["node"]: d for d in json_lines(out) if d["kind"] == "drain"}
    assert acts["n1"]["action"] == "drain" and acts["n1"]["applied"] and not acts["n1"]["dry_run"]
    assert acts["n2"]["action"] == "keep" and "RMA ticket 42" in acts["n2"]["note"]
    n1 = _node(slurm, "n1")
    assert n1.drained and n1.reason == f"clusterbench: {EVIL} 90 GB/s >= 100 GB/s"   # literally
    assert not os.path.exists(PWNED)
    assert _node(slurm, "n2").reason == "RMA ticket 42"

    # the next night both pass: n1 (drained by clusterbench) comes back, n2 stays out
    _stream_runs(db, {"n1": 110.0, "n2": 121.0}, "night2")
    rc, out, err = cli(capsys, "validate", "check=night2", "--profile", str(prof), "--db", db,
                       "--on-fail", "drain", "--apply", "--undrain")
    assert rc == 0, err
    assert "scontrol update NodeName=n1 State=RESUME" in out
    assert "# n2: passes, but drained by someone else (RMA ticket 42): left drained" in out
    assert not _node(slurm, "n1").drained
    n2 = _node(slurm, "n2")
    assert n2.drained and n2.reason == "RMA ticket 42"

    # a third night n2 fails while a person has it drained: their reason stays (a clusterbench
    # reason there would let a later --undrain put it back in service)
    _stream_runs(db, {"n1": 110.0, "n2": 80.0}, "night3")
    rc, out, err = cli(capsys, "validate", "check=night3", "--profile", str(prof), "--db", db,
                       "--on-fail", "drain", "--apply", "--undrain", "--json")
    assert rc == 1, err
    acts = {d["node"]: d for d in json_lines(out) if d["kind"] == "drain"}
    assert acts["n2"]["action"] == "keep" and "RMA ticket 42" in acts["n2"]["note"] and not acts["n2"]["commands"]
    assert _node(slurm, "n2").reason == "RMA ticket 42"
    subprocess.run(["scontrol", "update", "NodeName=n2", "State=RESUME"], env=slurm, check=True, timeout=30)


def test_a_real_cpu_stream_run_is_not_judged_by_the_mi300x_profile(tmp_path):
    """validate --profile amd-mi300x-oem on a CPU stream run failed all five BabelStream criteria
    (exit 1), and export openmetrics gave the host a 0 gauge for each."""
    db = str(tmp_path / "r.db")
    p = _cb("stream", "--device", "cpu", "-s", "64K", "-n", "3", "--telemetry-interval", "0", "--db", db)
    assert p.returncode == 0, p.stderr
    p = _cb("validate", "last", "--profile", "amd-mi300x-oem", "--json", "--db", db)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    crit = [x for x in lines if x["kind"] == "criterion"]
    assert crit and {(x["status"], x["reason"]) for x in crit} == {("skipped", "hardware")}
    assert lines[-1]["exit_code"] == 0 and lines[-1]["counts"]["skipped"] == len(crit)
    p = _cb("export", "openmetrics", "--profile", "amd-mi300x-oem", "--db", db)
    assert p.returncode == 0 and "clusterbench_stream_bandwidth_bytes_per_second" in p.stdout
    assert "clusterbench_criterion_passed" not in p.stdout
