"""Tests of clusterbench.ingest.jsonl_parallel: where a file of JSON lines is cut (no process is
started here; the workers' runs against one pass are in tests/system/test_jsonl_parallel.py)."""

from __future__ import annotations

import json

import pytest
from parallel_import import jsonl_measurement, jsonl_night, jsonl_run, write_jsonl

from clusterbench.ingest import clusterbench_jsonl as cj
from clusterbench.ingest import jsonl_parallel
from clusterbench.ingest.common import LogFormatError


def test_cuts_follow_a_run_line_and_count_the_lines_before(tmp_path):
    path = write_jsonl(tmp_path, jsonl_night(300))
    data = path.read_bytes()
    parts = jsonl_parallel.parts(str(path), part=8_000)
    assert len(parts) > 10 and parts[0].start == 0 and parts[-1].end == len(data)
    assert [p.last for p in parts] == [False] * (len(parts) - 1) + [True]
    for before, after in zip(parts, parts[1:]):
        assert before.end == after.start and after.start - before.start >= 8_000
        line_before = data[data.rindex(b"\n", 0, after.start - 1) + 1:after.start]
        assert line_before.startswith(b'{"kind": "run", ') and line_before.endswith(b"\n")
        assert after.first_line == data[:after.start].count(b"\n")


def test_a_file_without_a_run_line_to_cut_after_is_one_part(tmp_path):
    # measurements only (a pod killed before its run line), or run lines behind a prefix
    lines = [jsonl_measurement(1, float(i), {"bytes": i}) for i in range(2000)]
    assert len(jsonl_parallel.parts(str(write_jsonl(tmp_path, lines)), part=4_000)) == 1
    prefixed = ["[pod/a/c] " + line for line in jsonl_night(200)]
    assert len(jsonl_parallel.parts(str(write_jsonl(tmp_path, prefixed)), part=4_000)) == 1
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert jsonl_parallel.parts(str(empty)) == [jsonl_parallel.Part(0, 0, 0, True)]


def test_a_part_that_ends_with_measurements_waiting_says_so():
    lines = [jsonl_measurement(1, 1.0, {"bytes": 8}), jsonl_measurement(2, 2.0, {"bytes": 8}), jsonl_run(1, "h1")]
    with pytest.raises(cj.PartUnfinished):
        list(cj.iter_parse(lines, part=True))
    assert len(list(cj.iter_parse(lines))) == 2   # the file's end: run 2's measurements are a run of their own


def test_a_part_counts_lines_from_where_the_part_before_stopped():
    bad = json.dumps({**json.loads(jsonl_run(1, "h")), "status": "done"})
    with pytest.raises(LogFormatError, match="^line 1001: unknown run status 'done'"):
        list(cj.iter_parse([bad], first_line=1000))


def test_run_lines_of_an_earlier_part_are_checked_against():
    # the same measurement twice before one run line: a doubt; then another run of that id
    first = [jsonl_measurement(1, 1.0, {"bytes": 8}), jsonl_measurement(1, 2.0, {"bytes": 8}), jsonl_run(1, "h1")]
    admitted: list = []
    list(cj.iter_parse(first, admitted=admitted))
    earlier = cj.RunLines()
    earlier.admit(*admitted[0])
    later = [jsonl_measurement(1, 3.0, {"bytes": 8}), jsonl_run(1, "h2")]
    assert len(list(cj.iter_parse(later, first_line=3))) == 1   # alone, nothing to tell apart
    with pytest.raises(LogFormatError, match="^run 1: its run record is on lines 3 and 5 with different contents"):
        list(cj.iter_parse(later, first_line=3, run_lines=earlier))
