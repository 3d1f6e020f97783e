"""Broken logs: real logs from tests/data, damaged the way disks, copies and editors
damage them, are refused with one line naming what is wrong (exit 2), never a traceback, and the
other files of the same import are still stored."""

from __future__ import annotations

import io
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import clusterbench.ingest as ingest
from clusterbench.cli import main
from clusterbench.ingest import LogFormatError, iter_runs, parse_text
from clusterbench.ingest.common import ImportedRun, Lines, new_run
from clusterbench.ingest.nccl_files import lenient_json
from clusterbench.ingest.registry import Importer
from clusterbench.records import Measurement
from clusterbench.store import Store

DATA = Path(__file__).parent / "data"
SWEEP = DATA / "transferbench" / "docs-presets-sweep-v1.67.txt"
CONFIG = DATA / "transferbench" / "docs-timing-config-example-v1.6x.txt"
P2P = DATA / "transferbench" / "docs-presets-p2p-mi350x-v1.67.txt"
OSU = DATA / "osu" / "hpcbench-osu_bw-v5.3.2-host.txt"
IPERF3 = DATA / "iperf3" / "cloudpilot-bw_proxy_target_direct-10s-omit3.json"
A3MEGA = DATA / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"


def cli(capsys, *argv) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def one_error(capsys, path: Path, db: Path) -> str:
    """The one error line a bad file gives on its own (exit 2), and nothing stored."""
    rc, out, err = cli(capsys, "import", path, "--db", db)
    lines = err.splitlines()
    assert rc == 2 and len(lines) == 1, (rc, err)
    assert lines[0].startswith(f"clusterbench: error: {path}: ") and "internal error" not in err
    assert stored(db) == []
    return lines[0][len(f"clusterbench: error: {path}: "):]


def stored(db: Path) -> list:
    if not db.exists():
        return []
    with Store.open(str(db)) as s:
        return s.list_runs()


def damaged(tmp_path: Path, source: Path, old: str, new: str, name: str = "damaged.txt") -> Path:
    text = source.read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return path


# -- TransferBench ---------------------------------------------------------------------------
@pytest.mark.parametrize("old, new", [
    ("Executor: CPU 00", "Executor: CPU00"),      # a space lost
    ("Executor: CPU 00", "Executor: CPU XY"),     # the index garbled
    ("Executor: CPU 00", "Executor; CPU 00"),     # one byte flipped: no ':' left
    ("Executor: CPU 00", "Executor: CPU 00 01"),  # one token too many
    ("Executor: CPU 00", "Executor: CPU ²"),      # a digit that int() refuses
])
def test_transferbench_damaged_executor_cell_names_the_line(capsys, tmp_path, old, new):
    path = damaged(tmp_path, SWEEP, old, new)
    with pytest.raises(LogFormatError) as e:
        parse_text(path.read_text())
    assert f"'{new}'" in str(e.value) and "executor" in str(e.value).lower()
    assert one_error(capsys, path, tmp_path / "cb.db") == str(e.value)


@pytest.mark.parametrize("source, old, new", [
    (SWEEP, "│  30.660 GB/s │", "│ │"),                          # bandwidth cell emptied
    (SWEEP, "268435456 bytes │ C1 -> C0:4", "2684354x56 bytes │ C1 -> C0:4"),   # byte count garbled
    (CONFIG, "│   67108864 bytes  │", "│ {  │"),
    (P2P, "Unidirectional copy peak", "Unidirectional copy peak \\"),
])
def test_transferbench_damaged_cells_are_refused_or_left_out(source, old, new, tmp_path):
    """A cell that is not a number is refused with its line, or (where TransferBench itself
    prints N/A) left out; never an IndexError or ValueError from inside the parser."""
    text = damaged(tmp_path, source, old, new).read_text()
    try:
        runs = parse_text(text)
    except LogFormatError as e:
        assert "line" in str(e)
    else:
        assert runs and all(math.isfinite(m.value) for r in runs for m in r.measurements)


def test_transferbench_transfer_with_damaged_byte_count_is_refused(tmp_path):
    text = damaged(tmp_path, SWEEP, "268435456 bytes │ C1 -> C0:4", "2684354x56 bytes │ C1 -> C0:4").read_text()
    with pytest.raises(LogFormatError, match=r"byte count '2684354x56 bytes'"):
        parse_text(text)


def test_a_broken_log_in_a_batch_leaves_the_others_stored(capsys, tmp_path):
    bad = damaged(tmp_path, SWEEP, "Executor: CPU 00", "Executor: CPU00")
    db = tmp_path / "cb.db"
    rc, out, err = cli(capsys, "import", bad, OSU, "--db", db)
    assert rc == 2 and "Traceback" not in err and "internal error" not in err
    assert err.splitlines() == [
        f"clusterbench: error: {bad}: line 23: executor cell 'Executor: CPU00' is not 'Executor: KIND INDEX'",
        "clusterbench: error: 1 of 2 files not imported"]
    assert [r.source.split()[0] for r in stored(db)] == ["osu"]


@pytest.mark.parametrize("error", [ValueError("x"), IndexError("y"), OverflowError("z"), TypeError("t"),
                                   AttributeError("a"), KeyError("k"), ZeroDivisionError("d")])
def test_any_parser_defect_on_a_log_is_one_line_for_that_file(capsys, tmp_path, monkeypatch, error):
    """The importer boundary: a parser that fails on input it did not foresee names the file and
    the tool; the batch goes on."""
    def parse(lines, name, head):
        yield from ()
        raise error

    monkeypatch.setitem(ingest._BY_TOOL, "transferbench", Importer("transferbench", None, parse))
    db = tmp_path / "cb.db"
    rc, _, err = cli(capsys, "import", SWEEP, OSU, "--db", db)
    assert rc == 2
    first, last = err.splitlines()
    assert first.startswith(f"clusterbench: error: {SWEEP}: malformed transferbench log: the importer "
                            f"failed on it ({type(error).__name__}")
    assert last == "clusterbench: error: 1 of 2 files not imported"
    assert [r.source.split()[0] for r in stored(db)] == ["osu"]


@pytest.mark.parametrize("value", [math.inf, -math.inf])
def test_an_infinite_value_from_a_parser_is_refused_by_name_before_the_store(capsys, tmp_path, monkeypatch, value):
    """The store refuses a value that is not finite; the import refuses the file first."""
    def parse(lines, name, head):
        yield ImportedRun(new_run("transferbench", name), [Measurement("transfer", "bandwidth", value, "GB/s")])

    db = tmp_path / "cb.db"
    monkeypatch.setitem(ingest._BY_TOOL, "transferbench", Importer("transferbench", None, parse))
    assert one_error(capsys, SWEEP, db) == f"malformed transferbench log: transfer bandwidth {value!r} is not a finite number"


def test_iperf3_text_rate_of_hundreds_of_digits_is_refused(capsys, tmp_path):
    text = (DATA / "iperf3" / "hpcbench-tcp-1stream-old-bandwidth-header.txt").read_text()
    path = tmp_path / "iperf3.txt"
    path.write_text(text.replace("5.76 Gbits/sec", "9" * 400 + " Gbits/sec"))
    assert one_error(capsys, path, tmp_path / "cb.db") == \
        "summary row '[  4]   0.00-10.00  sec  6.70 GBytes  99999999999999999999999999999999999999...: " \
        "its transfer or rate is not a number"


# -- iperf3 -J -------------------------------------------------------------------------------
def _iperf3(tmp_path: Path, change) -> Path:
    doc = json.loads(IPERF3.read_text())
    change(doc)
    path = tmp_path / "iperf3.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def _sent(value):
    def change(doc):
        doc["end"]["sum_sent"]["bits_per_second"] = value
    return change


def _at(*keys, value):
    def change(doc):
        d = doc
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
    return change


@pytest.mark.parametrize("change, message", [
    (_sent("fast"), "end.sum_sent.bits_per_second is 'fast', not a number"),
    (_sent(None), "end.sum_sent.bits_per_second is None, not a number"),
    (_sent(True), "end.sum_sent.bits_per_second is True, not a number"),
    (_sent(10 ** 400), "end.sum_sent.bits_per_second is 100...000 (401 digits), not a finite number"),
    (_sent(float("inf")), "end.sum_sent.bits_per_second is inf, not a finite number"),
    (_at("start", value=5), "start is 5, not an object"),
    (_at("end", value=[1]), "end is [1], not an object"),
    (_at("end", "sum_sent", value="x"), "end.sum_sent is 'x', not an object"),
    (_at("end", "sum_sent", "bytes", value="many"), "end.sum_sent.bytes is 'many', not a number"),
    (_at("end", "sum_sent", "retransmits", value=[]), "end.sum_sent.retransmits is [], not a number"),
    (_at("start", "connected", value=7), "start.connected is 7, not a list of objects"),
    (_at("start", "connected", value=[3]), "start.connected is [3], not a list of objects"),
    (_at("start", "test_start", value="tcp"), "start.test_start is 'tcp', not an object"),
    (_at("start", "test_start", "num_streams", value="two"), "start.test_start.num_streams is 'two', not a number"),
    (_at("start", "timestamp", value=1), "start.timestamp is 1, not an object"),
])
def test_iperf3_wrong_typed_fields_are_one_line(capsys, tmp_path, change, message):
    path = _iperf3(tmp_path, change)
    assert one_error(capsys, path, tmp_path / "cb.db") == f"iperf3 JSON document 1: {message}"


def test_iperf3_a_400_digit_rate_written_as_digits_is_refused(capsys, tmp_path):
    text = IPERF3.read_text()
    rate = re.search(r'"bits_per_second":\s*([0-9.e+]+)', text[text.index('"sum_sent"'):]).group(1)
    path = tmp_path / "iperf3.json"
    path.write_text(text.replace(rate, "1" + "0" * 400))
    assert one_error(capsys, path, tmp_path / "cb.db") == \
        "iperf3 JSON document 1: end.sum_sent.bits_per_second is 100...000 (401 digits), not a finite number"


def test_iperf3_the_original_still_imports(tmp_path):
    (run,) = parse_text(_iperf3(tmp_path, lambda doc: None).read_text())
    assert len(run.measurements) == 3 and run.run.status == "complete"


# -- clusterbench JSON lines -----------------------------------------------------------------
RUN = {"kind": "run", "id": 3, "benchmark": "coll", "source": "clusterbench 0.1.0", "command": ["clusterbench"],
       "started_at": "2026-11-23T18:13:34.099Z", "ended_at": "2026-11-23T18:13:40.000Z", "status": "complete",
       "hosts": ["gpu01"], "ranks": 2, "devices": ["H100"], "versions": {}, "env": {}, "tags": {}, "errors": [],
       "meta": {}}
MEASUREMENT = {"kind": "measurement", "run": 3, "benchmark": "all_reduce", "metric": "busbw", "value": 41.5,
               "unit": "GB/s", "params": {"bytes": 8}}


def _jsonl(tmp_path: Path, measurement: str, run: str | None = None) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_text(f"{measurement}\n{run or json.dumps(RUN)}\n")
    return path


def _with(obj: dict, key: str, raw: str) -> str:
    """``obj`` as a JSON line with ``key``'s value written as ``raw`` JSON text."""
    return json.dumps({**obj, key: "@"}).replace('"@"', raw)


@pytest.mark.parametrize("raw, message", [
    ("1e999", "line 1: measurement value inf is not a finite number"),
    ("-1e999", "line 1: measurement value -inf is not a finite number"),
    ("Infinity", "line 1: measurement value inf is not a finite number"),
    ("NaN", "line 1: measurement value nan is not a finite number"),
    ("1" * 400, "line 1: measurement value 111...111 (400 digits) is not a finite number"),
])
def test_jsonl_values_that_are_not_finite_name_the_line(capsys, tmp_path, raw, message):
    path = _jsonl(tmp_path, _with(MEASUREMENT, "value", raw))
    assert one_error(capsys, path, tmp_path / "cb.db") == message


@pytest.mark.parametrize("measurement, run, message", [
    (_with(MEASUREMENT, "unit", r'"\ud800"'), None, r"line 1: not UTF-8 text: '\ud800' in field 'unit'"),
    (_with(MEASUREMENT, "params", r'{"host": "gpu\udfff"}'), None,
     r"line 1: not UTF-8 text: 'gpu\udfff' in field 'params'"),
    (_with(MEASUREMENT, "params", r'{"h\udc80": 1}'), None, r"line 1: not UTF-8 text: 'h\udc80' in field 'params'"),
    (json.dumps(MEASUREMENT), _with(RUN, "tags", r'{"env": "\ud83d"}'),
     r"line 2: not UTF-8 text: '\ud83d' in field 'tags'"),
    (json.dumps(MEASUREMENT), _with(RUN, "meta", r'{"notes": [{"text": "a\udc00b"}]}'),
     r"line 2: not UTF-8 text: 'a\udc00b' in field 'meta'"),
])
def test_jsonl_lone_surrogates_are_refused_like_tags(capsys, tmp_path, measurement, run, message):
    path = _jsonl(tmp_path, measurement, run)
    assert one_error(capsys, path, tmp_path / "cb.db") == message


def test_other_json_logs_with_lone_surrogates_are_refused(capsys, tmp_path):
    """iperf3 -J, vLLM result files and nccl-tests -J decode JSON escapes too."""
    iperf3 = _iperf3(tmp_path, _at("start", "connected", 0, "local_host", value="\ud800x"))
    assert one_error(capsys, iperf3, tmp_path / "cb.db") == r"iperf3 JSON document 1: not UTF-8 text: '\ud800x'"
    vllm = damaged(tmp_path, DATA / "vllm-serving" / "ascend-qwen2.5-vl-3b-bench-serve-save-result.json",
                   '"backend": "openai"', '"backend": "open\\udfffai"', "vllm.json")
    assert one_error(capsys, vllm, tmp_path / "cb.db") == r"vLLM result JSON: not UTF-8 text: 'open\udfffai'"
    with pytest.raises(LogFormatError, match=r"^JSON: not UTF-8 text: '\\udc00'$"):
        lenient_json('{"version": 2, "config": {"devices": [{"hostname": "\\udc00"}]}}')
    # a character beyond the BMP, escaped as a pair, is text
    assert lenient_json('{"hostname": "\\ud83d\\ude80"}') == ({"hostname": "\U0001f680"}, False)


def test_jsonl_surrogate_pairs_are_text(tmp_path):
    """An escaped character beyond the BMP (a pair of surrogates in JSON) is one character."""
    path = _jsonl(tmp_path, _with(MEASUREMENT, "unit", r'"\ud83d\ude80"'))
    (run,) = parse_text(path.read_text())
    assert run.measurements[0].unit == "\U0001f680"


@pytest.mark.parametrize("key, raw", [("started_at", '"yesterday"'), ("ended_at", '"soon"'),
                                      ("started_at", '"2026-13-01T00:00:00Z"'), ("started_at", '""')])
def test_jsonl_run_times_must_be_iso_8601(capsys, tmp_path, key, raw):
    path = _jsonl(tmp_path, json.dumps(MEASUREMENT), _with(RUN, key, raw))
    assert one_error(capsys, path, tmp_path / "cb.db") == \
        f"line 2: run field {key!r} is {json.loads(raw)!r}, not an ISO 8601 time"


@pytest.mark.parametrize("at", ["2026-11-23T18:13:34.099Z", "2026-11-23T18:13:34+02:00", "2026-11-23 18:13:34",
                                "2026-11-23T18:13:34.123456"])
def test_jsonl_iso_8601_times_are_kept_as_written(tmp_path, at):
    path = _jsonl(tmp_path, json.dumps(MEASUREMENT), json.dumps({**RUN, "started_at": at}))
    (run,) = parse_text(path.read_text())
    assert run.run.started_at == at


def test_jsonl_ranks_beyond_what_a_store_holds_are_refused(capsys, tmp_path):
    path = _jsonl(tmp_path, json.dumps(MEASUREMENT), _with(RUN, "ranks", "9" * 30))
    assert one_error(capsys, path, tmp_path / "cb.db") == "line 2: run field 'ranks' is out of range"


# -- nccl-tests: values that are not finite --------------------------------------------------
def _a3mega_row(tmp_path: Path, new: str) -> Path:
    old = "     1048576        262144     float     sum      -1    203.2    5.16    9.68      0"
    return damaged(tmp_path, A3MEGA, old, old[:-23] + new)


@pytest.mark.parametrize("new", ["    inf     inf      0", "    nan     nan      0", "   -inf     inf      0"])
def test_nccl_non_finite_busbw_is_not_a_missing_row(tmp_path, new):
    (got,) = parse_text(_a3mega_row(tmp_path, new).read_text())
    (want,) = parse_text(A3MEGA.read_text())
    assert got.run.status == want.run.status == "complete"
    assert "rows_missing" not in got.run.meta and not got.run.meta.get("warnings")
    assert got.run.ranks == want.run.ranks
    row = [(m.metric, m.params["placement"]) for m in got.measurements if m.params.get("bytes") == 1048576]
    assert ("busbw", "out") not in row and ("busbw", "in") in row


def test_nccl_missing_rows_are_still_found_next_to_an_infinite_busbw(tmp_path):
    """With a value that is not a number, the footer could be any mean from the numbers' own up:
    rows of small sizes cut from the start still leave it below that (the header line, which would
    tell by itself, is cut too)."""
    text = _a3mega_row(tmp_path, "    inf     inf      0").read_text()
    cut = "\n".join(ln for ln in text.splitlines()
                    if ln.split()[:1] not in (["8"], ["16"], ["32"]) and not ln.startswith("# nThread"))
    (got,) = parse_text(cut)
    assert got.run.status == "incomplete"
    (warning,) = got.run.meta["warnings"]
    assert warning.startswith("the footer's average busbw 70.742 GB/s is below the mean 78.148")
    assert warning.endswith(" GB/s of the 56 busbw values shown, counting the 1 that are not numbers as 0: "
                            "rows are missing")


def test_nccl_show_prints_n_a_for_each_value_not_stored(capsys, tmp_path):
    db = tmp_path / "cb.db"
    inf = _a3mega_row(tmp_path, "    inf     inf      0")
    nan_time = damaged(tmp_path, A3MEGA, "-1    203.2    5.16", "-1      nan    5.16", "nan.txt")
    rc, _, err = cli(capsys, "import", inf, nan_time, "--db", db)
    assert rc == 0, err
    _, out1, _ = cli(capsys, "results", "show", "1", "--db", db)
    _, out2, _ = cli(capsys, "results", "show", "2", "--db", db)
    row = "     1048576        262144     float     sum      -1  {}    207.2    5.06    9.49      0"
    assert row.format("  203.2     N/A     N/A      0") in out1.splitlines()
    assert row.format("    N/A    5.16    9.68      0") in out2.splitlines()


# -- lines without end -----------------------------------------------------------------------
class _Counting(io.RawIOBase):
    """A file read through, counting the bytes that were read."""

    def __init__(self, path: Path) -> None:
        self.f = open(path, "rb")  # noqa: SIM115
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self.f.read(len(b))
        b[:len(data)] = data
        self.read_bytes += len(data)
        return len(data)

    def close(self) -> None:
        self.f.close()
        super().close()


def _text_of(raw: _Counting):
    return io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="replace", newline="")


def test_binary_data_without_newlines_is_refused_after_reading_its_start(tmp_path):
    path = tmp_path / "zeros.bin"
    path.write_bytes(bytes(4 << 20))
    raw = _Counting(path)
    with _text_of(raw) as f, pytest.raises(LogFormatError, match="^binary data, not a text log$"):
        list(iter_runs(f))
    assert raw.read_bytes <= 1 << 20


@pytest.mark.parametrize("head", ["", A3MEGA.read_text(), SWEEP.read_text()])
def test_a_line_longer_than_16_mib_is_refused_without_reading_on(tmp_path, head):
    path = tmp_path / "long.log"
    with open(path, "w") as f:
        f.write(head)
        f.write("x" * (17 << 20))
        f.write("\n" + head)
    raw = _Counting(path)
    with _text_of(raw) as f, pytest.raises(LogFormatError) as e:
        list(iter_runs(f, path=str(path)))
    assert str(e.value) == "not a text log: a line longer than 16 MiB"
    assert raw.read_bytes <= len(head) + (18 << 20)


def test_a_line_of_16_mib_is_still_text(tmp_path):
    path = tmp_path / "long.log"
    path.write_text(SWEEP.read_text() + "#" + "x" * ((16 << 20) - 2) + "\n")
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        (run,) = iter_runs(f)
    assert len(run.measurements) == len(parse_text(SWEEP.read_text())[0].measurements)


def _peak_rss(*argv: object) -> tuple[int, str]:
    """The exit code and the most memory (KiB resident) of ``clusterbench ARGV``, and its stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "clusterbench", *map(str, argv)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss, f"{proc.returncode} {err}"


def test_zero_bytes_without_newlines_take_no_more_memory_than_a_small_log(tmp_path):
    path = tmp_path / "zeros.bin"
    path.write_bytes(bytes(64 << 20))
    small, out = _peak_rss("import", OSU, "--dry-run")
    assert out == "0 "
    rss, out = _peak_rss("import", path, "--dry-run")
    assert out == f"2 clusterbench: error: {path}: binary data, not a text log\n"
    assert rss < small + (32 << 10)   # the whole file, as text, would be 64 MiB and more


@pytest.mark.parametrize("end", ["\n", "\r\n"])
@pytest.mark.parametrize("at", [20, 42, 80])   # the executor cell, the byte count, the line end
def test_a_row_across_the_64_kib_the_format_is_told_from_is_read_whole(tmp_path, end, at):
    log = SWEEP.read_text().replace("\n", end)
    row = log.index("  Executor: GPU 06")
    text = log + "#" * (65536 - len(log) - at - len(end)) + end + log[row:]
    assert text.index("  Executor: GPU 06", len(log)) + at == 65536
    path = tmp_path / "log.txt"
    path.write_bytes(text.encode())
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        (run,) = iter_runs(f)
    (want,) = parse_text(text)
    assert run.measurements == want.measurements
    executors = [m for m in run.measurements if m.params.get("executor") == "G6" and m.metric == "bandwidth"]
    assert len(executors) == 2 * 2   # per copy: its bandwidth and its sum


def test_lines_given_as_a_list_are_read_as_before():
    """Parsers fed lines (not a file) keep their lines whole: only files are read in bounded parts."""
    lines = SWEEP.read_text().splitlines(keepends=True)
    runs = list(iter_runs(Lines(lines, iter(()))))
    assert len(runs) == 1 and runs[0].measurements == parse_text(SWEEP.read_text())[0].measurements
