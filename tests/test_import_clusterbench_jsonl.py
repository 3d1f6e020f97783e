"""clusterbench's own --json lines read back (issue 17): the parser on logs as kubectl and pdsh
deliver them, and the exact round trip of a real local run: --json -> import - -> same records."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterbench.ingest import detect_tool, parse_text
from clusterbench.ingest.clusterbench_jsonl import parse
from clusterbench.ingest.common import LogFormatError
from clusterbench.records import Measurement, Run
from clusterbench.report.jsonl import run_lines
from clusterbench.store import Store

SRC = Path(__file__).resolve().parent.parent / "src"


def _run(run_id: int, **kw) -> Run:
    run = Run(benchmark="coll", command=["clusterbench", "coll", "all_reduce", "--json"],
              source="clusterbench 0.1.0", started_at="2026-01-02T03:04:05.678Z",
              ended_at="2026-01-02T03:04:09.000Z", hosts=["gpu01", "gpu02"], ranks=16,
              devices=["MI300X"] * 16, versions={"torch": "2.5.1", "rccl": "2.21.5"},
              env={"NCCL_IB_GID_INDEX": "3"}, tags={"env": "k8s"}, errors=[],
              meta={"launcher": "torchrun", "notes": ["x"], "nested": {"a": [1, 2.5, None]}}, id=run_id)
    for k, v in kw.items():
        setattr(run, k, v)
    return run


def _ms(n: int, bench: str = "all_reduce") -> list[Measurement]:
    return [Measurement(bench, "busbw", 10.0 + i / 3, "GB/s", {"bytes": 8 << i, "dtype": "float"})
            for i in range(n)]


def _lines(run: Run, ms: list[Measurement]) -> list[str]:
    return list(run_lines(run, ms))


def test_one_run_keeps_every_field_and_says_it_was_imported():
    run, ms = _run(12), _ms(3)
    (got,) = parse("\n".join(_lines(run, ms)), "pod.log")
    assert got.measurements == ms
    want = run.to_dict()
    have = got.run.to_dict()
    assert have.pop("source") == "clusterbench 0.1.0, imported from pod.log (run 12)"
    assert have.pop("id") is None
    want.pop("source"), want.pop("id")
    assert have == want


def test_prefixes_and_other_output_are_handled():
    run, ms = _run(3), _ms(2)
    body = _lines(run, ms)
    text = "\n".join([
        "W1122 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each process",
        "Collecting clusterbench==0.1.0",
        '{"level": "info", "msg": "unrelated JSON"}',
        "# run 3 (complete) stored in /root/.local/share/clusterbench/results.db",
        f"gpu01: {body[0]}",                                       # pdsh
        f"[pod/clusterbench-master-0/pytorch] {body[1]}",          # kubectl logs --prefix
        f"2026-01-02T03:04:09.123456789Z {body[2]}\r",             # kubectl logs --timestamps
        "a {broken line",
    ])
    (got,) = parse(text)
    assert got.measurements == ms and got.run.hosts == ["gpu01", "gpu02"]


def test_measurements_belong_to_the_next_run_line_with_their_id():
    # two pods, one after another, each with a fresh database: both runs are id 1
    a, b = _run(1, tags={"pod": "a"}), _run(1, tags={"pod": "b"}, status="incomplete", errors=["rank 3 died"])
    text = "\n".join([*_lines(a, _ms(2)), *_lines(b, _ms(3, "all_gather"))])
    got = parse(text)
    assert [g.run.tags["pod"] for g in got] == ["a", "b"]
    assert [len(g) for g in got] == [2, 3] and got[1].benchmarks() == ["all_gather"]
    assert got[1].run.status == "incomplete" and got[1].run.errors == ["rank 3 died"]
    # interleaved runs with different ids still split by id
    x, y = _lines(_run(7), _ms(2)), _lines(_run(8), _ms(1, "broadcast"))
    got = parse("\n".join([x[0], y[0], x[1], y[1], x[2]]))
    assert [(g.run.source.endswith(f"(run {i})"), len(g)) for g, i in zip(got, (8, 7))] == [(True, 1), (True, 2)]


def test_measurements_without_their_run_line_become_an_incomplete_run():
    lines = _lines(_run(5), _ms(3))[:-1]  # the pod was killed before the run line
    (got,) = parse("\n".join(lines), "stdin")
    assert got.run.status == "incomplete" and len(got) == 3 and got.run.benchmark == "import"
    assert got.run.errors == ["the output ends before the record of run 5: only its measurements were found"]


def test_lines_of_older_clusterbench_without_kind_are_measurements():
    ms = _ms(2)
    text = "\n".join(m.to_json(4) for m in ms)
    assert detect_tool(text) == "clusterbench-jsonl"
    (got,) = parse_text(text)
    assert got.measurements == ms and got.run.status == "incomplete"


@pytest.mark.parametrize("edit, word", [
    (lambda d: d.update(value="fast"), "line 1: measurement value 'fast' is not a number"),
    (lambda d: d.update(value=True), "is not a number"),
    (lambda d: d.pop("metric"), "field 'metric'"),
    (lambda d: d.update(params=[1]), "params are not an object"),
])
def test_a_damaged_measurement_line_is_an_error(edit, word):
    d = json.loads(_lines(_run(1), _ms(1))[0])
    edit(d)
    with pytest.raises(LogFormatError, match=word):
        parse(json.dumps(d))


@pytest.mark.parametrize("edit, word", [
    (lambda d: d.update(status="great"), "unknown run status 'great'"),
    (lambda d: d.pop("started_at"), "run field 'started_at'"),
    (lambda d: d.update(hosts="gpu01"), "run field 'hosts'"),
])
def test_a_damaged_run_line_is_an_error(edit, word):
    d = json.loads(_lines(_run(1), [])[0])
    edit(d)
    with pytest.raises(LogFormatError, match=word):
        parse(json.dumps(d))


def test_detected_before_the_tools_whose_words_its_params_hold():
    run = _run(1, meta={"nccl_version": "2.21.5", "tool": "TransferBench"})
    text = "\n".join(_lines(run, [Measurement("serving", "request_throughput", 1.0, "", {})]))
    assert detect_tool(text) == "clusterbench-jsonl"
    assert detect_tool("node1: " + text) == "clusterbench-jsonl"


def test_import_dash_reads_stdin(capsys, db, monkeypatch):
    from clusterbench.cli import main

    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(_lines(_run(9), _ms(4))) + "\n"))
    with pytest.raises(SystemExit) as e:
        main(["import", "-", "--db", db, "--tag", "via=stdin"])
    out, err = capsys.readouterr()
    assert e.value.code == 0, err
    assert out == "-: run 1: clusterbench 0.1.0, imported from stdin (run 9) all_reduce complete, 4 measurements\n"
    with Store.open(db) as s:
        (run,) = s.list_runs()
        assert run.tags == {"env": "k8s", "via": "stdin"}
        assert run.command == ["clusterbench", "coll", "all_reduce", "--json"]  # the command it ran
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with pytest.raises(SystemExit) as e:
        main(["import", "-", "--db", db])
    assert e.value.code == 2 and capsys.readouterr().err == "clusterbench: error: -: empty file\n"


# -- the real thing: a local run's --json lines, piped into import ------------------------------

def _cb_env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))


def _records(db: Path) -> list[tuple[Run, list[tuple]]]:
    with Store.open(db) as s:
        return [(r, [(m.benchmark, m.metric, m.value, m.unit, m.params) for m in s.measurements(r.id)])
                for r in reversed(s.list_runs())]


@pytest.mark.slow
def test_round_trip_of_a_real_run_through_a_pipe(tmp_path):
    a, b = tmp_path / "A.db", tmp_path / "B.db"
    bench = subprocess.run(
        [sys.executable, "-m", "clusterbench", "coll", "all_reduce", "-b", "8", "-e", "64", "--np", "2",
         "--device", "cpu", "--json", "--db", str(a), "--tag", "env=local", "--repeat", "2",
         "--telemetry-interval", "0"],
        capture_output=True, text=True, timeout=300, env=_cb_env())
    assert bench.returncode == 0, bench.stderr
    # as pdsh would deliver it: a host prefix on every line, and the other output around it
    log = "".join(f"node1: {line}\n" for line in ["starting", *bench.stdout.splitlines(), "done"])
    imp = subprocess.run([sys.executable, "-m", "clusterbench", "import", "-", "--db", str(b)],
                         input=log, capture_output=True, text=True, timeout=120, env=_cb_env())
    assert imp.returncode == 0, imp.stderr
    assert len(imp.stdout.splitlines()) == 2
    originals, copies = _records(a), _records(b)
    assert len(originals) == len(copies) == 2
    for (orig, oms), (copy, cms) in zip(originals, copies):
        assert cms == oms and len(cms) > 0
        for field in ("benchmark", "command", "started_at", "ended_at", "status", "hosts", "ranks",
                      "devices", "versions", "env", "tags", "errors", "meta"):
            assert getattr(copy, field) == getattr(orig, field), field
        assert copy.source == f"{orig.source}, imported from stdin (run {orig.id})"
    assert originals[0][0].tags["repeat"] == "1" and originals[0][0].meta["rank_hosts"]
