"""clusterbench's own --json lines of several processes in one log, each with the same run id (two
hosts, each with its own database): told apart by the prefixes before their lines, or refused in
one line where they cannot be, never merged into one run."""

from __future__ import annotations

import json

import pytest

from clusterbench.ingest.clusterbench_jsonl import parse
from clusterbench.ingest.common import LogFormatError
from clusterbench.records import Measurement, Run
from clusterbench.report.jsonl import run_lines
from clusterbench.store import Store


def _run(host: str, started: str = "2026-01-02T03:04:05.678Z") -> Run:
    return Run(benchmark="coll", command=["clusterbench", "coll", "all_reduce", "--json"],
               source="clusterbench 0.1.0", started_at=started, ended_at="2026-01-02T03:04:09.000Z",
               hosts=[host], ranks=8, devices=["H100"] * 8, tags={"host": host}, id=1)


def _ms(n: int, base: float) -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", base + i, "GB/s", {"bytes": 8 << i, "dtype": "float"})
            for i in range(n)]


def _lines(run: Run, ms: list[Measurement]) -> list[str]:
    return list(run_lines(run, ms))


def _interleave(a: list[str], b: list[str]) -> list[str]:
    out: list[str] = []
    for i in range(max(len(a), len(b))):
        out += a[i:i + 1] + b[i:i + 1]
    return out


A, B = _lines(_run("gpu01"), _ms(3, 10.0)), _lines(_run("gpu02", "2026-01-02T03:04:06.000Z"), _ms(3, 20.0))


def _by_host(got) -> dict[str, list[float]]:
    return {g.run.hosts[0]: [m.value for m in g.measurements] for g in got}


def test_pdsh_prefixes_split_interleaved_runs_of_the_same_id():
    text = "\n".join(_interleave([f"gpu01: {x}" for x in A], [f"gpu02: {x}" for x in B]))
    got = parse(text)
    assert _by_host(got) == {"gpu01": [10.0, 11.0, 12.0], "gpu02": [20.0, 21.0, 22.0]}
    assert all(g.run.status == "complete" for g in got)


def test_kubectl_prefixes_with_timestamps_split_them_too():
    stamps = iter(f"2026-01-02T03:04:{s:02d}.123456789Z" for s in range(60))
    a = [f"[pod/cb-0/main] {next(stamps)} {x}" for x in A]
    b = [f"[pod/cb-1/main] {next(stamps)} {x}" for x in B]
    got = parse("\n".join(_interleave(a, b)))
    assert _by_host(got) == {"gpu01": [10.0, 11.0, 12.0], "gpu02": [20.0, 21.0, 22.0]}


def test_interleaved_lines_without_prefixes_are_refused_naming_the_id_and_lines():
    # before: run 1 of gpu01 took gpu02's first rows too, silently
    text = "\n".join(_interleave(A, B))
    with pytest.raises(LogFormatError) as e:
        parse(text)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("run 1: its run record is on lines 7 and 8")
    assert "measurements on lines 1-6" in msg and "prefixes" in msg


def test_one_after_another_without_prefixes_are_still_two_runs():
    got = parse("\n".join(A + B))
    assert _by_host(got) == {"gpu01": [10.0, 11.0, 12.0], "gpu02": [20.0, 21.0, 22.0]}


def test_the_same_run_printed_twice_is_not_refused():
    got = parse("\n".join(A + A))
    assert [len(g) for g in got] == [3, 3]


def test_a_prefix_that_differs_from_line_to_line_keeps_one_run_together():
    # one process, but a log whose lines carry different prefixes: its run line, behind none of
    # theirs, takes them all, in their order
    text = "\n".join([f"gpu01: {A[0]}", f"[pod/x/c] {A[1]}", f"3: {A[2]}", f"2026-01-02T03:04:09Z {A[3]}"])
    (got,) = parse(text)
    assert [m.value for m in got.measurements] == [10.0, 11.0, 12.0]
    # a run line behind a prefix takes the lines behind it: the others wait for their own
    text = "\n".join([f"gpu02: {B[0]}", f"gpu01: {A[0]}", f"gpu01: {A[1]}", f"gpu01: {A[3]}"])
    assert [[m.value for m in g.measurements] for g in parse(text)] == [[10.0, 11.0], [20.0]]


def test_measurements_of_several_prefixes_and_two_records_are_refused():
    a = [f"x1: {A[0]}", f"x2: {B[0]}", f"x1: {A[1]}", f"zz: {A[3]}", f"x2: {B[1]}", f"zz: {B[3]}"]
    with pytest.raises(LogFormatError, match=r"^run 1: .*lines 4 and 6 .*several prefixes"):
        parse("\n".join(a))


def test_a_record_that_counts_other_measurements_than_came_is_refused():
    # `import --json` run lines say how many measurements the run has
    def counted(line: str, n: int) -> str:
        d = json.loads(line)
        return json.dumps({**d, "measurements": n})

    ms_b = _ms(1, 30.0)    # gpu02 measured other sizes: no row twice, only the count tells
    ms_b[0].params["bytes"] = 1 << 30
    b = _lines(_run("gpu02", "2026-01-02T03:04:06.000Z"), ms_b)
    text = [A[0], b[0], A[1], A[2], counted(A[3], 3), counted(b[1], 1)]
    with pytest.raises(LogFormatError, match="line 5 says its run has 3 measurement"):
        parse("\n".join(text))
    # the counts right: two runs
    text = [A[0], A[1], A[2], counted(A[3], 3), b[0], counted(b[1], 1)]
    assert [len(g) for g in parse("\n".join(text))] == [3, 1]


def test_orphans_say_which_prefix_they_were_behind():
    text = "\n".join([f"gpu02: {B[0]}", f"gpu01: {A[0]}", f"gpu01: {A[3]}"])
    got = parse(text)
    assert [len(g) for g in got] == [1, 1]
    assert got[1].run.status == "incomplete" and "lines behind 'gpu02:'" in got[1].run.errors[0]


def test_import_refuses_in_one_line_and_stores_nothing(capsys, db, tmp_path):
    from clusterbench.cli import main

    log = tmp_path / "two-hosts.log"
    log.write_text("\n".join(_interleave(A, B)) + "\n")
    with pytest.raises(SystemExit) as e:
        main(["import", str(log), "--db", db])
    err = capsys.readouterr().err
    assert e.value.code != 0 and "Traceback" not in err
    assert "run 1: its run record is on lines 7 and 8" in err
    assert len([ln for ln in err.splitlines() if "run 1:" in ln]) == 1
    with Store.open(db) as s:
        assert s.list_runs() == []
