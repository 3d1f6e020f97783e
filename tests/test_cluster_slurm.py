"""A real Slurm on this host (slurmctld + two slurmd "nodes", started here, stopped afterwards)
runs ``clusterbench launch slurm --submit`` end to end; sbatch missing from PATH is one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from json_schema import check_lines
from slurm_fixtures import slurm_or_skip

from clusterbench.store import Store


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    yield from slurm_or_skip(tmp_path_factory.mktemp("slurm"))


def _cb(args, env, timeout=180):
    return subprocess.run([sys.executable, "-m", "clusterbench", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_submit_runs_end_to_end_and_imports_the_run(slurm, tmp_path):
    db = tmp_path / "slurm.db"
    out = tmp_path / "job-%j.out"
    r = _cb(["launch", "slurm", "--submit", "--nodes", "2", "--time", "5", "--output", str(out),
             "--env", "MASTER_ADDR=127.0.0.1", "--env", "OMP_NUM_THREADS=1",
             "--env", "NCCL_IB_QPS_PER_CONNECTION=4", "--wait-timeout", "150", "--db", str(db), "--json",
             "--", "coll", "all_reduce", "-b", "64K", "-e", "256K", "-n", "3", "-w", "1",
             "--device", "cpu", "--tag", "who=$(touch /tmp/cb6-pwned)"], slurm)
    logs = "\n".join(p.read_text() for p in tmp_path.glob("job-*.out"))
    assert r.returncode == 0, r.stderr + logs
    assert "COMPLETED" in r.stderr and "2 rank(s)" in r.stderr
    lines = check_lines(r.stdout)  # --json: the stored run's lines, valid against the schema
    run_line = next(x for x in lines if x["kind"] == "run")   # then its noise warnings, if any
    assert run_line["status"] == "complete" and run_line["ranks"] == 2
    assert {x["kind"] for x in lines[lines.index(run_line) + 1:]} <= {"warning"}
    with Store.open(db) as store:
        runs = store.list_runs()
        assert len(runs) == 1
        run = runs[0]
        assert run.status == "complete" and run.ranks == 2
        assert run.meta.get("launcher") == "slurm"
        assert run.tags["who"] == "$(touch /tmp/cb6-pwned)"   # a tag is data, never code
        assert store.measurements(run.id)
    assert not os.path.exists("/tmp/cb6-pwned")


def test_sbatch_missing_is_one_line(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}  # nothing on PATH
    r = _cb(["launch", "slurm", "--submit", "--nodes", "2", "--db", str(tmp_path / "x.db"), "--", "net"],
            env, timeout=60)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("clusterbench: error: sbatch not found")
