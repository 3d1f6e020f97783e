"""ingest.source: how an import reads its files (plain, .gz, FIFO, directory), hashes them for
their identity, and copies a pipe to a temporary file."""

import gzip
import hashlib
import os
from pathlib import Path

import pytest
from import_sources import (
    BOM,
    _json,
    _progress,
    _same,
    _text_form,
    _tool_of,
    by_file,
    by_gz,
    by_stdin,
    by_text,
)
from paths import DATA
from tool_logs import LOGS

import clusterbench.ingest as ingest
from clusterbench.errors import ClusterbenchError
from clusterbench.ingest import nccl_parallel
from clusterbench.ingest.common import LogFormatError
from clusterbench.ingest.source import (
    file_digest,
    identity,
    new_digest,
    read_once,
    runs_of,
    spool,
    streamed,
)

LOG = Path(__file__).parent.parent / "data" / "nccl-tests" / "seed-tensorwave-mi355x-4node-all_reduce.txt"


def test_a_regular_file_is_read_twice_a_fifo_once(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert not read_once(str(LOG)) and not streamed(str(LOG))
    assert read_once(str(fifo)) and streamed(str(fifo))
    assert read_once("-")
    # a missing file is reported when it is opened, not taken for a pipe
    assert not read_once(str(tmp_path / "missing")) and not streamed(str(tmp_path / "missing"))


def test_a_gz_file_has_the_identity_of_what_it_holds(tmp_path):
    gz = tmp_path / "log.txt.gz"
    gz.write_bytes(gzip.compress(LOG.read_bytes()))
    assert file_digest(str(gz)).hexdigest() == hashlib.sha256(LOG.read_bytes()).hexdigest()
    assert file_digest(str(LOG)).hexdigest() == hashlib.sha256(LOG.read_bytes()).hexdigest()


def test_unreadable_files_are_one_line(tmp_path):
    with pytest.raises(ClusterbenchError, match="^is a directory$"):
        file_digest(str(tmp_path))
    bad = tmp_path / "bad.gz"
    bad.write_bytes(gzip.compress(b"x" * 1000)[:-12] + b"\xff" * 12)   # the CRC and size replaced
    with pytest.raises(ClusterbenchError):
        file_digest(str(bad))
    with pytest.raises(ClusterbenchError, match="^is a directory$"):
        list(runs_of(str(tmp_path), None))


def test_identity_is_the_content_and_the_options_that_change_what_is_stored():
    d = new_digest()
    d.update(b"log")
    plain = identity(d, None, None, {})
    assert plain == f"sha256:{hashlib.sha256(b'log').hexdigest()}"
    tagged = identity(d, "nccl-tests", "gpu01", {"b": "2", "a": "1"})
    assert tagged == plain + ' {"host": "gpu01", "tags": {"a": "1", "b": "2"}, "tool": "nccl-tests"}'
    assert identity(d, None, None, {"a": "1"}) != identity(d, None, None, {"a": "2"})


def test_a_file_read_once_is_hashed_as_it_is_parsed():
    digest = new_digest()
    runs = list(runs_of(str(LOG), None, digest, name="the-log"))
    assert [r.run.status for r in runs] == ["complete"] and len(runs[0]) > 0
    assert digest.hexdigest() == hashlib.sha256(LOG.read_bytes()).hexdigest()


def test_runs_of_a_gz_file_drop_the_suffix_from_their_name(tmp_path):
    gz = tmp_path / "all_reduce.txt.gz"
    gz.write_bytes(gzip.compress(LOG.read_bytes()))
    plain = list(runs_of(str(LOG), None))
    packed = list(runs_of(str(gz), None))
    assert [len(r) for r in packed] == [len(r) for r in plain]
    assert packed[0].run.meta["file"] == str(gz)[:-3]
    assert [r.run.meta["file"] for r in runs_of(str(gz), None, name="named.gz")] == ["named"]


def test_spool_copies_a_file_and_refuses_binary_data(tmp_path):
    copy = spool(str(LOG))
    try:
        assert Path(copy).read_bytes() == LOG.read_bytes()
    finally:
        os.unlink(copy)
    binary = tmp_path / "zeros"
    binary.write_bytes(b"\x00" * 4096)
    before = set(os.listdir(os.environ.get("TMPDIR", "/tmp")))
    with pytest.raises(LogFormatError, match="binary data"):
        spool(str(binary))
    # the temporary copy is gone with the error
    assert not {n for n in set(os.listdir(os.environ.get("TMPDIR", "/tmp"))) - before
                if n.startswith("clusterbench-import-")}


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


# logs whose runs a progress line read as a line of its own changes (a table cut, rows lost)
PROGRESS_LOGS = ["nccl-tests/seed-mi300x-rccl-all_reduce-8gpu.txt", "transferbench/seed-mi300x-example-cfg.txt",
                 "transferbench/seed-mi300x-p2p.txt", "rocblas-bench/seed-mi300x-gemm_strided_batched_ex-bf16.txt",
                 "osu/rocm-blogs-gpu-aware-mpi-osu_bw-rocm-DD-16MiB.txt", "babelstream/seed-mi300x-hip-8gpu-mpi.txt"]


def _text_pairs() -> list[tuple[str, bytes, bytes]]:
    # a JSON document is decoded, not cleaned line by line: a byte order mark between two is
    # for its importer to take, not the cleaners
    return [(n, a, b) for n, a, b in _pairs() if not _json(n, a)]


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
