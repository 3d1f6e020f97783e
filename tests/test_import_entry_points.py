"""The same log gives the same stored runs whichever way it reaches ``clusterbench import``.

Every real log of tests/data (and a generated file of clusterbench's own JSON lines) is read as a
plain file, gzipped, from standard input, from a FIFO, as text (``parse_text``), with its tool
named, with CRLF line ends, a byte order mark, no final newline, progress output overwritten in
place (a lone CR: what a terminal shows is what is read), concatenated with another log of its
tool, and by one or two processes: each must give the same runs (the run record but its clock,
ids, file name and command, and every measurement) or the same one-line error.

The forms that take the same code path as a command line are read in-process (``_runs_of``, the
function the command calls per file); a few real command lines check standard input, a FIFO and
a .gz file end to end.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

import clusterbench.ingest as ingest
from clusterbench.errors import ClusterbenchError
from clusterbench.ingest import detect_tool, iter_runs, nccl_parallel, parse_text
from clusterbench.ingest.common import Lines, TextCleaner, clean_lines, text_lines
from clusterbench.ingest.source import runs_of as _runs_of
from clusterbench.records import Measurement, Run
from clusterbench.report.jsonl import run_lines

DATA = Path(__file__).parent / "data"
TOOL_DIRS = ["babelstream", "hipblaslt-bench", "iperf3", "nccl-tests", "osu", "perftest", "rocblas-bench", "stream",
             "transferbench", "vllm-serving"]
LOGS = sorted(p for d in TOOL_DIRS for p in (DATA / d).iterdir() if p.name != "README.md")
NCCL = [p for p in LOGS if p.parent.name == "nccl-tests"]
BOM = b"\xef\xbb\xbf"
PROGRESS = b"  37% |#####     | 12/32 [00:03<00:05]\r"
# what str.splitlines splits at and a file's lines hold
SEPARATORS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]

Outcome = tuple[tuple[Any, ...], str | None]


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


# -- what is compared ------------------------------------------------------------------------

def _fingerprint(item: Any, names: Iterable[str]) -> tuple[str, tuple[Any, ...]]:
    """A run as stored, but what depends on when and how it was imported: its clock, id, file
    name (in its meta and its source) and command line."""
    d = item.run.to_dict()
    for key in ("id", "started_at", "ended_at", "command"):
        d.pop(key)
    d["meta"] = {k: v for k, v in d["meta"].items() if k != "file"}
    text = repr(sorted(d.items()))
    for name in sorted(names, key=len, reverse=True):
        text = text.replace(name, "<file>")
    ms = tuple((m.benchmark, m.metric, repr(m.value), m.unit, tuple(sorted(m.params.items())))
               for m in item.measurements)
    return text, ms


def _outcome(runs: Iterator[Any], names: Iterable[str]) -> Outcome:
    got = []
    try:
        for item in runs:
            got.append(_fingerprint(item, names))
    except ClusterbenchError as e:   # LogFormatError and the command's own (an unreadable file)
        return tuple(got), str(e)
    return tuple(got), None


def _differs(want: Outcome, got: Outcome) -> str:
    (runs_a, err_a), (runs_b, err_b) = want, got
    if len(runs_a) != len(runs_b) or err_a != err_b:
        return f"{len(runs_a)} runs, error {err_a!r} vs {len(runs_b)} runs, error {err_b!r}"
    i = next(i for i, (a, b) in enumerate(zip(runs_a, runs_b)) if a != b)
    (run_a, ms_a), (run_b, ms_b) = runs_a[i], runs_b[i]
    if run_a != run_b:
        return f"run {i}: {run_a[:600]} vs {run_b[:600]}"
    return f"run {i}: {len(ms_a)} vs {len(ms_b)} measurements, first difference " + \
        str(next(((x, y) for x, y in zip(ms_a, ms_b) if x != y), "(one list is longer)"))


def _same(want: Outcome, got: Outcome, what: str) -> None:
    assert got == want, f"{what}: {_differs(want, got)}"


# -- the ways in ------------------------------------------------------------------------------

def by_file(tmp: Path, data: bytes, name: str, tool: str | None = None, jobs: int = 1) -> Outcome:
    path = tmp / name
    path.write_bytes(data)
    return _outcome(_runs_of(str(path), tool, None, jobs, str(path)), [str(path), name])


def by_gz(tmp: Path, data: bytes, name: str, tool: str | None = None) -> Outcome:
    path = tmp / f"{name}.gz"
    with gzip.open(path, "wb") as f:
        f.write(data)
    return _outcome(_runs_of(str(path), tool, None, 1, str(path)), [str(path)[:-3], name])


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


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def by_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes, tool: str | None = None) -> Outcome:
    """As ``clusterbench import -`` reads it; its runs are named "stdin"."""
    with monkeypatch.context() as m:
        m.setattr(sys, "stdin", _Stdin(data))
        return _outcome(_runs_of("-", tool, hashlib.sha256(), 1, "-"), ["stdin"])


def by_text(data: bytes, name: str, tool: str | None = None) -> Outcome:
    """``parse_text``: all the runs or the error alone (it gives a list)."""
    try:
        runs = parse_text(data.decode("utf-8", "replace"), tool, name)
    except ClusterbenchError as e:
        return (), str(e)
    return _outcome(iter(runs), [name])


def _text_form(want: Outcome) -> Outcome:
    return want if want[1] is None else ((), want[1])


def _progress(data: bytes, every: int = 3) -> bytes:
    """Progress output written before some lines and overwritten by them, as a terminal shows."""
    lines = data.split(b"\n")
    return b"\n".join(PROGRESS + ln if i % every == 1 and ln.strip() else ln for i, ln in enumerate(lines))


def _json(name: str, data: bytes) -> bool:
    """A JSON document or JSON lines: not terminal output (a CR in it is JSON's whitespace)."""
    return name.endswith((".json", ".jsonl")) or data.lstrip()[:1] in (b"{", b"[")


def _tool_of(outcome: Outcome) -> str | None:
    for run, _ in outcome[0]:
        meta = dict(eval(run))["meta"]   # noqa: S307 - our own repr of plain values
        if "tool" in meta:
            return str(meta["tool"])
    return None


# -- every real log, every way in ------------------------------------------------------------

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


def test_parse_text_splits_as_a_file_is_read(tmp_path):
    # the separators inside a row are whitespace to the parsers, as in a file
    data = (DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt").read_bytes()
    text = data.decode().replace("\n", "\x0c\n")
    runs = parse_text(text, name="all_reduce.log")
    assert by_text(text.encode(), "all_reduce.log") == by_file(tmp_path, text.encode(), "all_reduce.log")
    (plain,) = parse_text(data.decode(), name="all_reduce.log")
    assert len(runs) == 1 and runs[0].measurements == plain.measurements
    assert text_lines("a\x0cb\u2028c\r\nd\re\n") == ["a\x0cb\u2028c\r", "d\re"]
    assert text_lines("") == [] and text_lines("a") == ["a"] and text_lines("a\n\n") == ["a", ""]


# -- concatenated logs ----------------------------------------------------------------------

def _pairs() -> list[tuple[str, bytes, bytes]]:
    """Two logs of the same tool, a few per tool."""
    by_dir: dict[str, list[Path]] = {}
    for p in LOGS:
        by_dir.setdefault(p.parent.name, []).append(p)
    out = []
    for paths in by_dir.values():
        for a, b in list(zip(paths, paths[1:]))[:2]:
            out.append((a.name, a.read_bytes(), b.read_bytes()))
    return out


@pytest.mark.parametrize("name, a, b", _pairs(), ids=[n for n, _, _ in _pairs()])
def test_concatenated_logs_read_alike_every_way(tmp_path, monkeypatch, name, a, b):
    for label, data in (("cat", a + b), ("the first without a final newline", a.rstrip(b"\n") + b"\n" + b),
                        ("CRLF", (a + b).replace(b"\n", b"\r\n"))):
        want = by_file(tmp_path, data, name)
        tool = _tool_of(want)
        _same(want, by_gz(tmp_path, data, name), f"{label}, gzipped")
        _same(want, by_file(tmp_path, BOM + data, name), f"{label}, a BOM")
        _same(_text_form(want), by_text(data, name), f"{label}, parse_text")
        _same(by_file(tmp_path, data, "stdin"), by_stdin(monkeypatch, data), f"{label}, standard input")
        if tool is not None:
            _same(want, by_file(tmp_path, data, name, tool), f"{label}, --tool {tool}")


# -- where a lone CR falls ----------------------------------------------------------------------

class _Newlines(io.StringIO):
    """A text file opened with newline="": readline also stops at a lone CR."""

    def __init__(self, text: str) -> None:
        super().__init__(text, newline="")


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 64])
def test_blocks_end_at_a_line_feed_not_at_a_lone_cr(size):
    # a block completed to its line end by readline stopped at a lone CR and got a line feed:
    # the progress before the CR became a line of its own and the line after it another
    text = "head\nab\rcd\ref\r\nx\r\ry\r\n\rz\nend\r"
    got = "".join(Lines([], ingest._Bounded(_Newlines(text))).blocks(size))
    assert got == text + "\n"


def test_the_head_and_each_line_end_at_a_line_feed(monkeypatch):
    text = "ab\rcd\nef\r\r\ngh\r\n" * 50 + "tail\rend"
    for head_chars in (1, 2, 3, 4, 7, 10, 64, 1 << 16):
        monkeypatch.setattr(ingest, "HEAD_CHARS", head_chars)
        head, rest = ingest._head(_Newlines(text))
        lines = [*head, *rest]
        assert all(ln.endswith("\n") for ln in lines[:-1]) and "".join(lines).rstrip("\n") == text, head_chars


# logs whose runs a progress line read as a line of its own changes (a table cut, rows lost)
PROGRESS_LOGS = ["nccl-tests/seed-mi300x-rccl-all_reduce-8gpu.txt", "transferbench/seed-mi300x-example-cfg.txt",
                 "transferbench/seed-mi300x-p2p.txt", "rocblas-bench/seed-mi300x-gemm_strided_batched_ex-bf16.txt",
                 "osu/rocm-blogs-gpu-aware-mpi-osu_bw-rocm-DD-16MiB.txt", "babelstream/seed-mi300x-hip-8gpu-mpi.txt"]


@pytest.mark.parametrize("log", PROGRESS_LOGS)
def test_progress_reads_alike_before_and_after_the_head(tmp_path, monkeypatch, log):
    # the first 64 KiB were read by lines split at a lone CR (the text before it kept as a
    # line), what follows by blocks where it was overwritten (nccl-tests) or by lines split
    # there again (the others): where the CR fell, and which tool read it, changed the runs
    data = (DATA / log).read_bytes()
    name = Path(log).name
    want = by_file(tmp_path, data, name)
    tool = _tool_of(want)
    assert tool is not None and want[1] is None
    for head_chars in (200, 1000, 1 << 16):
        monkeypatch.setattr(ingest, "HEAD_CHARS", head_chars)
        for every in (2, 3, 5):
            _same(want, by_file(tmp_path, _progress(data, every), name, tool), f"head {head_chars}, every {every}")


def test_crs_before_a_line_end_are_not_an_overwrite():
    # a terminal shows "abc" for "abc\r\r\n"; the block cleaner kept only what followed the
    # last CR (nothing), the line cleaner "abc"
    lines = ["# nThread 1 nGpus 1\r\r\n", "abc\r\r\r\n", "x\ry\r\r\n", "\r\n"]
    cleaner = TextCleaner(lines)
    assert cleaner.clean("".join(lines)) == "".join(ln + "\n" for ln in clean_lines(lines))
    assert list(clean_lines(lines)) == ["# nThread 1 nGpus 1", "abc", "y", ""]


# -- a byte order mark -------------------------------------------------------------------------

def test_a_bom_is_not_part_of_the_first_line(tmp_path):
    # a JSON document behind one was refused ("no iperf3 results"), an OSU banner unknown, an
    # nccl-tests rank list lost its first line
    iperf = (DATA / "iperf3" / "cloudpilot-10k_file-bytes-mode.json").read_bytes()
    osu = (DATA / "osu" / "hpcbench-osu_bw-v5.3.2-host.txt").read_bytes()
    for name, data in (("iperf.json", iperf), ("osu_bw.txt", osu)):
        assert by_file(tmp_path, BOM + data, name) == by_file(tmp_path, data, name)
        assert by_file(tmp_path, BOM + data, name)[1] is None
    assert detect_tool((BOM + osu).decode()) == "osu"
    (run,) = iter_runs(["\ufeff" + ln for ln in text_lines(osu.decode())][:1] + text_lines(osu.decode())[1:])
    assert run.run.to_dict() | {"started_at": ""} == parse_text(osu.decode())[0].run.to_dict() | {"started_at": ""}


def _text_pairs() -> list[tuple[str, bytes, bytes]]:
    # a JSON document is decoded, not cleaned line by line: a byte order mark between two is
    # for its importer to take, not the cleaners
    return [(n, a, b) for n, a, b in _pairs() if not _json(n, a)]


@pytest.mark.parametrize("name, a, b", _text_pairs(), ids=[n for n, _, _ in _text_pairs()])
def test_a_bom_between_concatenated_logs(tmp_path, monkeypatch, name, a, b):
    # the second log saved with a byte order mark: it started a line in the middle of the file
    # and hid that line (an nccl-tests '# nThread' header, a banner) from the parsers
    for label, first, second in (("cat", a, b), ("CRLF", a.replace(b"\n", b"\r\n"), b.replace(b"\n", b"\r\n"))):
        want = by_file(tmp_path, first + second, name)
        data = first + BOM + second
        _same(want, by_file(tmp_path, data, name), f"{label}, a file")
        _same(want, by_gz(tmp_path, data, name), f"{label}, gzipped")
        _same(_text_form(want), by_text(data, name), f"{label}, parse_text")
        _same(by_file(tmp_path, first + second, "stdin"), by_stdin(monkeypatch, data), f"{label}, standard input")


IPERF_JSON = [DATA / "iperf3" / n for n in ("cloudpilot-10k_file-bytes-mode.json",
                                            "cloudpilot-bw_proxy_target_direct-10s-omit3.json")]
VLLM_JSON = DATA / "vllm-serving" / "ascend-qwen2.5-vl-3b-bench-serve-save-result.json"


def _json_pairs() -> list[tuple[str, bytes, bytes]]:
    return [("iperf3.json", IPERF_JSON[0].read_bytes(), IPERF_JSON[1].read_bytes()),
            ("vllm.json", VLLM_JSON.read_bytes(), VLLM_JSON.read_bytes().strip() + b"\n"),
            ("clusterbench.jsonl", _jsonl(), _jsonl())]


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


@pytest.mark.parametrize("copies", [1, 40], ids=["whole", "streamed"])
def test_a_bom_before_another_tools_output_every_way(tmp_path, monkeypatch, copies):
    # nccl-tests output, then BabelStream's saved with a byte order mark: the split between the
    # tools must see the BabelStream banner as the cleaners do, however the log is read
    monkeypatch.setattr(nccl_parallel, "MIN_BYTES", 0)
    nccl = (DATA / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt").read_bytes() * copies
    stream = (DATA / "babelstream" / "repo-results-v3.3-titanxp-cuda.txt").read_bytes()
    want = by_file(tmp_path, nccl + stream, "session.log")
    assert want[1] is None and {_tool_of(((run,), None)) for run in want[0]} == {"babelstream", "nccl-tests"}
    data = nccl + BOM + stream
    _same(want, by_file(tmp_path, data, "session.log"), "a file")
    _same(want, by_file(tmp_path, data, "session.log", jobs=2), "2 processes")
    _same(want, by_gz(tmp_path, data, "session.log"), "gzipped")
    _same(_text_form(want), by_text(data, "session.log"), "parse_text")
    _same(by_file(tmp_path, nccl + stream, "stdin"), by_stdin(monkeypatch, data), "standard input")


# -- one process or several --------------------------------------------------------------------

@pytest.mark.parametrize("path", NCCL[::3], ids=lambda p: p.name)
def test_processes_read_every_form_alike(tmp_path, monkeypatch, path):
    # the first part is read by a worker from the file itself: a byte order mark there was read
    # as the start of the first line
    monkeypatch.setattr(nccl_parallel, "PART_BYTES", 2048)
    monkeypatch.setattr(nccl_parallel, "MIN_BYTES", 0)
    data = path.read_bytes() * 6
    plain = by_file(tmp_path, data, path.name)
    for label, form, want in (("plain", data, plain), ("a BOM", BOM + data, plain),
                              ("progress", _progress(data, 5), plain),
                              ("CRLF", data.replace(b"\n", b"\r\n"), plain),
                              # at a line's start it is no part of the log: the second
                              # copy's header was hidden by it
                              ("a BOM in the middle", data + BOM + data, by_file(tmp_path, data + data, path.name))):
        _same(want, by_file(tmp_path, form, path.name, jobs=2), f"{label}, 2 processes")


# -- the command itself ------------------------------------------------------------------------

def _cli(tmp: Path, *argv: str, stdin: bytes | None = None) -> tuple[int, list[dict[str, Any]], str]:
    """``clusterbench import --json`` into a store of its own: exit code, lines, standard error."""
    db = tmp / f"{len(list(tmp.glob('*.db')))}.db"
    done = subprocess.run([sys.executable, "-m", "clusterbench", "import", "--json", "--db", str(db), *argv],
                          input=stdin or b"", capture_output=True, timeout=120)
    return done.returncode, [json.loads(ln) for ln in done.stdout.splitlines()], done.stderr.decode()


def _stored(lines: list[dict[str, Any]]) -> list[Any]:
    """Each run line with its measurements, but its clock, ids, file name and command."""
    out: list[Any] = []
    ms: list[Any] = []
    for obj in lines:
        if obj["kind"] == "measurement":
            ms.append({k: v for k, v in obj.items() if k != "run"})
        elif obj["kind"] == "run":
            run = {k: v for k, v in obj.items() if k not in ("id", "started_at", "ended_at", "command", "file")}
            run["meta"] = {k: v for k, v in run["meta"].items() if k != "file"}
            out.append((run, ms))
            ms = []
    return out


def test_the_command_reads_a_file_gz_stdin_and_fifo_alike(tmp_path):
    data = (DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt").read_bytes()
    log = tmp_path / "logs" / "stdin"    # the name standard input's runs are given
    log.parent.mkdir()
    log.write_bytes(BOM + _progress(data).replace(b"\n", b"\r\n"))
    with gzip.open(f"{log}.gz", "wb") as f:
        f.write(data)
    fifo = tmp_path / "logs" / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: Path(fifo).write_bytes(data), daemon=True)
    writer.start()
    results = {"file": _cli(tmp_path, str(log)), "gz": _cli(tmp_path, f"{log}.gz"),
               "stdin": _cli(tmp_path, "-", stdin=data), "fifo": _cli(tmp_path, str(fifo))}
    writer.join(10)
    want = _stored(results["file"][1])
    assert results["file"][0] == 0 and len(want) == 1 and len(want[0][1]) == 250
    for how, (rc, lines, err) in results.items():
        assert rc == 0 and err == "", (how, err)
        assert _stored(lines) == want, how


def test_the_command_refuses_a_log_alike_from_a_file_and_stdin(tmp_path):
    data = (DATA / "iperf3" / "pkb-NOT-iperf3-iperf2-enhanced-udp-tcp-multi.txt").read_bytes()
    log = tmp_path / "iperf2.txt"
    log.write_bytes(data)
    errors = []
    for argv, stdin, name in (((str(log),), None, str(log)), (("-",), BOM + data.replace(b"\n", b"\r\n"), "-")):
        rc, lines, err = _cli(tmp_path, *argv, stdin=stdin)
        assert rc == 2 and _stored(lines) == []
        (line,) = err.splitlines()[:1]
        errors.append(line.replace(f"{name}: ", ""))
    assert errors[0] == errors[1] and "iperf 2 output" in errors[0]
