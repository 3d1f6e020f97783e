"""``launch mpi`` succeeds only when rank 0 stored a run: an mpirun that exits 0 having run
nothing (or having run the ranks where they could not store) is an error, one line, exit 1.

The mpirun here is a stand-in named with ``--mpirun``: one that runs nothing, and one that runs
the command as the single rank of an Open MPI job (the OMPI_COMM_WORLD_* variables and the
``-x`` environment, as mpirun sets them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from clusterbench.store import Store

SRC = str(Path(__file__).resolve().parents[2] / "src")

_SINGLE_RANK = """#!{python}
# mpirun ... -x K=V ... clusterbench WORDS: runs WORDS as rank 0 of 1
import os, sys
args = sys.argv[1:]
at = args.index("clusterbench")
env = dict(os.environ, OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="1",
           OMPI_COMM_WORLD_LOCAL_RANK="0", OMPI_COMM_WORLD_LOCAL_SIZE="1")
env.update(a.split("=", 1) for prev, a in zip(args[:at], args[1:at]) if prev == "-x")
os.execve({python!r}, [{python!r}, "-m", "clusterbench", *args[at + 1:]], env)
"""

COLL = ["coll", "all_reduce", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0", "--device", "cpu"]


def _fake(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def _launch(mpirun: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    env.pop("CLUSTERBENCH_DB", None)
    return subprocess.run([sys.executable, "-m", "clusterbench", "launch", "mpi", "--hosts", "localhost",
                           "--mpirun", mpirun, *args], capture_output=True, text=True, timeout=180, env=env)


def test_mpirun_that_exits_0_without_a_stored_run_is_an_error(tmp_path):
    db = tmp_path / "r.db"
    r = _launch(_fake(tmp_path, "mpirun", "#!/bin/sh\nexit 0\n"), "--", *COLL, "--db", str(db))
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("clusterbench: error: mpirun exited 0 but rank 0 "
                                                   f"stored no run in {db}"), r.stderr
    assert not db.exists()   # checking made no database


def test_run_stored_by_rank_0_is_found_by_its_launch_id(tmp_path):
    db = tmp_path / "r.db"
    r = _launch(_fake(tmp_path, "mpirun", _SINGLE_RANK.format(python=sys.executable)),
                "--db", str(db), "--", *COLL)
    assert r.returncode == 0, r.stderr
    with Store.open(str(db)) as store:
        (run,) = store.list_runs()
    assert run.status == "complete" and run.meta.get("launcher") == "mpi"
    assert len(run.tags["launch_id"]) == 12


def test_a_run_in_another_database_is_not_this_launch_s(tmp_path):
    """Rank 0 stored, but not where the launch said (the command's own --db loses to launch
    --db, so the stand-in drops the launch's): the launcher does not find it and says so."""
    mine, other = tmp_path / "mine.db", tmp_path / "other.db"
    drop_db = _SINGLE_RANK.format(python=sys.executable).replace(
        "os.execve(", f"args = [a if a != {str(mine)!r} else {str(other)!r} for a in args]\nos.execve(")
    r = _launch(_fake(tmp_path, "mpirun", drop_db), "--db", str(mine), "--", *COLL)
    assert r.returncode == 1 and "stored no run in" in r.stderr, r.stderr
    with Store.open(str(other)) as store:
        assert len(store.list_runs()) == 1
