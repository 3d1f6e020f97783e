"""Tests of clusterbench.cli.commands.qualify: ``clusterbench qualify --profile P``."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from json_schema import check_lines
from judge_helpers import cli
from qualify_profiles import (
    CASES,
    CRITERION,
    IDS,
    PROFILE,
    REFUSED,
    _profile,
    _runs,
    _sweep_qualify_profile,
)

from clusterbench.judge.profiles import dump_profile, load_profile, parse_profile
from clusterbench.store import Store

CRITERION_check_params = {"name": "triad", "benchmark": "stream", "metric": "bandwidth", "op": ">=", "value": 1e-9,
             "unit": "GB/s"}


IDS_check_params = [" ".join(bad) for _, bad, _ in CASES]


def _check_params_profile(tmp_path: Path, steps: list[list[str]]) -> str:
    p = tmp_path / "probe.yaml"
    p.write_text(json.dumps({"name": "probe", "criteria": [CRITERION_check_params],
                             "suite": [{"name": f"s{i}", "command": s} for i, s in enumerate(steps)]}))
    return str(p)


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
    assert any("Table 1" in n for n in names) and any("Table 6" in n for n in names)
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
    assert len(steps) == len(amd.suite)     # a command line per step of the profile's suite
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


@pytest.mark.parametrize("argv, words", REFUSED[:2] + REFUSED[5:6], ids=IDS[:2] + IDS[5:6])
def test_qualify_and_sweep_refuse_them_before_anything_runs(capsys, db, tmp_path, argv, words):
    profile = tmp_path / "p.yaml"
    profile.write_text(json.dumps({"name": "p", "criteria": [
        {"name": "t", "benchmark": "stream", "metric": "bandwidth", "op": ">=", "value": 1e-9, "unit": "GB/s"}],
        "suite": [{"name": "s0", "command": argv}]}))
    rc, out, err = cli(capsys, "qualify", "--profile", profile, "--db", db, "--dry-run")
    assert rc == 2 and out == "" and err.count("\n") == 1 and "suite step 's0': " in err and words in err, err
    rc, out, err = cli(capsys, "sweep", "--hosts", "a,b", "--db", db, "--", *argv)
    assert rc == 2 and err.count("\n") == 1 and "the test after --: " in err and words in err, err
    assert not Path(db).exists()


@pytest.mark.parametrize("good, bad, words", CASES, ids=IDS_check_params)
def test_qualify_refuses_a_bad_step_value_before_any_step_runs(capsys, db, tmp_path, good, bad, words):
    rc, out, err = cli(capsys, "qualify", "--profile", _check_params_profile(tmp_path, [good]), "--db", db, "--dry-run")
    assert rc == 0 and "s0" in out, err
    report = tmp_path / "q.html"
    rc, out, err = cli(capsys, "qualify", "--profile", _check_params_profile(tmp_path, [good, bad]), "--db", db,
                       "--no-preflight", "-o", str(report), "--json")
    assert rc == 2 and err.count("\n") == 1 and out == "", err
    assert "suite step 's1'" in err and words in err
    assert _runs(db) == [] and not report.exists()


@pytest.mark.parametrize("good, bad, words", CASES, ids=IDS_check_params)
def test_the_refusal_is_the_line_the_command_prints(capsys, db, tmp_path, good, bad, words):
    rc, _, own = cli(capsys, *bad, "--db", db)
    assert rc == 2 and words in own, own
    rc, _, err = cli(capsys, "qualify", "--profile", _check_params_profile(tmp_path, [bad]), "--db", db, "--dry-run")
    assert rc == 2 and err == own.replace("error: ", "error: suite step 's0': ", 1)


@pytest.mark.parametrize("good, bad, words", CASES[::3], ids=IDS_check_params[::3])
def test_qualify_under_launch_refuses_the_bad_step_too(capsys, db, tmp_path, good, bad, words):
    rc, _, err = cli(capsys, "qualify", "--profile", _check_params_profile(tmp_path, [good, bad]), "--db", db,
                     "--launch", "torchrun --nodes 2", "--dry-run")
    assert rc == 2 and "suite step 's1'" in err and words in err, err


@pytest.mark.parametrize("tag", ["qualify=mine", "profile=other", "node=elsewhere"])
def test_qualify_refuses_a_tag_it_sets_itself(capsys, db, tag):
    from judge_helpers import cli

    rc, out, err = cli(capsys, "qualify", "--profile", "cpu-smoke", "--db", db, "--dry-run", "--tag", tag)
    assert rc == 2 and err.count("\n") == 1 and "qualify sets that tag itself" in err, err


@pytest.mark.parametrize("args, words", [
    (["--node", "gpu[1-2]", "--on-fail", "drain"], "invalid node name 'gpu[1-2]'"),
    (["--on-fail", "drain", "--apply"], "scontrol not found"),
    (["--launch", "slurm --nodes 2"], "--submit"),                  # prints a script, stores nothing
    (["--launch", "slurm --nodes 2 --submit --no-wait"], "--submit"),
    (["--launch", "mpi --nodes 2 --hosts a,b --print"], "--print"),
])
def test_qualify_refuses_before_any_step_runs(capsys, db, tmp_path, monkeypatch, args, words):
    monkeypatch.setenv("PATH", str(tmp_path))   # no scontrol, no sbatch: nothing may reach them
    rc, out, err = cli(capsys, "qualify", "--profile", _sweep_qualify_profile(tmp_path), "--db", db, "--no-preflight",
                       "-o", str(tmp_path / "q.html"), "--json", *args)
    assert rc == 2 and words in err and out == "", err
    assert _runs(db) == [] and not (tmp_path / "q.html").exists()


def test_qualify_refuses_a_step_value_every_node_would_fail(capsys, db, tmp_path):
    """A step's value that only the command body checked (coll -b 1X) ran every step before it and
    failed its own on every node: now a usage error before any step runs."""
    bad = {**PROFILE, "suite": [*PROFILE["suite"], {"name": "ar", "command": ["coll", "all_reduce", "-b", "1X"]}]}
    p = tmp_path / "bad.yaml"
    p.write_text(json.dumps(bad))
    rc, out, err = cli(capsys, "qualify", "--profile", str(p), "--db", db, "--no-preflight",
                       "-o", str(tmp_path / "q.html"), "--json")
    assert rc == 2 and "suite step 'ar'" in err and "invalid minbytes (-b) '1X'" in err and out == "", err
    assert _runs(db) == []


@pytest.mark.parametrize("name", ["nvidia-h100-sxm", "nvidia-h200", "amd-mi300x-oem"])
def test_a_gpu_profile_on_a_node_without_a_gpu_is_refused_before_its_suite(capsys, db, monkeypatch, name):
    """Its suite would run 8192^3 GEMMs on the CPU for hours and then skip every criterion."""
    from clusterbench.envinfo import inventory

    monkeypatch.setattr(inventory, "cached", lambda: {"gpus": [], "cpu": {"model": "AMD EPYC"}})
    rc, _, err = cli(capsys, "qualify", "--profile", name, "--no-preflight", "--db", db)
    assert rc == 2 and err.count("\n") == 1
    assert err.startswith(f"clusterbench: error: qualify --profile {name}: this node has no GPU (CPU AMD EPYC): "
                          "the profile is for devices ")
    with Store.open(db) as s:
        assert s.list_runs() == []
    # the dry run only prints the steps, and the smoke test is for any CPU
    assert cli(capsys, "qualify", "--profile", name, "--dry-run", "--db", db)[0] == 0

