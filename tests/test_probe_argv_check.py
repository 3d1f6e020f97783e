"""What ``qualify`` and ``sweep`` check of a command line before anything runs: options that
contradict each other (``stream --float --dtype``) and a malformed ``--devices`` list are refused
up front with the line the command itself prints, while how many devices a node has stays the
node's to judge. Also a stored run whose JSON columns this clusterbench never wrote (nested
thousands deep, not JSON, the wrong shape): one line naming the run, not an internal error."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from judge_helpers import cli

from clusterbench.bench.devices import device_indices, parse_devices
from clusterbench.cli.argv_check import check_argv
from clusterbench.errors import UsageError

# (a command line every node refuses, the words of its error)
REFUSED = [
    (["stream", "--float", "--dtype", "float"], "--float and --dtype cannot be used together: give one"),
    (["stream", "-s", "1K", "--sizes", "1K:4K"], "--arraysize and --sizes cannot be used together: give one"),
    (["stream", "--devices", "0,,1"], "invalid --devices '0,,1'"),
    (["stream", "--devices", "-1"], "invalid --devices '-1'"),
    (["stream", "--devices", "0-"], "invalid --devices '0-'"),
    (["stream", "--devices", "0,0"], "device 0 is listed twice"),
    (["stream", "--devices", "²"], "invalid --devices '²'"),
    (["stream", "--device", "cpu", "--devices", "1"], "--devices 1: out of range, this host has 1 CPU device"),
    (["gemm", "--devices", "a"], "invalid --devices 'a'"),
    (["gemm", "--devices", "1,1"], "device 1 is listed twice"),
    (["gemm", "--devices", "9" * 5000], "is larger than any host's device count"),
    (["transfer", "--devices", "0;1"], "invalid --devices '0;1'"),
    (["transfer", "--device", "cpu", "--devices", "0,1"], "--devices 1: out of range"),
]
IDS = [" ".join(a)[:40] for a, _ in REFUSED]


@pytest.mark.parametrize("argv, words", REFUSED, ids=IDS)
def test_check_argv_refuses_what_every_node_would(capsys, db, argv, words):
    with pytest.raises(UsageError, match="^step: ") as e:
        check_argv(argv, "step", values=True)
    assert words in str(e.value) and "\n" not in str(e.value)
    rc, _, own = cli(capsys, *argv, "--db", db)
    assert rc == 2 and own.endswith(f"error: {str(e.value).removeprefix('step: ')}\n"), own
    assert not Path(db).exists()


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


@pytest.mark.parametrize("argv", [
    ["stream", "--float"], ["stream", "--dtype", "float", "--sizes", "1K:4K"], ["stream", "-s", "1K"],
    # indices a node may have: only the node can say it has them
    ["stream", "--devices", "0,7"], ["gemm", "--devices", " 3 , 1 "], ["transfer", "--devices", "all"],
    ["stream", "--device", "cpu", "--devices", "0"], ["gemm", "--device", "cuda", "--devices", "15"],
])
def test_lines_only_a_node_can_judge_pass(argv):
    check_argv(argv, "step", values=True)


def test_the_devices_form_is_judged_apart_from_the_count():
    assert device_indices(None) is None and device_indices(" ALL ") is None and device_indices("") is None
    assert device_indices("2, 0") == [2, 0] and device_indices("007") == [7]
    assert parse_devices("all", "cuda", 2) == [0, 1] and parse_devices("1", "cuda", 2) == [1]
    for bad in ("²", "٣", "1" * 5000, "0,0", "0,,1", "+1", "1.0"):
        with pytest.raises(UsageError, match="^invalid --devices"):
            parse_devices(bad, "cuda", 8)
    with pytest.raises(UsageError, match=r"^--devices 2: out of range, this host has 2 GPU\(s\)$"):
        parse_devices("0,2", "cuda", 2)
    with pytest.raises(UsageError) as e:   # a megabyte-long list is quoted by its start
        parse_devices("x" * 1_000_000, "cuda", 8)
    assert len(str(e.value)) < 200


DEEP = "[" * 3000 + "]" * 3000


def _run(rid: int) -> str:
    return json.dumps({"kind": "run", "id": rid, "benchmark": "coll", "source": "clusterbench 1",
                       "command": ["x"], "started_at": "2026-01-02T00:00:00.000Z", "ended_at": None,
                       "status": "complete", "hosts": ["h1"], "ranks": 2, "devices": [], "versions": {},
                       "env": {"a": str(rid)}, "tags": {}, "errors": [], "meta": {"n": 1}})


def _store(capsys, db: str, tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    log.write_text(_run(1) + "\n" + _run(2) + "\n")
    rc, _, err = cli(capsys, "import", log, "--db", db)
    assert rc == 0, err


@pytest.mark.parametrize("column, text, why", [
    ("meta", DEEP, "nested more than"),
    ("env", DEEP, "nested more than"),
    ("hosts", "[" * 100_000, "nested more than"),
    ("versions", "{", "not JSON"),
    ("meta", "5", "a JSON number, not an object"),
    ("errors", '{"a": 1}', "a JSON object, not a list"),
])
def test_a_stored_run_this_tool_never_wrote_is_one_line_naming_it(capsys, db, tmp_path, column, text, why):
    _store(capsys, db, tmp_path)
    with sqlite3.connect(db) as con:
        con.execute(f"UPDATE runs SET {column}=? WHERE id=2", (text,))
    con.close()
    for argv in (["results", "list"], ["env", "show", "2"], ["env", "diff", "1", "2"], ["results", "show", "2"]):
        rc, out, err = cli(capsys, *argv, "--db", db)
        assert rc == 2 and err.count("\n") == 1, (argv, err)
        assert f": run 2: unreadable {column}: {why}" in err and "internal error" not in err, (argv, err)
    rc, out, err = cli(capsys, "env", "show", "1", "--db", db)   # the other runs still read
    assert rc == 0 and "a=1" in out, err
    rc, out, err = cli(capsys, "results", "delete", "2", "--db", db)   # and the bad one can go
    assert rc == 0 and out == "deleted run 2\n", err
    rc, out, err = cli(capsys, "results", "list", "--db", db)
    assert rc == 0 and len(out.splitlines()) == 2, err


def test_measurements_nested_thousands_deep_are_one_line(capsys, db, tmp_path):
    log = tmp_path / "m.jsonl"
    log.write_text(json.dumps({"kind": "measurement", "run": 1, "benchmark": "all_reduce", "metric": "busbw",
                               "value": 1.5, "unit": "GB/s", "params": {"bytes": 8}}) + "\n" + _run(1) + "\n")
    rc, _, err = cli(capsys, "import", log, "--db", db)
    assert rc == 0, err
    with sqlite3.connect(db) as con:
        con.execute("UPDATE measurement_packs SET body=?",
                    ('{"k":[["all_reduce","busbw","GB/s"]],"p":[' + DEEP + '],"r":[[0,0,1.5]]}',))
    con.close()
    rc, _, err = cli(capsys, "results", "show", "1", "--db", db)
    assert rc == 2 and err.count("\n") == 1 and "unreadable measurements: nested more than" in err, err


@pytest.mark.parametrize("argv", [["env"], ["sweep", "--hosts", "a,b"], ["launch", "mpi", "--hosts", "a,b", "--",
                                                                          "sweep", "--hosts", "a,b"]])
def test_lines_that_run_as_they_are_pass(argv):
    check_argv(argv, "step", values=True)


def test_launch_still_needs_its_command():
    with pytest.raises(UsageError, match="no command"):
        check_argv(["launch", "mpi", "--hosts", "a,b"], "step", values=True)
