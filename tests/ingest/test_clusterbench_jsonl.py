"""Tests of clusterbench.ingest.clusterbench_jsonl: clusterbench's own --json lines read back."""

from __future__ import annotations

import json

import pytest

from clusterbench.ingest import LogFormatError, parse_text
from clusterbench.ingest.clusterbench_jsonl import parse

RUN = {"kind": "run", "id": 1, "benchmark": "stream", "source": "clusterbench 0.1", "command": ["clusterbench"],
       "started_at": "2026-12-01T00:00:00.000Z", "ended_at": None, "status": "complete", "hosts": ["h"],
       "ranks": 1, "devices": [], "versions": {}, "env": {}, "tags": {}, "errors": [], "meta": {}}
MEASUREMENT = '{"kind": "measurement", "run": 1, "benchmark": "stream", "metric": "bandwidth", %s, "unit": "GB/s", "params": {}}'


@pytest.mark.parametrize("line", [
    MEASUREMENT % '"value": 5, "value": 500',                      # the fault suite's case
    MEASUREMENT.replace('"params": {}', '"params": {"bytes": 8, "bytes": 16}') % '"value": 5',
    json.dumps(RUN).replace('"status": "complete"', '"status": "failed", "status": "complete"'),
])
def test_a_key_given_twice_is_refused_not_the_last_one_kept(line):
    # json.loads keeps the last of two equal keys without a word: a value of 500 stored where the
    # line said 5 as well
    text = "\n".join([MEASUREMENT % '"value": 1', line, json.dumps(RUN)]) + "\n"
    with pytest.raises(LogFormatError, match=r"line 2: key '(value|bytes|status)' given twice in one JSON object"):
        parse(text, "x.jsonl")


def test_the_same_lines_without_a_key_twice_import():
    text = "\n".join([MEASUREMENT % '"value": 5', json.dumps(RUN)]) + "\n"
    (item,) = parse(text, "x.jsonl")
    assert [m.value for m in item.measurements] == [5]



def test_a_tools_own_json_with_a_key_twice_is_read_as_the_tool_writes_it():
    # iperf3 3.12 writes "sock_bufsize" twice in test_start: a real log, not a line edited by hand
    from paths import DATA

    text = (DATA / "iperf3" / "v3.12-bidir-loopback-json.json").read_text()
    assert text.count('"sock_bufsize"') >= 2
    assert parse_text(text, "iperf3", "iperf3.json")
