"""Probed leftovers: a tag key given twice with two values, a new SQLite file left behind when
the store could not be made ready, ``clusterbench run`` silent about its steps when a rank dies
or a signal stops it, and a torchrun environment set only by half."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tmpfs_helpers import small_tmpfs

from clusterbench.cli import main
from clusterbench.cli.options import parse_tags
from clusterbench.errors import StoreError, UsageError
from clusterbench.ranks.env import detect
from clusterbench.records import Measurement, Run
from clusterbench.store import Store

SRC = Path(__file__).resolve().parent.parent / "src"
TESTS = Path(__file__).resolve().parent


# ---- 1. a tag key given twice ----

def test_a_tag_key_given_twice_with_two_values_is_refused():
    with pytest.raises(UsageError, match=r"tag 'a' given twice with different values, 'b' and 'c'"):
        parse_tags(["a=b", "a=c"])
    assert parse_tags(["a=b", " a = b ", "c=d"]) == {"a": "b", "c": "d"}   # the same value twice is one tag


@pytest.mark.parametrize("argv", [
    ["coll", "all_reduce", "-b", "8", "-e", "8", "--np", "2", "--tag", "a=b", "--tag", "a=c"],
    ["import", "-", "--tag", "a=b", "--tag", "a= c"],
    ["results", "tag", "1", "a=b", "a=c"],
], ids=["coll", "import", "results-tag"])
def test_every_command_refuses_a_tag_key_with_two_values(argv, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--db", str(tmp_path / "t.db")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "given twice with different values" in err and "Traceback" not in err
    assert not (tmp_path / "t.db").exists()   # refused before anything ran or was opened


# ---- 2. a new database that could not be made ready ----

def _failing_migration(monkeypatch, exc: BaseException) -> None:
    def fail(self):
        # what a full disk does half-way: the first migration committed, the next one fails
        with self.db.write():
            self.db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
        with self.db.write():
            self.db.execute("CREATE TABLE IF NOT EXISTS half (x TEXT)")
            raise exc

    monkeypatch.setattr(Store, "migrate", fail)


def test_a_new_database_that_could_not_be_migrated_is_removed(tmp_path, monkeypatch):
    db = tmp_path / "new.db"
    _failing_migration(monkeypatch, StoreError("results database is not usable: database or disk is full"))
    with pytest.raises(StoreError):
        Store.open(str(db))
    assert sorted(os.listdir(tmp_path)) == []


def test_ctrl_c_while_a_new_database_is_migrated_removes_it(tmp_path, monkeypatch):
    db = tmp_path / "new.db"
    _failing_migration(monkeypatch, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        Store.open(str(db))
    assert sorted(os.listdir(tmp_path)) == []


def test_a_database_that_existed_is_never_removed(tmp_path, monkeypatch):
    ready, empty = tmp_path / "ready.db", tmp_path / "empty.db"
    with Store.open(str(ready)) as store:
        store.save_run(Run(benchmark="selftest"), [Measurement("selftest", "value", 1.0, "", {})])
    empty.touch()
    _failing_migration(monkeypatch, StoreError("results database is not usable: database or disk is full"))
    for db in (ready, empty):
        with pytest.raises(StoreError):
            Store.open(str(db))
    monkeypatch.undo()
    assert empty.exists()
    with Store.open(str(ready)) as store:
        assert len(store.list_runs()) == 1


def test_a_new_database_made_ready_stays(tmp_path):
    Store.open(str(tmp_path / "new.db")).close()
    with Store.open(str(tmp_path / "new.db"), create=False) as store:
        assert store.list_runs() == []


@pytest.fixture
def tiny_fs(tmp_path):
    """A directory on a 300 KiB tmpfs (root only; skipped where mount is refused)."""
    with small_tmpfs(tmp_path / "tiny", "300k") as mnt:
        yield mnt


@pytest.mark.parametrize("leave_kib", [8, 64], ids=["open-fails", "migration-fails"])
def test_a_benchmark_refused_on_a_full_disk_leaves_no_database(tiny_fs, leave_kib):
    st = os.statvfs(tiny_fs)
    with open(tiny_fs / "filler", "wb") as f:
        f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - leave_kib * 1024))
    db = tiny_fs / "x.db"
    p = subprocess.run([sys.executable, "-m", "clusterbench", "coll", "all_reduce", "-b", "8", "-e", "8", "--np", "2",
                        "--device", "cpu", "--db", str(db)], capture_output=True, text=True, timeout=240,
                       stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert p.returncode == 2 and "no space left" in p.stderr, p.stderr
    assert sorted(os.listdir(tiny_fs)) == ["filler"]


# ---- 3. the suite's closing line after a dead rank or a signal ----

_SUITE = """
import sys
from clusterbench.bench import suite
from clusterbench.bench.suite import SuiteEntry
import rankfns as t
suite.SUITE[:] = [SuiteEntry("first", t.step_ok, cpu=None), SuiteEntry("second", getattr(t, sys.argv[1]), cpu=None),
                  SuiteEntry("third", t.step_ok, cpu=None)]
from clusterbench.cli import main
main(["run", "--no-preflight", "--np", "2", "--device", "cpu", "--telemetry-interval", "0", "--timeout", "60",
      "--db", sys.argv[2], *sys.argv[3:]])
"""


def _suite_run(step: str, db: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _SUITE, step, str(db), *extra], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=240, stdin=subprocess.DEVNULL,
                          start_new_session=True, env={**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS / 'helpers'}"})


@pytest.mark.parametrize("step, code, status", [("step_killed", 1, "incomplete"),
                                                ("step_ctrl_c", 130, "interrupted")])
def test_run_says_each_steps_outcome_when_it_is_cut_short(tmp_path, step, code, status):
    db = tmp_path / "r.db"
    p = _suite_run(step, db)
    lines = p.stdout.splitlines()
    assert p.returncode == code, p.stdout
    assert "Traceback" not in p.stdout
    closing = "# suite: first: done; second: started; third: not run"
    assert lines.count(closing) == 1, p.stdout
    errors = [i for i, line in enumerate(lines) if line.startswith("clusterbench: error:")]
    assert len(errors) == 1 and lines.index(closing) < errors[0], p.stdout
    with Store.open(str(db), create=False) as store:
        (run,) = store.list_runs()
        assert run.status == status
        assert not any(n.get("benchmark") == "suite" for n in run.meta.get("notes", []))   # nothing stored changed


def test_run_json_output_stays_json_when_a_rank_dies(tmp_path):
    import json

    p = _suite_run("step_killed", tmp_path / "r.db", "--json", "-q")
    out = [line for line in p.stdout.splitlines() if not line.startswith("clusterbench: error:")]
    assert p.returncode == 1 and all(json.loads(line)["kind"] for line in out), p.stdout


# ---- 4. a torchrun environment set by half ----

@pytest.mark.parametrize("env, given, missing", [
    ({"RANK": "0"}, "RANK", "WORLD_SIZE"),
    ({"WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "n1"}, "WORLD_SIZE", "RANK"),
    ({"RANK": "1", "SLURM_PROCID": "1", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "2"}, "RANK", "WORLD_SIZE"),
])
def test_half_a_torchrun_environment_is_refused(env, given, missing):
    with pytest.raises(UsageError) as e:
        detect(env)
    text = str(e.value)
    assert "\n" not in text and f"{given} is set but {missing} is not" in text


def test_no_launcher_variables_is_no_launcher():
    assert detect({"LOCAL_RANK": "0", "PATH": "/bin"}) is None


@pytest.mark.parametrize("tag", ["qualify=mine", "profile=other", "node=elsewhere"])
def test_qualify_refuses_a_tag_it_sets_itself(capsys, db, tag):
    from judge_helpers import cli

    rc, out, err = cli(capsys, "qualify", "--profile", "cpu-smoke", "--db", db, "--dry-run", "--tag", tag)
    assert rc == 2 and err.count("\n") == 1 and "qualify sets that tag itself" in err, err


def test_run_says_a_half_launcher_environment_once(monkeypatch, capsys, db):
    from judge_helpers import cli

    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    rc, out, err = cli(capsys, "run", "--db", db)
    assert rc == 2 and err.count("RANK is set but WORLD_SIZE is not") == 1 and "preflight" not in err, err
