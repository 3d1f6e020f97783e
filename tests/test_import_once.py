"""``import`` reads what cannot be read twice (a FIFO, ``<(...)``'s /dev/fd/N) once, hashing it
while it is parsed, as it does standard input; a file name that is not UTF-8 is stored and
printed with its undecodable bytes escaped; and the run ids printed for a file that turns out to
have been imported before are followed by a note saying they were not stored, in text mode too."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from judge_helpers import cli

from clusterbench.store import Store

DATA = Path(__file__).parent / "data"
OSU = DATA / "osu" / "hpcbench-osu_bw-v5.3.2-host.txt"
NCCL = DATA / "nccl-tests" / "superbench-nccl_alltoall.log"


def _cb(*argv: object, **kw) -> subprocess.CompletedProcess:
    # a separate process with a time limit: reading a FIFO twice would block for ever
    return subprocess.run([sys.executable, "-m", "clusterbench", *map(str, argv)], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL, **kw)


def _feed(fifo: Path, data: bytes) -> threading.Thread:
    """Write ``data`` into ``fifo`` once a reader opens it."""
    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(data)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


def _measurements(db: Path) -> list[list[dict]]:
    with Store.open(db) as s:
        return [[m.to_dict() for m in s.measurements(int(r.id or 0))] for r in s.list_runs(oldest_first=True)]


@pytest.mark.parametrize("name", ["nccl_alltoall.log", "nccl_alltoall.log.gz"])
def test_a_fifo_is_read_once_and_known_by_its_content(tmp_path, name):
    reference = tmp_path / "reference.db"
    assert _cb("import", NCCL, "--db", reference).returncode == 0
    fifo = tmp_path / name
    os.mkfifo(fifo)
    data = NCCL.read_bytes()
    db = tmp_path / "r.db"
    writer = _feed(fifo, gzip.compress(data) if name.endswith(".gz") else data)
    p = _cb("import", fifo, "--db", db)
    writer.join(5)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout.startswith(f"{fifo}: run 1: ")
    assert _measurements(db) == _measurements(reference)

    # the same content again, through a FIFO or as a file: already imported, nothing stored twice
    writer = _feed(fifo, gzip.compress(data) if name.endswith(".gz") else data)
    p = _cb("import", fifo, "--db", db)
    writer.join(5)
    assert p.returncode == 0 and "already imported as run(s) 1 (same content): skipped" in p.stdout, p.stderr
    p = _cb("import", NCCL, "--db", db)
    assert p.returncode == 0 and "already imported as run(s) 1" in p.stdout, p.stderr
    assert len(_measurements(db)) == 1


def test_a_pipe_named_by_dev_fd_is_read_once(tmp_path):
    r, w = os.pipe()
    data = OSU.read_bytes()

    def write() -> None:
        with os.fdopen(w, "wb") as f:
            f.write(data)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    db = tmp_path / "r.db"
    try:
        p = _cb("import", f"/dev/fd/{r}", "--db", db, pass_fds=(r,))
    finally:
        os.close(r)
        t.join(5)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"/dev/fd/{r}: run 1: osu 5.3.2 osu_bw complete, 2 measurements")
    assert len(_measurements(db)) == 1


def test_a_file_name_that_is_not_utf8_is_stored_escaped(capsys, tmp_path):
    name = os.fsdecode(os.fsencode(str(tmp_path)) + b"/bad\xff\xfe.txt")
    Path(name).write_bytes(OSU.read_bytes())
    shown = str(tmp_path) + "/bad\\xff\\xfe.txt"
    db = tmp_path / "r.db"
    rc, out, err = cli(capsys, "import", name, "--db", db)
    assert rc == 0 and err == "", err
    assert out.splitlines()[0] == f"{shown}: run 1: osu 5.3.2 osu_bw complete, 2 measurements"
    with Store.open(db) as s:
        run = s.get_run(1)
        assert run.meta["file"] == shown
        assert s.conn.execute("SELECT name FROM imported_files").fetchall() == [(shown,)]
    rc, out, err = cli(capsys, "import", name, "--db", db, "--json")
    assert rc == 0 and f'"file": "{shown}"'.replace("\\", "\\\\") in out and "\\udc" not in out, out
    rc, out, err = cli(capsys, "import", name, "--db", db)
    assert rc == 0 and out == f"{shown}: already imported as run(s) 1 (same content): skipped\n"


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_text_mode_says_when_printed_runs_were_not_stored(capsys, tmp_path, monkeypatch):
    src = tmp_path / "src.db"
    rc, _, err = cli(capsys, "import", OSU, "--db", src)
    assert rc == 0, err
    rc, lines, err = cli(capsys, "results", "export", "1", "--db", src)
    assert rc == 0, err
    db = tmp_path / "r.db"
    _stdin(monkeypatch, lines.encode())
    rc, out, err = cli(capsys, "import", "-", "--db", db)
    assert rc == 0 and out.startswith("-: run 1: ") and err == "", (out, err)

    # standard input is known only once read: its runs print before it is found imported
    _stdin(monkeypatch, lines.encode())
    rc, out, err = cli(capsys, "import", "-", "--db", db)
    assert rc == 0 and len(out.splitlines()) == 2, out
    assert out.startswith("-: run 2: ") and out.endswith("\n-: already imported as run(s) 1 (same content): skipped\n")
    assert err == "# note: -: run(s) 2 printed above were not stored: the file was imported before\n"
    with Store.open(db) as s:
        assert [r.id for r in s.list_runs()] == [1]
