"""Inputs are bounded (issue 18): more local ranks than a host can run, sizes no memory holds,
JSON and YAML nested thousands deep, YAML aliases that would expand a profile into gigabytes.
Each is refused with one line and exit 2 before anything runs or is stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterbench.store import Store

DATA = Path(__file__).parent / "data"
NCCL_LOG = DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"


def _cb(*argv: str, env: dict[str, str] | None = None, stdin: str | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clusterbench", *map(str, argv)], capture_output=True,
                          text=True, timeout=timeout, input=stdin, env={**os.environ, **(env or {})})


def _one_error(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("clusterbench: error: "), p.stderr
    assert "Traceback" not in p.stderr and "RecursionError" not in p.stderr
    return lines[0]


def _runs(db: Path) -> list:
    if not db.exists():
        return []
    with Store.open(str(db)) as s:
        return s.list_runs()


def test_more_local_ranks_than_the_limit_is_refused_before_any_starts(tmp_path):
    db = tmp_path / "cb.db"
    err = _one_error(_cb("coll", "all_reduce", "--np", "3", "--device", "cpu", "--db", db,
                         env={"CLUSTERBENCH_MAX_LOCAL_RANKS": "2"}))
    assert "--np 3" in err and "at most 2" in err and "CLUSTERBENCH_MAX_LOCAL_RANKS=2" in err
    cores = len(os.sched_getaffinity(0))
    err = _one_error(_cb("coll", "all_reduce", "--np", "1000", "--device", "cpu", "--db", db))
    assert f"at most {4 * cores}" in err
    assert _runs(db) == []


def test_a_bad_rank_limit_is_a_usage_error(tmp_path):
    err = _one_error(_cb("coll", "all_reduce", "--np", "2", "--device", "cpu", "--db", tmp_path / "cb.db",
                         env={"CLUSTERBENCH_MAX_LOCAL_RANKS": "many"}))
    assert "CLUSTERBENCH_MAX_LOCAL_RANKS='many'" in err


def test_sizes_no_memory_holds_are_refused_with_the_memory_there_is(tmp_path):
    db = tmp_path / "cb.db"
    err = _one_error(_cb("coll", "all_reduce", "-b", "1T", "-e", "1T", "--np", "2", "--device", "cpu",
                         "--db", db))
    assert "1099511627776 B of buffers per rank" in err and "B of host memory available" in err
    err = _one_error(_cb("stream", "-s", "1T", "--device", "cpu", "--db", db))
    assert "free host memory" in err
    assert _runs(db) == []


def test_a_run_that_measures_nothing_is_never_complete(tmp_path):
    """sendrecv on one gloo rank: every placement is skipped, nothing is measured, and the run
    says so."""
    db = tmp_path / "cb.db"
    p = _cb("coll", "sendrecv", "-b", "8", "-e", "8", "--np", "1", "--device", "cpu", "--db", db)
    assert p.returncode == 1, p.stderr
    assert "without a single measurement" in p.stderr and "Traceback" not in p.stderr
    (run,) = _runs(db)
    assert run.status == "failed"


def test_sizes_that_hold_nothing_per_rank_are_refused_before_any_rank_starts(tmp_path):
    """Every size holds less than one double per rank: known before starting, so nothing is stored."""
    db = tmp_path / "cb.db"
    p = _cb("coll", "all_gather", "-b", "1", "-e", "4", "-d", "double", "--np", "2", "--device", "cpu",
            "--db", db)
    assert p.returncode == 2, p.stderr
    assert "nothing to measure" in _one_error(p)
    assert not db.exists() or _runs(db) == []


def _deep_array(depth: int) -> str:
    return "[" * depth + "]" * depth


def _deep_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize("tool", ["nccl-tests", "rccl-tests", "iperf3", "vllm-serving", "clusterbench-jsonl"])
def test_json_nested_thousands_deep_is_refused_and_the_batch_goes_on(tmp_path, tool):
    deep = tmp_path / "deep.json"
    deep.write_text(_deep_object(50_000) + "\n")
    db = tmp_path / "cb.db"
    p = _cb("import", deep, "--tool", tool, "--db", db)
    err = _one_error(p)
    assert err == f"clusterbench: error: {deep}: {tool} data nested more than {sys.getrecursionlimit()} " \
                  "levels deep: not a log this tool writes"
    # in a batch: the deep file is named, the good one stored, exit 2 at the end
    p = _cb("import", deep, NCCL_LOG, "--db", db)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert [r.source.split()[0] for r in _runs(db)] == ["rccl-tests"]


def test_deep_json_on_standard_input(tmp_path):
    err = _one_error(_cb("import", "-", "--tool", "vllm-serving", "--db", tmp_path / "cb.db",
                         stdin=_deep_array(100_000)))
    assert "-: vllm-serving data nested more than" in err


def test_yaml_nested_thousands_deep_is_refused(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: deep\ncriteria: " + _deep_array(20_000) + "\n")
    err = _one_error(_cb("validate", "--profile", deep, "--db", tmp_path / "cb.db"))
    assert err == f"clusterbench: error: profile {deep}: nested more than {sys.getrecursionlimit()} levels deep"


def _laughs(levels: int) -> str:
    lines = ['      l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"      l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(["name: lol", "criteria:", "  - name: x", "    benchmark: coll", "    metric: busbw",
                      "    op: '>='", "    value: 1", "    params:", *lines]) + "\n"


def test_billion_laughs_profile_is_refused_not_expanded(tmp_path):
    """Nine levels of nine aliases are 9^9 (387 million) strings once written out."""
    bomb = tmp_path / "lol.yaml"
    bomb.write_text(_laughs(9))
    p = _cb("validate", "--profile", bomb, "--db", tmp_path / "cb.db")   # expanded, it would not end
    err = _one_error(p)
    assert err == f"clusterbench: error: profile {bomb}: its aliases expand it past 100000 values: " \
                  "refused, not expanded"
    assert p.stdout == ""


def test_aliases_that_stay_small_still_load(tmp_path):
    """Anchors are a normal YAML feature: a profile sharing params between criteria loads."""
    from clusterbench.judge.profiles import load_profile

    path = tmp_path / "shared.yaml"
    path.write_text(
        "name: shared\ncriteria:\n"
        "  - {name: a, benchmark: coll, metric: busbw, op: '>=', value: 1, params: &p {op: all_reduce}}\n"
        "  - {name: b, benchmark: coll, metric: algbw, op: '>=', value: 1, params: *p}\n")
    profile = load_profile(str(path))
    assert [c.params for c in profile.criteria] == [{"op": "all_reduce"}] * 2
    assert json.dumps([c.name for c in profile.criteria]) == '["a", "b"]'


def test_a_tag_that_is_not_utf8_is_refused(tmp_path):
    """Bytes from a Latin-1 terminal reach Python as surrogates; no database stores them."""
    db = tmp_path / "cb.db"
    p = subprocess.run([sys.executable.encode(), b"-m", b"clusterbench", b"import",
                        str(NCCL_LOG).encode(), b"--tag", b"site=z\xfcrich", b"--db", str(db).encode()],
                       capture_output=True, timeout=120)
    assert p.returncode == 2, p.stderr
    err = p.stderr.decode()
    assert err.startswith("clusterbench: error: invalid tag ") and "not UTF-8 text" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert _runs(db) == []
