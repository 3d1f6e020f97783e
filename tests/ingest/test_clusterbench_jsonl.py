"""Tests of clusterbench.ingest.clusterbench_jsonl: clusterbench's own JSON lines read back, the
lines of its own format by one expression, every other line as any JSON line, with the same runs."""

from __future__ import annotations

import json
import re

import pytest

from clusterbench.ingest import clusterbench_jsonl as cj
from clusterbench.ingest import parse_text
from clusterbench.ingest.clusterbench_jsonl import parse
from clusterbench.ingest.common import LogFormatError

RUN = {"kind": "run", "id": 1, "benchmark": "coll", "source": "clusterbench", "command": ["clusterbench"],
       "started_at": "2026-01-01T00:00:00.000Z", "ended_at": None, "status": "complete", "hosts": ["h1"],
       "ranks": 2, "devices": [], "versions": {}, "env": {}, "tags": {}, "errors": [], "meta": {}}


def _m(value: object = 1.5, params: object = None, run: object = 1, **kw: object) -> str:
    d = {"kind": "measurement", "run": run, "benchmark": "all_reduce", "metric": "busbw", "value": value,
         "unit": "GB/s", "params": {"bytes": 8, "root": -1} if params is None else params}
    d.update(kw)
    return json.dumps(d)


def _runs(lines: list[str]) -> list[tuple]:
    out = []
    for r in cj.iter_parse(lines, "x.jsonl"):
        run = r.run.to_dict()
        if run["errors"]:   # a run whose run line never came starts when it is read
            run.pop("started_at")
        out.append((run, [m.to_dict() for m in r.measurements], r.benchmarks(), len(r)))
    return out


def _general(monkeypatch, lines: list[str]) -> list[tuple]:
    """The runs as the general reader alone finds them."""
    with monkeypatch.context() as mp:
        mp.setattr(cj, "_OWN", re.compile(r"(?!)"))
        mp.setattr(cj, "_OWN_ROWS", re.compile(r"(?!)"))
        return _runs(lines)


ODD_LINES = [
    _m(), _m(-0), _m(0), _m(-0.0), _m(1e300), _m(12345678901234567890), _m(5e-324), _m(2.5, {"a": [1, {"b": None}]}),
    _m(1.0, {"kind": "measurement"}), _m(3.0, {"text": "tab\there"}), _m(4.0, {"q": 'a "quoted" b'}),
    _m(1.0, run=None), _m(2.0, benchmark="stream", metric="bandwidth"),
    "gpu01: " + _m(7.0), "[pod/a/c] " + _m(8.0), "2026-01-01T00:00:00Z " + _m(9.0),
    _m(1.0).replace('"params": {', '"params": {"x": 1, '), _m(1.0)[:-1] + "}   ",
    # not the printed format, or not JSON: the general reader decides
    _m(1.0).replace(", ", ","), _m(1.0)[:-2], _m(1.0).replace('"root": -1', '"root": -1,'),
    _m(1.0).replace("1.0", "1.0e999"), _m(1.0).replace("1.0", "01"), _m(1.0).replace('"run": 1', '"run": 01'),
    _m(1.0).replace('"bytes": 8', '"nested": {"kind": "measurement", "run": 2, "benchmark": "a", "metric": "b", '
                                  '"value": 1, "unit": "", "params": {}}'),
    _m(1.0, {"bytes": 8}, run=1).replace('"bytes": 8}', '"bytes": 8} , "more": {}'),
    "{not json", "",
    # lines almost of the printed format: a key twice, an extra key, two objects on a line, an
    # object taking the next line, values json reads otherwise
    _m(1.0)[:-1] + ', "value": 500}', _m(1.0)[:-1] + ', "extra": 1}', _m(1.0) + ", " + _m(3.0),
    _m(1.0)[:-1] + ', "benchmark": "stream"}', _m(1.0, metric="value"), _m(1.0, unit='"value"'),
    _m(1.0).replace('"root": -1}', '"root": [-1'), _m(1.0).replace('"value": 1.0', '"value": true'),
    _m(1.0).replace('"run": 1', '"run": 1.0'), _m(1.0).replace('"run": 1', '"run": true'),
    _m(1.0).replace('"run": 1', '"run": 123456789012345678901234567890'), _m(9007199254740993),
    _m(1.0).replace('"value": 1.0', '"value": NaN'), _m(1.0).replace('"value": 1.0', '"value" : 1.0'),
    _m(1.0, params=[1]), _m(1.0, params="x"), _m(1.0).replace('"params": {"bytes": 8, "root": -1}', '"params": null'),
    _m(1.0, metric="a:b"), _m(1.0, unit="x: y"), _m(1.0, benchmark="a\\b\u00e9"), _m(1.0, {"x": "\ud800"}), _m(0.1 + 0.2), _m(-1e-310),
    _m(1.0).replace("all_reduce", "all\ud800reduce"),   # not escaped: a text given as lines, not read from a file
]


@pytest.mark.parametrize("i", range(len(ODD_LINES)))
def test_every_line_reads_as_the_general_reader_reads_it(monkeypatch, i):
    lines = [_m(0.5), ODD_LINES[i], _m(2.5, {"bytes": 16}), json.dumps(RUN)]
    try:
        expected = _general(monkeypatch, lines)
    except LogFormatError as e:
        with pytest.raises(LogFormatError, match=re.escape(str(e))):
            _runs(lines)
        return
    assert _runs(lines) == expected


def test_a_log_of_many_runs_reads_the_same_either_way(monkeypatch):
    lines = []
    for r in range(1, 30):
        for s in range(5):
            lines.append(f"node{r % 3}: " + _m(float(r * 10 + s), {"bytes": 1 << s, "host": f"h{r}"}, run=r % 4))
        lines.append(f"node{r % 3}: " + json.dumps({**RUN, "id": r % 4, "hosts": [f"h{r}"]}))
    lines.append(_m(1.0, run=99))   # whose run line never came
    assert _runs(lines) == _general(monkeypatch, lines)


def test_a_repeated_measurement_is_still_a_doubt_when_its_runs_share_an_id():
    twice = [_m(1.0), _m(2.0), json.dumps(RUN), _m(3.0), json.dumps({**RUN, "hosts": ["h2"]})]
    with pytest.raises(LogFormatError, match="the same measurement came twice"):
        list(cj.iter_parse(twice))


def test_runs_that_share_an_id_are_each_checked_once(monkeypatch):
    """Fresh pods each print run 1: a run line is checked against the earlier ones of its id by
    what they hold, not one by one (it was quadratic in the runs of one id)."""
    calls = []
    real = cj._clashes

    def counted(a, b):
        calls.append(1)
        return real(a, b)

    monkeypatch.setattr(cj, "_clashes", counted)
    lines = []
    for r in range(400):
        lines += [_m(float(r), {"bytes": 8, "host": f"h{r}"}), json.dumps({**RUN, "hosts": [f"h{r}"]})]
    assert len(list(cj.iter_parse(lines))) == 400
    assert len(calls) == 0


def test_a_run_of_its_own_format_is_packed_as_the_store_keeps_it():
    (run,) = cj.iter_parse([_m(1.0, {"bytes": 8}), _m(2.0, {"bytes": 16}), json.dumps(RUN)])
    packs = run.store_rows().packs
    assert [p.format for p in packs] == ["rows"] and run.benchmarks() == ["all_reduce"] and len(run) == 2
    assert [m.value for m in run.measurements] == [1.0, 2.0]



STREAM_RUN = {"kind": "run", "id": 1, "benchmark": "stream", "source": "clusterbench 0.1", "command": ["clusterbench"],
       "started_at": "2026-12-01T00:00:00.000Z", "ended_at": None, "status": "complete", "hosts": ["h"],
       "ranks": 1, "devices": [], "versions": {}, "env": {}, "tags": {}, "errors": [], "meta": {}}
MEASUREMENT = '{"kind": "measurement", "run": 1, "benchmark": "stream", "metric": "bandwidth", %s, "unit": "GB/s", "params": {}}'


@pytest.mark.parametrize("line", [
    MEASUREMENT % '"value": 5, "value": 500',                      # the fault suite's case
    MEASUREMENT.replace('"params": {}', '"params": {"bytes": 8, "bytes": 16}') % '"value": 5',
    json.dumps(STREAM_RUN).replace('"status": "complete"', '"status": "failed", "status": "complete"'),
])
def test_a_key_given_twice_is_refused_not_the_last_one_kept(line):
    # json.loads keeps the last of two equal keys without a word: a value of 500 stored where the
    # line said 5 as well
    text = "\n".join([MEASUREMENT % '"value": 1', line, json.dumps(STREAM_RUN)]) + "\n"
    with pytest.raises(LogFormatError, match=r"line 2: key '(value|bytes|status)' given twice in one JSON object"):
        parse(text, "x.jsonl")


def test_the_same_lines_without_a_key_twice_import():
    text = "\n".join([MEASUREMENT % '"value": 5', json.dumps(STREAM_RUN)]) + "\n"
    (item,) = parse(text, "x.jsonl")
    assert [m.value for m in item.measurements] == [5]


def test_a_tools_own_json_with_a_key_twice_is_read_as_the_tool_writes_it():
    # iperf3 3.12 writes "sock_bufsize" twice in test_start: a real log, not a line edited by hand
    from paths import DATA

    text = (DATA / "iperf3" / "v3.12-bidir-loopback-json.json").read_text()
    assert text.count('"sock_bufsize"') >= 2
    assert parse_text(text, "iperf3", "iperf3.json")
