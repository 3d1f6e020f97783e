"""Every command with hostile standard streams: an output encoding that cannot hold the text
(``PYTHONIOENCODING=ascii``, latin-1, the C locale without UTF-8 mode), a standard input, output
or error closed before the command starts (``<&-``, ``>&-``, ``2>&-``), a full standard error
(``2>/dev/full``), a reader that goes away after one line (``| head -1``) and a signal while a
read command is blocked writing to a pipe nobody reads.

Each runs a real ``python -m clusterbench`` (the streams must be the process's own) on a small
database filled by importing real logs under host names and tags that are not ASCII.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from json_schema import check_lines
from process_helpers import assert_all_gone, process_family, wait_until

from clusterbench.output import OUTPUT_FAILED
from clusterbench.records import COMPLETE
from clusterbench.store import Store

DATA = Path(__file__).parent / "data"
STREAM_LOG = DATA / "stream" / "babelstream-repo-results-v2.0-broadwell-mccalpin-cray.txt"
NCCL_LOG = DATA / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"
HOST = "n\u0153ud-\u00b5\u2192"     # œ (not latin-1), µ (latin-1), → (neither)
TAG = "site=z\u00fcrich\u00b1\u00b2"

# the read commands, run 1 and 2 the stream imports, run 3 the nccl-tests one
READS = {
    "list": ["results", "list"],
    "show": ["results", "show", "1-3"],
    "export": ["results", "export", "1-3"],
    "export-csv": ["results", "export", "1-3", "--csv"],
    "report": ["report", "1", "2", "-o", "{tmp}/r.html"],
    "compare": ["compare", "1", "2"],
    "validate": ["validate", "1", "--profile", "cpu-smoke"],
    "trend": ["trend", "--min-runs", "2"],
    "env-diff": ["env", "diff", "1", "2"],
    "env-show": ["env", "show", "1"],
    "theory": ["theory", "--run", "3"],
}
WITH_JSON = [k for k in READS if not k.startswith("export")]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "CLUSTERBENCH_DEBUG")}
    return {**env, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", **extra}


def _cb(argv: list[str], env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clusterbench", *argv], env=env or _env(), capture_output="stdout" not in kw,
                          timeout=120, **kw)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("stdio") / "runs.db")
    for i, log in ((1, STREAM_LOG), (2, STREAM_LOG), (3, NCCL_LOG)):
        p = _cb(["import", str(log), "--host", f"{HOST}{i}", "--tag", TAG, "--db", path])
        assert p.returncode == 0, p.stderr
    return path


def _argv(name: str, db: str, tmp: Path, as_json: bool = False) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in READS[name]] + (["--json"] if as_json else []) + ["--db", db]


_utf8: dict[tuple[str, bool], subprocess.CompletedProcess] = {}


def _reference(name: str, db: str, tmp: Path, as_json: bool = False) -> subprocess.CompletedProcess:
    """The command's output with a UTF-8 standard output: what the others are held to."""
    if (name, as_json) not in _utf8:
        _utf8[name, as_json] = _cb(_argv(name, db, tmp, as_json))
    return _utf8[name, as_json]


# -- an output encoding that cannot hold the text ----------------------------------------------

@pytest.mark.parametrize("name", list(READS))
def test_an_ascii_stdout_shows_what_it_cannot_encode_as_escapes(db, tmp_path, name):
    """``PYTHONIOENCODING=ascii`` with a host ``nœud-µ→``: the same lines, each character ASCII
    cannot hold written as its escape (``n\\u0153ud``); before, ``results list``, ``show``,
    ``trend`` and ``env`` ended with an internal UnicodeEncodeError."""
    want = _reference(name, db, tmp_path)
    got = _cb(_argv(name, db, tmp_path), _env(PYTHONIOENCODING="ascii"))
    assert b"internal error" not in got.stderr, got.stderr
    assert got.returncode == want.returncode, got.stderr
    assert got.stdout == want.stdout.decode().encode("ascii", "backslashreplace")


def test_the_escapes_are_there_where_the_text_is_not_ascii(db, tmp_path):
    shown = _cb(_argv("list", db, tmp_path), _env(PYTHONIOENCODING="ascii")).stdout.decode("ascii")
    assert "n\\u0153ud-\\xb5\\u21921" in shown and "site=z\\xfcrich\\xb1\\xb2" in shown


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "latin-1"},
                                 {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}],
                         ids=["latin-1", "C-locale"])
@pytest.mark.parametrize("name", ["list", "show", "trend", "env-show"])
def test_other_narrow_encodings_escape_only_what_they_cannot_hold(db, tmp_path, name, env):
    """latin-1 holds µ, ü, ± and ² (written as themselves), not œ or →; the C locale without
    UTF-8 mode is ASCII with Python's surrogateescape, which refuses them all just the same."""
    encoding = "latin-1" if "PYTHONIOENCODING" in env else "ascii"
    want = _reference(name, db, tmp_path)
    got = _cb(_argv(name, db, tmp_path), _env(**env))
    assert got.returncode == want.returncode == 0, got.stderr
    assert got.stdout == want.stdout.decode().encode(encoding, "backslashreplace")


@pytest.mark.parametrize("name", WITH_JSON)
def test_json_lines_are_the_same_bytes_whatever_the_encoding(db, tmp_path, name):
    """JSON escapes every character past ASCII itself: the lines never depend on the locale."""
    want = _reference(name, db, tmp_path, as_json=True)
    got = _cb(_argv(name, db, tmp_path, as_json=True), _env(PYTHONIOENCODING="ascii"))
    assert got.returncode == want.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    check_lines(got.stdout.decode("ascii"))


def test_a_handler_the_user_chose_is_kept(db, tmp_path):
    """``PYTHONIOENCODING=ascii:replace`` asks for ``?``: the command leaves that choice alone."""
    got = _cb(_argv("list", db, tmp_path), _env(PYTHONIOENCODING="ascii:replace"))
    assert got.returncode == 0 and b"n?ud-??1" in got.stdout, got.stderr


# -- standard streams closed before the command starts -----------------------------------------

def _closing(*fds: int):
    def close() -> None:
        for fd in fds:
            os.close(fd)
    return close


@pytest.mark.parametrize(("name", "as_json"), [(n, False) for n in READS] + [(n, True) for n in WITH_JSON])
def test_a_closed_stdout_is_one_line_and_exit_74(db, tmp_path, name, as_json):
    """``clusterbench ... >&-``: before, an internal AttributeError (Python leaves ``sys.stdout``
    None), exit 1. As ``ls >&-`` does: one line naming the output, and a non-zero exit, here the
    one every failed standard output ends with."""
    p = _cb(_argv(name, db, tmp_path, as_json), preexec_fn=_closing(1), stdout=None, stderr=subprocess.PIPE)
    assert p.returncode == OUTPUT_FAILED, p.stderr
    assert p.stderr == b"clusterbench: error: cannot write to standard output (closed): Bad file descriptor\n"


def test_a_command_that_prints_nothing_to_a_closed_stdout_succeeds(db, tmp_path):
    """As ``true >&-``: nothing was written, so nothing failed."""
    copy = tmp_path / "copy.db"
    copy.write_bytes(Path(db).read_bytes())
    p = _cb(["results", "tag", "1", "probe=yes", "--db", str(copy)], preexec_fn=_closing(1), stdout=None,
            stderr=subprocess.PIPE)
    assert (p.returncode, p.stderr) == (0, b"")
    with Store.open(str(copy)) as store:
        assert store.get_run(1).tags["probe"] == "yes"


@pytest.mark.parametrize("argv", [[], ["results"], ["--help"], ["--version"]])
@pytest.mark.parametrize("target", ["full", "closed"])
def test_help_to_a_failing_stdout_is_one_line(argv, target):
    """A bare ``clusterbench`` (or group) prints its help: before, to ``/dev/full`` or a closed
    standard output, a traceback and exit 1."""
    if target == "full":
        with open("/dev/full", "w") as full:
            p = _cb(argv, stdout=full, stderr=subprocess.PIPE)
        name = "/dev/full): No space left on device"
    else:
        p = _cb(argv, preexec_fn=_closing(1), stdout=None, stderr=subprocess.PIPE)
        name = "closed): Bad file descriptor"
    assert p.returncode == OUTPUT_FAILED, p.stderr
    assert p.stderr.decode() == f"clusterbench: error: cannot write to standard output ({name}\n"


def test_import_from_a_closed_stdin_is_one_line(tmp_path):
    """``clusterbench import - <&-``: before, an internal TypeError, exit 1."""
    db = str(tmp_path / "in.db")
    p = _cb(["import", "-", "--db", db], preexec_fn=_closing(0))
    assert p.returncode == 2, p.stderr
    assert p.stderr.decode().splitlines() == ["clusterbench: error: -: standard input is closed: nothing to read"]


@pytest.mark.parametrize("argv", [["results", "show", "99"], ["compare", "1", "99"], ["theory", "--nodes", "x"]])
def test_an_error_keeps_its_exit_code_when_stderr_is_closed_or_full(db, argv):
    """The one error line cannot be written: the exit code still says what happened (before:
    exit 1 for every one of them, and with ``2>&-`` the line went to standard output)."""
    want = _cb([*argv, "--db", db])
    assert want.returncode == 2 and want.stderr.startswith(b"clusterbench: error: ")
    closed = _cb([*argv, "--db", db], preexec_fn=_closing(2))
    assert (closed.returncode, closed.stdout) == (2, b"")
    with open("/dev/full", "w") as full:
        p = _cb([*argv, "--db", db], stdout=subprocess.PIPE, stderr=full)
    assert (p.returncode, p.stdout) == (2, b"")


def test_notes_on_a_closed_stderr_never_reach_the_json_lines(tmp_path):
    """An import of a good and a broken file says ``1 of 2 files not imported`` on standard error:
    with standard error closed it must not land among the JSON lines on standard output."""
    bad = tmp_path / "bad.txt"
    bad.write_text("no tool wrote this\n")
    argv = ["import", str(STREAM_LOG), str(bad), "--json", "--db", str(tmp_path / "n.db")]
    want = _cb(argv)
    assert want.returncode == 2 and b"1 of 2 files not imported" in want.stderr
    p = _cb(argv[:-1] + [str(tmp_path / "n2.db")], preexec_fn=_closing(2))
    assert p.returncode == 2
    objs = [json.loads(line) for line in p.stdout.decode().splitlines()]
    assert objs[-1]["kind"] == "summary" and objs[-1]["failed_files"]


# -- one benchmark ------------------------------------------------------------------------------

STREAM = ["stream", "--sizes", "1K:1K", "-n", "2", "--telemetry-interval", "0"]


def test_a_benchmark_with_stdin_and_stdout_closed_stores_its_run(tmp_path):
    db = str(tmp_path / "b.db")
    p = _cb([*STREAM, "--db", db], preexec_fn=_closing(0, 1), stdout=None, stderr=subprocess.PIPE)
    assert p.returncode == OUTPUT_FAILED, p.stderr
    errors = [e for e in p.stderr.decode().splitlines() if e.startswith("clusterbench: error:")]
    assert errors == ["clusterbench: error: cannot write to standard output (closed): Bad file descriptor; "
                      "the run is stored"], p.stderr
    with Store.open(db) as store:
        (run,) = store.list_runs()
        assert run.status == COMPLETE and store.measurements(run.id)


def test_a_benchmark_with_a_full_stderr_still_succeeds(tmp_path):
    """``2>/dev/full``: its notes and ``# run N stored`` line are lost, the run and the table are
    not (before: exit 1 for a complete run)."""
    db = str(tmp_path / "f.db")
    with open("/dev/full", "w") as full:
        p = _cb([*STREAM, "--db", db], stdout=subprocess.PIPE, stderr=full)
    assert p.returncode == 0
    assert b"Triad" in p.stdout
    with Store.open(db) as store:
        assert [r.status for r in store.list_runs()] == [COMPLETE]


# -- a reader that goes away, a signal while blocked writing -------------------------------------

@pytest.fixture(scope="module")
def big_db(tmp_path_factory) -> str:
    from clusterbench.records import Measurement, Run

    path = str(tmp_path_factory.mktemp("big") / "big.db")
    with Store.open(path) as store:
        for i in range(300):   # far more than a pipe holds, in every form
            store.save_run(Run(benchmark="coll", tags={"i": str(i), "site": "z\u00fcrich"}),
                           [Measurement("all_reduce", "busbw", float(j), "GB/s", {"bytes": j, "host": f"{HOST}{j % 4}"})
                            for j in range(40)])
    return path


BIG = {"show": ["results", "show", "1-300"], "export": ["results", "export", "1-300"],
       "csv": ["results", "export", "1-300", "--csv"], "list": ["results", "list", "--limit", "300", "--json"],
       "trend": ["trend", "--json"]}


@pytest.mark.parametrize("name", list(BIG))
def test_a_reader_that_leaves_after_one_line_gets_a_quiet_exit(big_db, name):
    """``| head -1``: no message, no "Exception ignored ... BrokenPipeError", exit 74 (see
    clusterbench.cli: the pipe's reader left; 0 only where everything fit in the pipe before)."""
    proc = subprocess.Popen([sys.executable, "-m", "clusterbench", *BIG[name], "--db", big_db], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == OUTPUT_FAILED and err == b"", err


def _blocked_writing(proc: subprocess.Popen) -> bool:
    """The command waits in a write to its full pipe (the kernel's wait channel says so; where it
    does not, the pipe holds nearly its 64 KiB)."""
    assert proc.stdout is not None
    if proc.poll() is not None:
        return True
    with contextlib.suppress(OSError), open(f"/proc/{proc.pid}/wchan") as f:
        if f.read().endswith("pipe_write"):
            return True
    buf = bytearray(4)
    fcntl.ioctl(proc.stdout.fileno(), termios.FIONREAD, buf)
    return int.from_bytes(buf, sys.byteorder) >= 60 * 1024


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("name", ["show", "export"])
def test_a_signal_while_blocked_on_a_full_pipe_is_one_line(big_db, name, sig):
    proc = subprocess.Popen([sys.executable, "-m", "clusterbench", *BIG[name], "--db", big_db], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    family = process_family(proc)
    wait_until(lambda: _blocked_writing(proc) or proc.poll() is not None, 60, "the pipe filled")
    assert proc.poll() is None, "finished before the pipe filled"
    assert _blocked_writing(proc)
    proc.send_signal(sig)
    assert proc.stderr is not None
    err = proc.stderr.read()   # the command ends without its output being read
    proc.wait(timeout=30)
    assert proc.returncode == 128 + sig, err
    assert err.decode().splitlines() == [f"clusterbench: error: interrupted by {'SIGTERM' if sig == signal.SIGTERM else 'SIGINT (Ctrl-C)'}"]
    assert_all_gone(family)
