"""Tests of clusterbench.report.jsonl: ``--json``."""

import hashlib
import io
import json
import math
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from bench_tables import _header
from import_sources import (
    BOM,
    Outcome,
    _import_jsonl_origins_ms,
    _import_jsonl_origins_run,
    _interleave,
    _json,
    _lines,
    _ms,
    _outcome,
    _progress,
    _run,
    _same,
    _text_form,
    _tool_of,
    by_file,
    by_gz,
    by_stdin,
    by_text,
)
from json_schema import SCHEMA
from judge_helpers import json_lines
from judged_rows import rows_judge_compare
from paths import DATA, ROOT
from tool_logs import LOGS

from clusterbench.ingest import detect_tool
from clusterbench.ingest.clusterbench_jsonl import parse
from clusterbench.ingest.common import LogFormatError
from clusterbench.ingest.source import runs_of as _runs_of
from clusterbench.judge.compare import compare
from clusterbench.records import Failure, Measurement, Meta, Note, Rows, Run, Telemetry
from clusterbench.report import jsonl
from clusterbench.report.jsonl import JsonPrinter, run_lines
from clusterbench.report.terminal import TablePrinter

# what str.splitlines splits at and a file's lines hold
SEPARATORS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _jsonl() -> bytes:
    """clusterbench's own --json lines: two runs, one with its measurements before it."""
    out = []
    for run_id in (7, 8):
        run = Run(benchmark="coll", command=["clusterbench", "coll", "all_reduce", "--json"],
                  source="clusterbench 0.1.0", started_at="2026-01-02T03:04:05.678Z", hosts=["gpu01"], ranks=8,
                  id=run_id)
        ms = [Measurement("all_reduce", "busbw", 10.0 + i / 3, "GB/s", {"bytes": 8 << i}) for i in range(4)]
        out += run_lines(run, ms)
    return "".join(ln + "\n" for ln in out).encode()


def _logs() -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in LOGS] + [("clusterbench.jsonl", _jsonl())]


def by_fifo(tmp: Path, data: bytes, name: str, tool: str | None = None) -> Outcome:
    """Through a FIFO, read once and hashed as it is parsed (as the command reads one)."""
    path = tmp / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)

    def write() -> None:
        try:
            with open(path, "wb") as f:
                f.write(data)
        except BrokenPipeError:   # the reader gave up early (a refused log)
            pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        return _outcome(_runs_of(str(path), tool, hashlib.sha256(), 1, str(path)), [str(path), name])
    finally:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)   # let a writer the reader left finish
        try:
            while os.read(fd, 1 << 16):
                pass
        except BlockingIOError:
            pass
        os.close(fd)
        writer.join(10)
        path.unlink()


IPERF_JSON = [DATA / "iperf3" / n for n in ("cloudpilot-10k_file-bytes-mode.json",
                                            "cloudpilot-bw_proxy_target_direct-10s-omit3.json")]


VLLM_JSON = DATA / "vllm-serving" / "ascend-qwen2.5-vl-3b-bench-serve-save-result.json"


def _json_pairs() -> list[tuple[str, bytes, bytes]]:
    return [("iperf3.json", IPERF_JSON[0].read_bytes(), IPERF_JSON[1].read_bytes()),
            ("vllm.json", VLLM_JSON.read_bytes(), VLLM_JSON.read_bytes().strip() + b"\n"),
            ("clusterbench.jsonl", _jsonl(), _jsonl())]


A, B_import_jsonl_origins = _lines(_import_jsonl_origins_run("gpu01"), _import_jsonl_origins_ms(3, 10.0)), _lines(_import_jsonl_origins_run("gpu02", "2026-01-02T03:04:06.000Z"), _import_jsonl_origins_ms(3, 20.0))


def _by_host(got) -> dict[str, list[float]]:
    return {g.run.hosts[0]: [m.value for m in g.measurements] for g in got}


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


@pytest.mark.parametrize("name, data", _logs(), ids=[n for n, _ in _logs()])
def test_every_way_in_gives_the_same_runs(tmp_path, monkeypatch, name, data):
    want = by_file(tmp_path, data, name)
    forms: list[tuple[str, Callable[[], Outcome], Outcome]] = [
        ("gzipped", lambda: by_gz(tmp_path, data, name), want),
        ("a FIFO", lambda: by_fifo(tmp_path, data, name), want),
        ("parse_text", lambda: by_text(data, name), _text_form(want)),
        ("CRLF", lambda: by_file(tmp_path, data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"), name), want),
        ("a BOM", lambda: by_file(tmp_path, BOM + data, name), want),
        ("a BOM, gzipped", lambda: by_gz(tmp_path, BOM + data, name), want),
        ("no final newline", lambda: by_file(tmp_path, data.rstrip(b"\n"), name), want),
        ("standard input", lambda: by_stdin(monkeypatch, data), by_file(tmp_path, data, "stdin")),
    ]
    tool = _tool_of(want)
    if tool is not None:
        forms.append((f"--tool {tool}", lambda: by_file(tmp_path, data, name, tool), want))
    if not _json(name, data):
        forms += [
            ("progress output", lambda: by_file(tmp_path, _progress(data), name), want),
            ("progress output, parse_text", lambda: by_text(_progress(data), name), _text_form(want)),
            ("CRs before CRLF", lambda: by_file(tmp_path, data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\r\n"),
                                                name), want),
        ]
    for what, read, expected in forms:
        _same(expected, read(), what)


@pytest.mark.parametrize("sep", SEPARATORS, ids=[f"U+{ord(s):04X}" for s in SEPARATORS])
def test_other_line_separators_stay_in_their_line(tmp_path, sep):
    # str.splitlines splits at them, a file's lines hold them: parse_text read such a log
    # differently (an extra line, a line cut in two) than a file or standard input did
    for name, data in _logs()[::7]:
        text = data.decode("utf-8", "replace")
        for mixed in (text.replace("\n", sep + "\n", 3), text.replace("\n", "\n" + sep, 3),
                      text.replace(" ", sep, 3)):
            raw = mixed.encode()
            _same(_text_form(by_file(tmp_path, raw, name)), by_text(raw, name), f"{name} parse_text")


@pytest.mark.parametrize("name, a, b", _json_pairs(), ids=[n for n, _, _ in _json_pairs()])
def test_a_bom_before_a_json_document(tmp_path, monkeypatch, name, a, b):
    # two documents (or JSON lines) appended, the second saved with a byte order mark: the
    # decoder stopped at it and the second document was lost (iperf3) or the file refused
    # (vLLM); a blank line before the first one's mark sent iperf3 JSON to the text parser
    want = by_file(tmp_path, a + b, name)
    assert want[1] is None and len(want[0]) >= 2, want[1]
    tool = _tool_of(want)
    lines = name.endswith(".jsonl")   # a line holds one record: two on one line are not JSON lines
    forms = [("between", a + BOM + b), ("before each", BOM + a + BOM + BOM + b),
             ("after a blank line", b"\n" + BOM + a + b), ("CRLF", (a + BOM + b).replace(b"\n", b"\r\n"))]
    if not lines:
        forms.append(("between, no line end", a.rstrip() + BOM + b))
    for label, data in forms:
        _same(want, by_file(tmp_path, data, name), f"{label}, a file")
        _same(want, by_gz(tmp_path, data, name), f"{label}, gzipped")
        _same(_text_form(want), by_text(data, name), f"{label}, parse_text")
        _same(by_file(tmp_path, a + b, "stdin"), by_stdin(monkeypatch, data), f"{label}, standard input")
        _same(want, by_file(tmp_path, data, name, tool), f"{label}, --tool {tool}")


def test_pdsh_prefixes_split_interleaved_runs_of_the_same_id():
    text = "\n".join(_interleave([f"gpu01: {x}" for x in A], [f"gpu02: {x}" for x in B_import_jsonl_origins]))
    got = parse(text)
    assert _by_host(got) == {"gpu01": [10.0, 11.0, 12.0], "gpu02": [20.0, 21.0, 22.0]}
    assert all(g.run.status == "complete" for g in got)


def test_kubectl_prefixes_with_timestamps_split_them_too():
    stamps = iter(f"2026-01-02T03:04:{s:02d}.123456789Z" for s in range(60))
    a = [f"[pod/cb-0/main] {next(stamps)} {x}" for x in A]
    b = [f"[pod/cb-1/main] {next(stamps)} {x}" for x in B_import_jsonl_origins]
    got = parse("\n".join(_interleave(a, b)))
    assert _by_host(got) == {"gpu01": [10.0, 11.0, 12.0], "gpu02": [20.0, 21.0, 22.0]}


def test_interleaved_lines_without_prefixes_are_refused_naming_the_id_and_lines():
    # before: run 1 of gpu01 took gpu02's first rows too, silently
    text = "\n".join(_interleave(A, B_import_jsonl_origins))
    with pytest.raises(LogFormatError) as e:
        parse(text)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("run 1: its run record is on lines 7 and 8")
    assert "measurements on lines 1-6" in msg and "prefixes" in msg


def test_one_after_another_without_prefixes_are_still_two_runs():
    got = parse("\n".join(A + B_import_jsonl_origins))
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
    text = "\n".join([f"gpu02: {B_import_jsonl_origins[0]}", f"gpu01: {A[0]}", f"gpu01: {A[1]}", f"gpu01: {A[3]}"])
    assert [[m.value for m in g.measurements] for g in parse(text)] == [[10.0, 11.0], [20.0]]


def test_measurements_of_several_prefixes_and_two_records_are_refused():
    a = [f"x1: {A[0]}", f"x2: {B_import_jsonl_origins[0]}", f"x1: {A[1]}", f"zz: {A[3]}", f"x2: {B_import_jsonl_origins[1]}", f"zz: {B_import_jsonl_origins[3]}"]
    with pytest.raises(LogFormatError, match=r"^run 1: .*lines 4 and 6 .*several prefixes"):
        parse("\n".join(a))


def test_a_record_that_counts_other_measurements_than_came_is_refused():
    # `import --json` run lines say how many measurements the run has
    def counted(line: str, n: int) -> str:
        d = json.loads(line)
        return json.dumps({**d, "measurements": n})

    ms_b = _import_jsonl_origins_ms(1, 30.0)    # gpu02 measured other sizes: no row twice, only the count tells
    ms_b[0].params["bytes"] = 1 << 30
    b = _lines(_import_jsonl_origins_run("gpu02", "2026-01-02T03:04:06.000Z"), ms_b)
    text = [A[0], b[0], A[1], A[2], counted(A[3], 3), counted(b[1], 1)]
    with pytest.raises(LogFormatError, match="line 5 says its run has 3 measurement"):
        parse("\n".join(text))
    # the counts right: two runs
    text = [A[0], A[1], A[2], counted(A[3], 3), b[0], counted(b[1], 1)]
    assert [len(g) for g in parse("\n".join(text))] == [3, 1]


def test_orphans_say_which_prefix_they_were_behind():
    text = "\n".join([f"gpu02: {B_import_jsonl_origins[0]}", f"gpu01: {A[0]}", f"gpu01: {A[3]}"])
    got = parse(text)
    assert [len(g) for g in got] == [1, 1]
    assert got[1].run.status == "incomplete" and "lines behind 'gpu02:'" in got[1].run.errors[0]


def test_schema_covers_exactly_the_kinds_and_docs_name_them():
    assert set(SCHEMA["$defs"]) == set(jsonl.KINDS)
    assert [r["$ref"].rsplit("/", 1)[1] for r in SCHEMA["oneOf"]] == list(SCHEMA["$defs"])
    doc = (ROOT / "docs" / "json.md").read_text()
    for kind in jsonl.KINDS:
        assert re.search(rf"^### `{kind}`", doc, re.M), f"docs/json.md does not document kind {kind!r}"
    assert "docs/json.md" in (ROOT / "README.md").read_text()
    assert "json.md" in (ROOT / "docs" / "metrics.md").read_text()


def test_undefined_cv_is_shown_as_undefined_not_as_zero():
    from clusterbench.judge.text import comparison_lines
    from clusterbench.report.jsonl import comparison_line, dumps

    one = compare(rows_judge_compare([100.0]), rows_judge_compare([100.0, 101.0], start=100))
    zero = compare(rows_judge_compare([-1.0, 1.0, 0.0]), rows_judge_compare([5.0, 5.1, 4.9], start=100))
    for (c,) in (one, zero):
        d = c.to_dict()
        assert d["cv_a"] is None and isinstance(d["cv_b"], float)
        json_lines(dumps(comparison_line(c, "a", "b")))  # null is what the schema allows
    assert one[0].to_dict()["sd_a"] is None and zero[0].to_dict()["sd_a"] == 1.0
    header, row, _ = comparison_lines(one)
    cells = row.split()
    assert "0.0%" not in row and cells[cells.index("100") + 1] == "-"  # was "0.0%"


def test_infinite_values_are_not_tested():
    from clusterbench.report.jsonl import comparison_line, dumps

    inf = math.inf
    # p was nan and nan passes every "not significant" check: "B is inf% faster, p=nan"
    for a, b, who in (([100.0, 101.0, 99.0], [100.0, inf, 99.0], "B"), ([inf, inf], [inf, inf], "A and B")):
        (c,) = compare(rows_judge_compare(a), rows_judge_compare(b, start=100))
        assert c.status == "insufficient" and c.verdict == f"a value of {who} is not finite: cannot test"
        assert c.delta_pct is None
        (line,) = json_lines(dumps(comparison_line(c, "a", "b")))
        assert line["mean_b"] is None and line["cv_b"] is None and line["p_value"] is None


def test_printers_accept_every_event():
    for printer in (TablePrinter(out=io.StringIO()), JsonPrinter(out=io.StringIO())):
        for e in (_header(), Rows(()), Note("n"), Meta({}), Failure("f"), Telemetry(())):
            printer.on_event(e)
