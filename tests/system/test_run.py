"""System tests (run): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import SRC, TESTS
from rankfns import SUITE_META, step_ok, step_skips

from clusterbench.bench import suite
from clusterbench.bench.suite import SuiteEntry
from clusterbench.cli import main
from clusterbench.families.collectives.spec import OPS
from clusterbench.records import COMPLETE
from clusterbench.store import Store

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


def test_run_stores_one_run_with_every_collective(tmp_path):
    db = str(tmp_path / "suite.db")
    # the whole default suite: about a minute on 2 idle cores (stream's 100 iterations of 2^25
    # doubles are most of it), minutes on a shared, loaded machine
    proc = subprocess.run([sys.executable, "-m", "clusterbench", "run", "--db", db], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert f"stored in {db}" in proc.stderr
    with Store.open(db) as store:
        (run,) = store.list_runs()
        ms = store.measurements(run.id)
    assert run.status == COMPLETE and run.benchmark == "suite" and run.ranks == 2
    assert set(OPS) <= {m.benchmark for m in ms}  # other suite steps may add their own benchmarks
    assert all(m.value == 0 for m in ms if m.benchmark in OPS and m.metric in ("wrong", "out_of_bounds"))
    assert proc.stdout.count("# Out of bounds values : 0 OK") == len(OPS)
    # memory bandwidth as `clusterbench stream` measures it: 2^25 doubles or 4x the cache, 100 iterations
    copy = next(m for m in ms if m.benchmark == "stream" and m.metric == "bandwidth" and m.params["kernel"] == "Copy")
    assert copy.params["array_size"] >= 1 << 25 and copy.params.get("memory", "main") == "main"
    assert "# CPU: 2 thread(s), double, 100 iterations" in proc.stdout


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


def test_run_json_carries_the_suite_steps(tmp_path, capsys, monkeypatch):
    import json

    monkeypatch.setattr(suite, "SUITE", [SuiteEntry("first", step_ok, cpu=None),
                                         SuiteEntry("third", step_skips, cpu=None)])
    with pytest.raises(SystemExit) as exc:
        main(["run", "--no-preflight", "--np", "2", "--json", "-q", "--db", str(tmp_path / "r.db")])
    out = capsys.readouterr().out

    def refuse(constant):
        raise ValueError(constant)

    lines = [json.loads(line, parse_constant=refuse) for line in out.splitlines()]
    assert exc.value.code == 0 and all("kind" in line for line in lines)
    run = next(line for line in lines if line["kind"] == "run")
    assert [s["status"] for s in run["meta"][SUITE_META]] == ["done", "done"]
    assert any(n["benchmark"] == SUITE_META for n in run["meta"]["notes"])


# -- warnings on a busy node ----------------------------------------------------------------------

def _busy_hogs(n: int) -> list[subprocess.Popen]:
    """``n`` processes that spin on the CPUs until killed (a node that other jobs share)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL,
                             start_new_session=True) for _ in range(n)]


def _python_child(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(SRC)})


def _cli_child(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return _python_child("-m", "clusterbench", *argv, timeout=timeout)


@pytest.fixture
def busy_node():
    hogs = _busy_hogs(max(2, os.cpu_count() or 2))
    try:
        yield hogs
    finally:
        for h in hogs:
            h.kill()
            h.wait(timeout=30)


# The default suite's steps with less work in each: the whole default run takes minutes on a
# 2-core node that hogs share (over 300 s on CI's), and the warnings are the same with less.
_SMALL_SUITE = """
import sys
from clusterbench.bench import suite
from clusterbench.bench.collectives.config import CollConfig
from clusterbench.bench.gemm.main import GemmConfig
from clusterbench.bench.stream.main import StreamConfig
small = {"collectives": CollConfig(ops=("all_reduce", "all_gather", "broadcast"), minbytes=8, maxbytes=1 << 16,
                                   stepfactor=8, iters=20, warmup_iters=5),
         "memory bandwidth (stream)": StreamConfig(sizes=(1 << 20,), numtimes=20, strict_size=False),
         "gemm": GemmConfig(m=128, n=128, k=128, dtypes=("fp32",), iterations=5, samples=3, strict_size=False)}
suite.SUITE[:] = [suite.SuiteEntry(e.name, e.target, cpu=small[e.name]) for e in suite.SUITE]
from clusterbench.cli import main
main(["run", "--no-preflight", "--telemetry-interval", "0", "--db", sys.argv[1]])
"""


def test_a_run_on_a_busy_node_prints_one_warning_block(tmp_path, busy_node):
    # before: 13 warnings on a busy 2-core node, two long lines per op with the same advice
    done = _python_child("-c", _SMALL_SUITE, str(tmp_path / "r.db"))
    assert done.returncode == 0, done.stdout[-3000:]
    lines = done.stdout.splitlines()
    assert sum(line.startswith("# warning:") for line in lines) <= 1, done.stdout
    with Store.open(tmp_path / "r.db") as store:
        (run,) = store.list_runs()
    if run.meta.get("noise"):   # noisy it was (the hogs make it so nearly always): said once
        assert sum("what to do:" in line for line in lines) == 1
        assert len(run.meta["noise"]) > 1   # per table and kind, stored as before


def test_repeat_5_ends_with_each_headline_row_across_the_runs(tmp_path, busy_node):
    db = str(tmp_path / "r.db")
    done = _cli_child("coll", "all_reduce", "-e", "4K", "-f", "8", "-n", "5", "--repeat", "5",
                      "--telemetry-interval", "0", "--db", db)
    assert done.returncode == 0, done.stdout[-3000:]
    lines = done.stdout.splitlines()
    assert sum(line.startswith("# warning:") for line in lines) <= 1   # one block for the five runs
    assert not any("--repeat" in line for line in lines if line.startswith("#  "))   # inside --repeat
    with Store.open(db) as store:
        ids = [r.id for r in store.list_runs(oldest_first=True)]
    head = next(i for i, line in enumerate(lines) if line.startswith("# 5 runs ("))
    assert lines[head].startswith(f"# 5 runs ({', '.join(map(str, ids))}; repeat_group=")
    assert lines[head + 1].split() == ["#", "row", "mean", "±", "σ", "min..max", "CV", "runs"]
    rows = lines[head + 2:]   # the last thing printed: the largest size is the headline row
    assert [row.split()[5] for row in rows] == ["in", "out"]   # one per placement
    for row in rows:
        assert row.startswith("  all_reduce 4K ") and " busbw " in row and row.split()[-1] == "5"
        assert " ± " in row and " GB/s " in row and ".." in row
