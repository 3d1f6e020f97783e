"""ingest.source: how an import reads its files (plain, .gz, FIFO, directory), hashes them for
their identity, and copies a pipe to a temporary file."""

import gzip
import hashlib
import os
from pathlib import Path

import pytest

from clusterbench.errors import ClusterbenchError
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
