"""sweep and qualify refuse, before any node or step runs, input that would only fail (or act on
the wrong nodes) at the end: a test every node would fail alike, a metric no benchmark records,
a node name --on-fail refuses, --apply without its tool, a launch that stores nothing. And the
report qualify names is the file it wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judge_helpers import cli

from clusterbench.sweep import run as sweep_run
from clusterbench.sweep.analyze import SubsetResult

STEP = ["stream", "--device", "cpu", "-s", "1K", "-n", "2"]
PROFILE = {"name": "probe", "suite": [{"name": "stream", "command": STEP}],
           "criteria": [{"name": "triad", "benchmark": "stream", "metric": "bandwidth",
                         "params": {"kernel": "Triad"}, "op": ">=", "value": 1e-9, "unit": "GB/s"}]}


@pytest.fixture
def launched(monkeypatch) -> list[tuple[str, ...]]:
    """The subsets a sweep launches (none really: node c is slow in every subset it is in)."""
    seen: list[tuple[str, ...]] = []

    def fake(cfg, hosts, stage, index):  # type: ignore[no-untyped-def]
        seen.append(tuple(hosts))
        return SubsetResult(tuple(hosts), stage, 20.0 if "c" in hosts else 40.0 + index % 3 * 0.1, "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    return seen


def _runs(db: str) -> list[object]:
    from clusterbench.store import Store

    if not Path(db).exists():
        return []
    with Store.open(db) as s:
        return list(s.list_runs())


@pytest.mark.parametrize("args, words", [
    (["--", "coll", "all_reduce", "--iters", "x"], "the test after --"),      # every node would fail it
    (["--", "coll", "all_reduce", "--bogus"], "--bogus"),
    (["--", "coll", "all_reduce", "-b", "1X"], "invalid minbytes (-b) '1X'"),   # a value, not a type
    (["--", "coll", "nosuch"], "unknown collective 'nosuch'"),
    (["--metric", "bandwidht", "--", "net"], "bandwidht"),                     # no record would match
    (["--metric", "bandwidth", "--", "results", "list"], "not a benchmark command"),
])
def test_sweep_refuses_a_test_every_node_would_fail(capsys, db, launched, args, words):
    rc, out, err = cli(capsys, "sweep", "--hosts", "a,b,c,d", "--db", db, "--on-fail", "drain", *args)
    assert rc == 2 and err.count("\n") == 1 and words in err, err
    assert launched == [] and "scontrol" not in out and _runs(db) == []


def test_sweep_refuses_a_node_name_on_fail_refuses_before_any_node_runs(capsys, db, launched):
    rc, _, err = cli(capsys, "sweep", "--hosts", "10.0.0.1,c,fe80::2", "--db", db, "--on-fail", "drain",
                     "--", "coll", "all_reduce")
    assert rc == 2 and "invalid node name 'fe80::2'" in err
    assert launched == [] and _runs(db) == []


def test_sweep_apply_without_the_tool_is_refused_before_any_node_runs(capsys, db, launched, tmp_path,
                                                                       monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    rc, _, err = cli(capsys, "sweep", "--hosts", "a,b,c,d", "--db", db, "--on-fail", "taint", "--apply",
                     "--", "coll", "all_reduce")
    assert rc == 2 and "kubectl not found" in err
    assert launched == [] and _runs(db) == []


def _profile(tmp_path: Path) -> str:
    p = tmp_path / "probe.yaml"
    p.write_text(json.dumps(PROFILE))
    return str(p)


@pytest.mark.parametrize("args, words", [
    (["--node", "gpu[1-2]", "--on-fail", "drain"], "invalid node name 'gpu[1-2]'"),
    (["--on-fail", "drain", "--apply"], "scontrol not found"),
    (["--launch", "slurm --nodes 2"], "--submit"),                  # prints a script, stores nothing
    (["--launch", "slurm --nodes 2 --submit --no-wait"], "--submit"),
    (["--launch", "mpi --nodes 2 --hosts a,b --print"], "--print"),
])
def test_qualify_refuses_before_any_step_runs(capsys, db, tmp_path, monkeypatch, args, words):
    monkeypatch.setenv("PATH", str(tmp_path))   # no scontrol, no sbatch: nothing may reach them
    rc, out, err = cli(capsys, "qualify", "--profile", _profile(tmp_path), "--db", db, "--no-preflight",
                       "-o", str(tmp_path / "q.html"), "--json", *args)
    assert rc == 2 and words in err and out == "", err
    assert _runs(db) == [] and not (tmp_path / "q.html").exists()


def test_qualify_names_the_report_it_wrote(capsys, db, tmp_path):
    rc, out, err = cli(capsys, "qualify", "--profile", _profile(tmp_path), "--db", db, "--no-preflight",
                       "-o", str(tmp_path / "nightly"), "--json")
    assert rc == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["kind"] == "summary" and summary["report"] == str(tmp_path / "nightly.html")
    assert Path(summary["report"]).is_file()


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
