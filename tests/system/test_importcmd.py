"""System tests (importcmd): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import csv
import gc
import gzip
import io
import json
import os
import re
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from child_cli import _cb, _deep_array, _make_newer, _one_error, _runs
from cluster_fixtures import IP
from import_sources import BOM, _progress
from parallel_import import FAILED, _texts, _write
from paths import DATA, TESTS
from pg_fixtures import SECRET, SRC, _count, _start, _stop, pg_server_or_skip
from stored_runs import ALLTOALL, OSU, SEED_NCCL, cli_results_cmds, cli_store_location
from stored_runs import _runs as _results_cmds_runs
from system_cli import (
    LOG,
    STREAM_LOG,
    DATA_postgres,
    _closing,
    _default_sighup,
    _errors,
    _export,
    _fault_disk_cb,
    _finish,
    _healthy,
    _store_versions_cb,
    cli,
)
from system_cli import _cb as _stdio_cb

from clusterbench.output import OUTPUT_FAILED
from clusterbench.records import Run
from clusterbench.store import Store, warn

NCCL_LOG = DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"


def _deep_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


DATA_fault_disk = TESTS / "data" / "nccl-tests"


SMALL_LOG = DATA_fault_disk / "seed-tensorwave-mi355x-4node-all_reduce.txt"


BIG_LOG = DATA_fault_disk / "a3mega-h100-2node-all_reduce.txt"


DATA_fault_import = TESTS / "data" / "nccl-tests"


COMPLETE_LOGS = ("a3mega-h100-2node-all_reduce.txt", "seed-mi300x-rccl-all_reduce-8gpu.txt",
                 "seed-tensorwave-mi355x-4node-all_reduce.txt")


RUNS = 3000


@pytest.fixture(scope="module")
def big_log(tmp_path_factory) -> Path:
    texts = [(DATA_fault_import / name).read_text() for name in COMPLETE_LOGS]
    path = tmp_path_factory.mktemp("big") / "3000-runs.log"
    with path.open("w") as f:
        for i in range(RUNS):  # concatenated logs, as a job that ran nccl-tests in a loop leaves
            text = texts[i % len(texts)]
            f.write(text if text.endswith("\n") else text + "\n")
    return path


def _import(*argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "clusterbench", "import", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_sighup)


def _wait(proc: subprocess.Popen) -> tuple[str, str]:
    killer = threading.Timer(300, proc.kill)
    killer.start()
    try:
        return proc.communicate(timeout=320)
    finally:
        killer.cancel()


def _fault_import_runs(db: str) -> list:
    with Store.open(db) as store:
        return store.list_runs(limit=RUNS * 2)


def _signal_mid_import(any_db: str, big_log: Path, sig: int) -> None:
    proc = _import(str(big_log), "--db", any_db)
    assert proc.stdout is not None
    stored_lines = 0
    for line in proc.stdout:  # each run is printed as it is written, inside the transaction
        stored_lines += ": run " in line
        if stored_lines == 700:
            break
    os.kill(proc.pid, sig)
    _, err = _wait(proc)
    assert proc.returncode != 0
    assert stored_lines == 700
    if sig in (signal.SIGTERM, signal.SIGINT):
        assert proc.returncode == 128 + sig
        assert err.splitlines()[-1] == f"clusterbench: error: interrupted by {'SIGINT (Ctrl-C)' if sig == signal.SIGINT else 'SIGTERM'}"
        assert "Traceback" not in err
        # the run ids it printed do not exist: it says so
        assert re.search(r"^# note: .*: run\(s\) \d+-\d+ printed above were not stored", err, re.M), err
    assert _fault_import_runs(any_db) == []  # not 700 runs: the file is stored whole or not at all

    again = _import(str(big_log), "--db", any_db, "--json")
    out, err = _wait(again)
    assert again.returncode == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["kind"] == "summary" and len(summary["runs"]) == RUNS and summary["already_imported"] == []
    runs = _fault_import_runs(any_db)
    assert len(runs) == RUNS and {r.status for r in runs} == {"complete"}

    third = _import(str(big_log), "--db", any_db)
    out, err = _wait(third)
    assert third.returncode == 0, err
    assert out.strip() == f"{big_log}: already imported as run(s) {min(r.id for r in runs)}-{max(r.id for r in runs)} " \
                          "(same content): skipped"
    assert len(_fault_import_runs(any_db)) == RUNS  # no duplicates


def _import_under_way(tmp_path: Path, lines: int, nohup: bool = False) -> subprocess.Popen:
    """An import of 3,000 runs, far more than are read before the signal, once it has printed
    ``lines`` lines."""
    data = TESTS / "data" / "nccl-tests" / "seed-tensorwave-mi355x-4node-all_reduce.txt"
    big = tmp_path / "big.log"
    big.write_text(data.read_text() * 3000)
    argv = [sys.executable, "-m", "clusterbench", "import", str(big), "--db", str(tmp_path / "i.db")]
    proc = subprocess.Popen(["nohup", *argv] if nohup else argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    for n, _line in enumerate(proc.stdout, 1):
        if n == lines:
            break
    return proc


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


NCCL = DATA / "nccl-tests" / "superbench-nccl_alltoall.log"


def _import_once_cb(*argv: object, **kw) -> subprocess.CompletedProcess:
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


def _peak_rss(*argv: object) -> tuple[int, str]:
    """The exit code and the most memory (KiB resident) of ``clusterbench ARGV``, and its stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "clusterbench", *map(str, argv)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss, f"{proc.returncode} {err}"


NCCL_LOG_results_cmds = TESTS / "data" / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"


def _show(capsys, db: str, *args: str) -> str:
    rc, out, err = cli_results_cmds(capsys, "results", "show", *args, "--db", db)
    assert rc == 0, err
    return out


def _passfile(path: Path, server, password: str) -> Path:
    path.write_text(f"# host:port:database:user:password\n127.0.0.1:{server.port}:*:cbpw:{password}\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def cbpw_db(pg_server):
    """A database owned by the role that must authenticate with a password."""
    name = pg_server.create_db(owner="cbpw")
    yield pg_server.url(name, user="cbpw")
    pg_server.drop_db(name)


HERE = TESTS


SRC_store_cluster = str(HERE.parent / "src")


ALLTOALL_store_cluster = HERE / "data" / "nccl-tests" / "superbench-nccl_alltoall.log"   # 206 measurements


WRITERS, RUNS_store_cluster, MEAS = 32, 4, 300


@pytest.fixture(scope="module")
def server_store_cluster(cluster):
    yield from pg_server_or_skip(listen=cluster.hosts[0], prefix=[IP, "netns", "exec", cluster.namespaces[0]])


def _in_host(cluster, i: int, argv: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": SRC_store_cluster, "CLUSTERBENCH_HOSTNAME": f"node{i}", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(cluster.exec_argv(i, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def _wait_line(proc: subprocess.Popen, want: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        if ready:
            line = proc.stdout.readline()
            if want in line:
                return
            if not line and proc.poll() is not None:
                break
    raise AssertionError(f"writer never printed {want}: rc={proc.poll()} {proc.stderr.read() if proc.poll() is not None else ''}")


@pytest.fixture
def readonly_dir(tmp_path):
    """A directory this process cannot write: chmod for a user, a read-only tmpfs for root."""
    where = tmp_path / "ro"
    where.mkdir()
    if os.geteuid() != 0:
        yield where, lambda: where.chmod(0o555)
        where.chmod(0o755)
        return
    if not shutil.which("mount") or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)],
                                                   capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield where, lambda: subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
    finally:
        gc.collect()   # a connection left open keeps the mount busy
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.parametrize("tool", ["nccl-tests", "rccl-tests", "iperf3", "vllm-serving", "clusterbench-jsonl"])
def test_json_nested_thousands_deep_is_refused_and_the_batch_goes_on(tmp_path, tool):
    deep = tmp_path / "deep.json"
    deep.write_text(_deep_object(50_000) + "\n")
    db = tmp_path / "cb.db"
    p = _cb("import", deep, "--tool", tool, "--db", db)
    err = _one_error(p)
    assert err == f"clusterbench: error: {deep}: {tool} data nested more than {sys.getrecursionlimit()} " \
                  "levels deep: not a log this tool writes"
    # in a batch: the deep file is named, the good one stored, exit 2 at the end
    p = _cb("import", deep, NCCL_LOG, "--db", db)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert [r.source.split()[0] for r in _runs(db)] == ["rccl-tests"]


def test_deep_json_on_standard_input(tmp_path):
    err = _one_error(_cb("import", "-", "--tool", "vllm-serving", "--db", tmp_path / "cb.db",
                         stdin=_deep_array(100_000)))
    assert "-: vllm-serving data nested more than" in err


def test_import_onto_a_full_disk(tiny_fs):
    db = tiny_fs / "results.db"
    first = _fault_disk_cb("import", str(SMALL_LOG), "--db", str(db))
    assert first.returncode == 0, first.stderr
    before = _healthy(db)
    big = tiny_fs.parent / "big.log"
    big.write_text(BIG_LOG.read_text() * 200)  # 200 runs, several MB of rows: more than is left
    p = _fault_disk_cb("import", str(big), str(SMALL_LOG), "--db", str(db), "--tag", "second=yes")
    assert p.returncode == 2, p.stderr
    errors = [e for e in p.stderr.splitlines() if e.startswith("clusterbench: error:")]
    assert errors[0].startswith(f"clusterbench: error: {big}: cannot write to results database {db}: "
                                f"no space left on the file system holding it"), p.stderr
    assert f"free in {tiny_fs}" in errors[0] and "Traceback" not in p.stderr
    assert "no transaction is active" not in p.stderr and "cannot rollback" not in p.stderr
    after = _healthy(db)
    # the big file left nothing; the small one, with its new tag another import, fit or failed whole
    assert after[:len(before)] == before
    assert all(n == before[0][2] for _, _, n in after[len(before):])
    again = _fault_disk_cb("results", "list", "--db", str(db))
    assert again.returncode == 0, again.stderr


def test_sigterm_mid_import_stores_nothing_then_the_import_completes(any_db, big_log):
    _signal_mid_import(any_db, big_log, signal.SIGTERM)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL, signal.SIGHUP], ids=lambda s: signal.Signals(s).name)
def test_any_signal_mid_import_stores_nothing(db, big_log, sig):
    _signal_mid_import(db, big_log, sig)


def test_the_same_content_from_standard_input_is_skipped(tmp_path):
    db = str(tmp_path / "stdin.db")
    log = DATA_fault_import / COMPLETE_LOGS[2]
    first = subprocess.run([sys.executable, "-m", "clusterbench", "import", str(log), "--db", db],
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    piped = subprocess.run([sys.executable, "-m", "clusterbench", "import", "-", "--db", db, "--json"],
                           input=log.read_text(), capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    summary = json.loads(piped.stdout.splitlines()[-1])
    assert summary["runs"] == [] and summary["already_imported"] == [{"file": "-", "runs": [1]}]
    assert len(_fault_import_runs(db)) == 1
    # another host's copy of the same text is another import (--host changes what is stored)
    other = subprocess.run([sys.executable, "-m", "clusterbench", "import", str(log), "--host", "n2", "--db", db],
                           capture_output=True, text=True, timeout=120)
    assert other.returncode == 0 and len(_fault_import_runs(db)) == 2
    # deleting the runs forgets the file: it can be imported again
    subprocess.run([sys.executable, "-m", "clusterbench", "results", "delete", "1-2", "--db", db], check=True,
                   capture_output=True, timeout=60)
    back = subprocess.run([sys.executable, "-m", "clusterbench", "import", str(log), "--db", db],
                          capture_output=True, text=True, timeout=120)
    assert back.returncode == 0 and ": run 3:" in back.stdout


def test_sigterm_ends_other_commands_with_one_line(tmp_path):
    """An import in progress: rolled back, one line, exit 143 (tests/system/test_importcmd.py checks
    what is stored)."""
    proc = _import_under_way(tmp_path, lines=100)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = _finish(proc)
    assert proc.returncode == 143
    assert err.splitlines()[-1] == "clusterbench: error: interrupted by SIGTERM", err
    assert re.search(r"Traceback", err) is None


@pytest.mark.parametrize("nohup", [False, True])
def test_a_hangup_outside_a_run_is_one_line_or_ignored_under_nohup(tmp_path, nohup):
    """A closed terminal while an import runs (no run of ranks with its own handlers): it ended
    silently, killed by SIGHUP. Now one line and exit 129, as SIGTERM gives 143; a command started
    under nohup (SIGHUP ignored) keeps ignoring it and completes."""
    proc = _import_under_way(tmp_path, lines=10, nohup=nohup)
    os.kill(proc.pid, signal.SIGHUP)
    _, err = _finish(proc)
    if nohup:
        assert proc.returncode == 0, err
        return
    assert proc.returncode == 129, err
    assert err.splitlines()[-1] == "clusterbench: error: interrupted by SIGHUP", err
    assert "Traceback" not in err


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


@pytest.mark.parametrize("name", ["nccl_alltoall.log", "nccl_alltoall.log.gz"])
def test_a_fifo_is_read_once_and_known_by_its_content(tmp_path, name):
    reference = tmp_path / "reference.db"
    assert _import_once_cb("import", NCCL, "--db", reference).returncode == 0
    fifo = tmp_path / name
    os.mkfifo(fifo)
    data = NCCL.read_bytes()
    db = tmp_path / "r.db"
    writer = _feed(fifo, gzip.compress(data) if name.endswith(".gz") else data)
    p = _import_once_cb("import", fifo, "--db", db)
    writer.join(5)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout.startswith(f"{fifo}: run 1: ")
    assert _measurements(db) == _measurements(reference)

    # the same content again, through a FIFO or as a file: already imported, nothing stored twice
    writer = _feed(fifo, gzip.compress(data) if name.endswith(".gz") else data)
    p = _import_once_cb("import", fifo, "--db", db)
    writer.join(5)
    assert p.returncode == 0 and "already imported as run(s) 1 (same content): skipped" in p.stdout, p.stderr
    p = _import_once_cb("import", NCCL, "--db", db)
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
        p = _import_once_cb("import", f"/dev/fd/{r}", "--db", db, pass_fds=(r,))
    finally:
        os.close(r)
        t.join(5)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"/dev/fd/{r}: run 1: osu 5.3.2 osu_bw complete, 2 measurements")
    assert len(_measurements(db)) == 1


def test_import_cli_stores_the_same_with_any_jobs(tmp_path, small_parts):
    from judge_helpers import run_cli

    texts = _texts()
    path = _write(tmp_path, [texts[i % len(texts)] for i in range(120)])
    stored = []
    for jobs in (1, 2):
        db = tmp_path / f"j{jobs}.db"
        code, out, err = run_cli("import", "--jobs", jobs, "--db", db, path)
        assert code == 0, err
        with Store.open(db) as s:
            runs = s.list_runs(limit=1000)
            stored.append([(r.status, r.ranks, r.meta.get("op"),
                            [(m.benchmark, m.metric, m.value, m.unit, m.params) for m in s.measurements(r.id)])
                           for r in sorted(runs, key=lambda r: r.id)])
    assert len(stored[0]) == 120 and stored[0] == stored[1]


def test_import_dry_run_prints_the_same_with_any_jobs(tmp_path, small_parts):
    from judge_helpers import run_cli

    texts = _texts()
    path = _write(tmp_path, [texts[i % len(texts)] + (FAILED if i % 37 == 5 else "") for i in range(150)])
    for extra in ([], ["--json"]):
        outs = []
        for jobs in (1, 2):
            code, out, err = run_cli("import", "--dry-run", "--jobs", jobs, "--tag", "team=x", "--host", "h1",
                                     *extra, path)
            assert code == 1, err   # the failed runs
            outs.append(re.sub(r'"started_at": "[^"]*"', "", out))   # when each was parsed
        assert outs[0] == outs[1]
        assert outs[0].count("failed") >= 4
    assert outs[0].count('"tags": {"team": "x"}') == 150 and outs[0].count('"stored": false') == 151


def test_zero_bytes_without_newlines_take_no_more_memory_than_a_small_log(tmp_path):
    path = tmp_path / "zeros.bin"
    path.write_bytes(bytes(64 << 20))
    small, out = _peak_rss("import", OSU, "--dry-run")
    assert out == "0 "
    rss, out = _peak_rss("import", path, "--dry-run")
    assert out == f"2 clusterbench: error: {path}: binary data, not a text log\n"
    assert rss < small + (32 << 10)   # the whole file, as text, would be 64 MiB and more


def test_a_password_of_every_hostile_character_authenticates_and_is_never_stored(capsys, server, tmp_path):
    password = f"p@ss:w/o?r#d%20 &x=\"'é{SECRET}"
    server.sql(f"ALTER ROLE cbpw PASSWORD '{password.replace(chr(39), chr(39) * 2)}'")
    name = server.create_db(owner="cbpw")
    try:
        url = f"postgresql://cbpw:{quote(password, safe='')}@127.0.0.1:{server.port}/{name}?sslmode=disable"
        rc, out, err = cli(capsys, "import", LOG, "--db", url, "--tag", "t=1")
        assert rc == 0, err
        assert SECRET not in out + err and quote(password, safe="") not in out + err
        rc, out, err = cli(capsys, "results", "show", "last", "--json", "--db", url)
        assert rc == 0 and SECRET not in out + err
        stored = str(server.sql("SELECT command, env, errors, meta FROM runs", db=name))
        assert SECRET not in stored and "p%40ss" not in stored
    finally:
        server.drop_db(name)
        server.sql(f"ALTER ROLE cbpw PASSWORD '{server.password}'")


def test_the_server_killed_mid_import_leaves_nothing_and_the_import_then_completes(server, dbname, tmp_path):
    texts = [(DATA_postgres / n).read_text() for n in ("a3mega-h100-2node-all_reduce.txt",
                                               "seed-mi300x-rccl-all_reduce-8gpu.txt")]
    big = tmp_path / "big.log"
    with big.open("w") as f:
        for i in range(2000):
            f.write(texts[i % 2].rstrip("\n") + "\n")
    url = server.url(dbname)
    proc = subprocess.Popen([sys.executable, "-m", "clusterbench", "import", str(big), "--db", url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for _ in range(100):   # runs printed: the transaction is under way
        if not proc.stdout.readline():
            break
    _stop(server)
    out, err = proc.communicate(timeout=120)
    _start(server)
    assert proc.returncode == 2 and len(_errors(err)) == 1, err
    assert _count(server, dbname) == 0 and _count(server, dbname, "measurement_packs") == 0
    again = subprocess.run([sys.executable, "-m", "clusterbench", "import", str(big), "--db", url],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert _count(server, dbname) == 2000


def test_a_statement_timeout_is_one_line_and_stores_nothing(capsys, server, dbname, tmp_path):
    big = tmp_path / "big.log"
    big.write_text((LOG.read_text().rstrip("\n") + "\n") * 300)
    Store.open(server.url(dbname)).close()   # migrated without the timeout
    url = f"{server.url(dbname)}?options=-c%20statement_timeout%3D1"
    rc, _, err = cli(capsys, "import", big, "--db", url)
    assert rc == 2 and len(_errors(err)) == 1 and "statement timeout" in err, err
    assert _count(server, dbname) == 0


def test_a_role_that_cannot_create_tables_is_told_why_in_one_line(capsys, server, dbname):
    server.sql("DO $$BEGIN CREATE ROLE cbnocreate LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END$$")
    rc, _, err = cli(capsys, "import", LOG, "--db", server.url(dbname, user="cbnocreate"))
    assert rc == 2 and len(_errors(err)) == 1 and "permission denied for schema public" in err
    assert "owning the database" in err
    assert server.sql("SELECT to_regclass('runs')", db=dbname) == [(None,)]


def test_sqlite_postgresql_sqlite_round_trip_shows_every_run_byte_for_byte(capsys, tmp_path, pg_server):
    first, back = str(tmp_path / "first.db"), str(tmp_path / "back.db")
    _results_cmds_runs(first, 2, {"team": "a,b", "k": " v "})
    rc, _, err = cli_results_cmds(capsys, "import", NCCL_LOG_results_cmds, "--db", first)
    assert rc == 0, err
    with Store.open(first) as s:   # a failed run, its errors shown by results show
        s.save_run(Run(benchmark="coll", status="failed", errors=["rank 1 died"]), [])
    name = pg_server.create_db()
    try:
        url = pg_server.url(name)
        for frm, to in ((first, url), (url, back)):
            rc, out, err = cli_results_cmds(capsys, "results", "copy", "--from", frm, "--to", to)
            assert rc == 0 and "copied 4 run(s)" in out, err
        for sel in ("1", "2", "3", "4", "1..4", "last", 'team="a,b"'):
            shown = _show(capsys, first, sel)
            assert _show(capsys, url, sel) == shown == _show(capsys, back, sel)
            shown = _show(capsys, first, sel, "--json")
            assert _show(capsys, url, sel, "--json") == shown == _show(capsys, back, sel, "--json")
        rc, listed, _ = cli_results_cmds(capsys, "results", "list", "--db", first)
        assert cli_results_cmds(capsys, "results", "list", "--db", back)[1] == listed
        with Store.open(first) as a, Store.open(back) as b:
            assert [a.telemetry(i) for i in (1, 2)] == [b.telemetry(i) for i in (1, 2)] != [[], []]
            assert a.uids() == b.uids()
        # a second round trip stores nothing twice
        rc, out, err = cli_results_cmds(capsys, "results", "copy", "--from", back, "--to", url)
        assert rc == 0 and "copied 0 run(s)" in out and "skipped 4" in out, err
    finally:
        pg_server.drop_db(name)


def test_import_from_a_closed_stdin_is_one_line(tmp_path):
    """``clusterbench import - <&-``: before, an internal TypeError, exit 1."""
    db_stdio = str(tmp_path / "in.db")
    p = _stdio_cb(["import", "-", "--db", db_stdio], preexec_fn=_closing(0))
    assert p.returncode == 2, p.stderr
    assert p.stderr.decode().splitlines() == ["clusterbench: error: -: standard input is closed: nothing to read"]


def test_notes_on_a_closed_stderr_never_reach_the_json_lines(tmp_path):
    """An import of a good and a broken file says ``1 of 2 files not imported`` on standard error:
    with standard error closed it must not land among the JSON lines on standard output."""
    bad = tmp_path / "bad.txt"
    bad.write_text("no tool wrote this\n")
    argv = ["import", str(STREAM_LOG), str(bad), "--json", "--db", str(tmp_path / "n.db")]
    want = _stdio_cb(argv)
    assert want.returncode == 2 and b"1 of 2 files not imported" in want.stderr
    p = _stdio_cb(argv[:-1] + [str(tmp_path / "n2.db")], preexec_fn=_closing(2))
    assert p.returncode == 2
    objs = [json.loads(line) for line in p.stdout.decode().splitlines()]
    assert objs[-1]["kind"] == "summary" and objs[-1]["failed_files"]


def test_endless_binary_data_on_a_pipe_is_refused_at_once(tmp_path):
    """``cat /dev/zero | clusterbench import -``: refused at the first NUL, as the parser refuses
    binary data, not once the temporary copy has filled the disk."""
    db = tmp_path / "r.db"
    env = {**os.environ, "PYTHONPATH": SRC, "TMPDIR": str(tmp_path)}
    zeros = subprocess.Popen(["cat", "/dev/zero"], stdout=subprocess.PIPE)
    try:
        p = subprocess.run([sys.executable, "-m", "clusterbench", "import", "-", "--db", str(db)],
                           stdin=zeros.stdout, capture_output=True, text=True, env=env, timeout=60)
    finally:
        zeros.kill()
        zeros.wait()
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == ["clusterbench: error: -: binary data, not a text log"]
    assert [f.name for f in tmp_path.iterdir() if f.name.startswith("clusterbench-import-")] == []


def test_results_commands(capsys, any_db):
    rc, out, err = cli(capsys, "import", SEED_NCCL, "--db", any_db, "--tag", "seed=mi300x")
    assert rc == 0 and "run 1: rccl-tests" in out, err
    rc, live, err = cli(capsys, "coll", "all_reduce", "-b", "8", "-e", "64", "--np", "2", "--device", "cpu",
                        "--db", any_db)
    assert rc == 0, err
    assert f"# run 2 (complete) stored in {any_db}" in err

    rc, out, _ = cli(capsys, "results", "list", "--db", any_db)
    lines = out.splitlines()
    # what was measured, not the command that ran (coll) or "import"; an import names its tool
    assert rc == 0 and lines[0].split()[:4] == ["id", "started", "(UTC)", "measured"]
    assert lines[1].split()[:3] == ["2", lines[1].split()[1], "all_reduce"]
    assert lines[2].split()[2:4] == ["all_reduce", "[rccl-tests]"]
    assert "seed=mi300x" in lines[2] and " 250 " in lines[2]
    # 34 figures (4 sizes x 2 placements x 4, and 2 per op), and on gloo per-op statistics beside
    with Store.open(any_db) as s:
        ms2 = s.measurements(2)
    n2 = len(ms2)
    assert len([m for m in ms2 if m.metric != "iter_time_us"]) == 34
    rc, out, _ = cli(capsys, "results", "list", "--json", "--db", any_db)
    listed = [json.loads(x) for x in out.splitlines()]
    assert [(r["kind"], r["id"], r["measurements"]) for r in listed] == [("run", 2, n2), ("run", 1, 250)]
    assert [(r["benchmarks"], r["families"], r["tool"]) for r in listed] == [
        (["all_reduce"], ["collectives"], None), (["all_reduce"], ["collectives"], "rccl-tests")]
    for name, ids in [("all_reduce", [2, 1]), ("collectives", [2, 1]), ("allreduce", [2, 1]),
                      ("rccl-tests", [1]), ("stream", []), ("coll", [])]:
        rc, out, _ = cli(capsys, "results", "list", "--benchmark", name, "--json", "--db", any_db)
        assert rc == 0 and [json.loads(x)["id"] for x in out.splitlines()] == ids, name

    rc, out, _ = cli(capsys, "results", "show", "1", "--db", any_db)
    assert "8589934592    2147483648     float     sum      -1    47488  180.88  316.55      0" in out
    rc, shown, _ = cli(capsys, "results", "show", "2", "--db", any_db)
    assert [x for x in shown.splitlines() if re.match(r"\s+64\s+16\s+float", x)]

    rc, out, _ = cli(capsys, "results", "export", "1", "--db", any_db)
    *ms, last = [json.loads(x) for x in out.splitlines()]
    assert last["kind"] == "run" and last["tags"] == {"seed": "mi300x"} and len(ms) == 250
    assert {m["kind"] for m in ms} == {"measurement"} and {m["run"] for m in ms} == {1}
    assert [m["value"] for m in ms if m["metric"] == "busbw" and m["params"]["bytes"] == 8589934592
            and m["params"]["placement"] == "in"] == [315.84]
    rc, out, _ = cli(capsys, "results", "export", "2", "--csv", "--db", any_db)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == n2 and {r["benchmark"] for r in rows} == {"all_reduce"}
    assert {r["status"] for r in rows} == {"complete"}   # a failed run's rows say so

    rc, _, _ = cli(capsys, "results", "tag", "2", "node=gpu-07", "seed=none", "--db", any_db)
    assert rc == 0
    with Store.open(any_db) as s:
        assert s.get_run(2).tags == {"node": "gpu-07", "seed": "none"}
    rc, out, _ = cli(capsys, "results", "delete", "1", "--db", any_db)
    assert rc == 0 and out == "deleted run 1\n"
    rc, _, err = cli(capsys, "results", "show", "1", "--db", any_db)
    assert rc == 2 and err == f"clusterbench: error: no run 1 in {any_db}\n"
    with Store.open(any_db) as s:
        assert s.measurement_counts() == {2: n2} and [r.id for r in s.list_runs()] == [2]


def test_passfile_authenticates(capsys, pg_server, cbpw_db, tmp_path, monkeypatch):
    for var in ("PGPASSFILE", "PGPASSWORD"):  # set, then delete: monkeypatch restores both at the end,
        monkeypatch.setenv(var, "")             # also what --db-passfile sets in os.environ
        monkeypatch.delenv(var)
    host_db = re.sub(r"^postgresql://cbpw@", "", cbpw_db)
    rc, out, err = cli(capsys, "import", ALLTOALL, "--db", cbpw_db)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"clusterbench: error: cannot connect to results database {cbpw_db}: ")
    assert "no password supplied" in err and "--db-passfile" in err

    wrong = _passfile(tmp_path / "wrong", pg_server, "not-it")
    rc, _, err = cli(capsys, "results", "list", "--db", cbpw_db, "--db-passfile", wrong)
    assert rc == 2 and len(err.splitlines()) == 1 and host_db in err
    assert 'password authentication failed for user "cbpw"' in err and "not-it" not in err

    loose = _passfile(tmp_path / "loose", pg_server, pg_server.password)
    loose.chmod(0o644)
    rc, _, err = cli(capsys, "results", "list", "--db", cbpw_db, "--db-passfile", loose)
    assert rc == 2 and "chmod 600" in err

    good = _passfile(tmp_path / "good", pg_server, pg_server.password)
    rc, out, err = cli(capsys, "import", ALLTOALL, "--db", cbpw_db, "--db-passfile", good)
    assert rc == 0 and "run 1:" in out, err
    # libpq's own variables work too, through a separate process that has only them
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    for extra in ({"PGPASSFILE": str(good)}, {"PGPASSWORD": pg_server.password}):
        r = subprocess.run([sys.executable, "-m", "clusterbench", "results", "list", "--json", "--db", cbpw_db],
                           capture_output=True, text=True, timeout=60, env={**env, **extra})
        assert r.returncode == 0 and json.loads(r.stdout)["measurements"] == 206, r.stderr


@pytest.mark.root
@pytest.mark.slow
def test_32_writers_on_3_hosts_and_a_killed_one(cluster, server_store_cluster):
    name = server_store_cluster.create_db()
    url = server_store_cluster.url(name)                        # the bridge address, as every host sees it
    local = server_store_cluster.socket_url(name)               # this process is outside the namespaces
    Store.open(local).close()

    # One writer is killed mid-run: it inserts its run and half its measurements, then hangs
    # inside the transaction until SIGKILL.
    killed = _in_host(cluster, 1, [sys.executable, str(HERE / "helpers" / "store_writer.py"),
                                   f"{url}?application_name=cb-killed", "killed", "node1", "1", "1000",
                                   "--hang-after", "500"])
    _wait_line(killed, "HANGING")
    activity = server_store_cluster.sql("SELECT state, backend_xid IS NOT NULL FROM pg_stat_activity"
                          " WHERE application_name = 'cb-killed'")
    assert activity and activity[0][1], activity   # its transaction is open and has written

    procs = []
    for w in range(WRITERS):
        host = w % cluster.n
        if w % 5 == 0:   # some writers import a real log through the CLI
            argv = [sys.executable, "-m", "clusterbench", "import", str(ALLTOALL_store_cluster), "--db", url,
                    "--tag", f"writer=w{w}", "--host", f"node{host}"]
        else:
            argv = [sys.executable, str(HERE / "helpers" / "store_writer.py"), url, f"w{w}", f"node{host}",
                    str(RUNS_store_cluster), str(MEAS)]
        procs.append((w, _in_host(cluster, host, argv)))

    with Store.open(local) as s:                  # meanwhile, nothing of the hanging run shows
        assert s.runs_with_tags({"writer": "killed"}) == []
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(30)

    for w, p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, f"writer {w}: {err}"

    importers = [w for w in range(WRITERS) if w % 5 == 0]
    with Store.open(local) as s:
        runs = s.list_runs()
        counts = s.measurement_counts()
        assert s.runs_with_tags({"writer": "killed"}) == []
        orphans = s.db.execute("SELECT count(*) FROM measurement_packs WHERE run_id NOT IN (SELECT id FROM runs)")
        assert orphans.fetchone()[0] == 0
        assert len(s.uids()) == len(runs)
    assert len(runs) == (WRITERS - len(importers)) * RUNS_store_cluster + len(importers)
    seen = sorted((r.tags["writer"], r.tags.get("i", "-")) for r in runs)
    want = sorted([(f"w{w}", str(i)) for w in range(WRITERS) if w not in importers for i in range(RUNS_store_cluster)]
                  + [(f"w{w}", "-") for w in importers])
    assert seen == want                               # none lost, none twice
    for r in runs:
        assert counts.get(r.id) == (206 if r.benchmark == "import" else MEAS), r
    assert {h for r in runs if r.benchmark == "coll" for h in r.hosts} == {"node0", "node1", "node2"}
    # the killed writer's server process ended with its connection: nothing waits on it
    deadline = time.monotonic() + 60
    while server_store_cluster.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'cb-killed'") != [(0,)]:
        assert time.monotonic() < deadline, "the killed writer's backend never went away"
        time.sleep(0.2)


def test_password_in_url_warns_once_and_is_never_stored_or_printed(capsys, pg_server):
    warn.forget()
    name = pg_server.create_db(owner="cbpw")
    try:
        url = pg_server.url(name, user=f"cbpw:{pg_server.password}")
        rc, out, err = cli_store_location(capsys, "import", str(TESTS / "data" / "nccl-tests" /
                                                 "superbench-nccl_alltoall.log"), "--db", url)
        assert rc == 0, err
        assert err.count("warning: the database URL holds a password") == 1
        rc, out, err = cli_store_location(capsys, "results", "export", "1", "--run-info", "--db", url)
        assert rc == 0 and pg_server.password not in out + err
        assert pg_server.password not in str(pg_server.sql("SELECT command, meta FROM runs", db=name))
    finally:
        pg_server.drop_db(name)


def test_copy_from_wal_database_in_readonly_directory(capsys, tmp_path, readonly_dir):
    """``--from`` is only read, yet a WAL database (every clusterbench SQLite file) in a read-only
    directory failed: "unable to open database file" (its -shm file cannot be created)."""
    where, make_readonly = readonly_dir
    src = where / "r.db"
    rc, _, err = cli(capsys, "import", SEED_NCCL, "--db", src)
    assert rc == 0, err
    conn = sqlite3.connect(src)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()
    assert not Path(f"{src}-wal").exists()
    make_readonly()
    dest = tmp_path / "copy.db"
    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", dest, "--json")
    assert rc == 0, err
    assert json.loads(out)["measurements"] == 250
    assert _export(capsys, str(dest))


def test_reading_commands_read_a_wal_database_in_readonly_directory(capsys, tmp_path, readonly_dir):
    """A database on a read-only mount (a backup snapshot) was unreadable by every command:
    opening it for writing needs its -shm file. Commands that only read now read it."""
    where, make_readonly = readonly_dir
    src = where / "r.db"
    rc, _, err = cli(capsys, "import", SEED_NCCL, "--db", src)
    assert rc == 0, err
    make_readonly()
    rc, out, err = cli(capsys, "results", "list", "--db", src, "--json")
    assert rc == 0, err
    assert [json.loads(line)["id"] for line in out.splitlines()] == [1]
    rc, out, err = cli(capsys, "results", "show", "1", "--db", src, "--json")
    assert rc == 0 and sum(1 for line in out.splitlines() if json.loads(line).get("metric")) == 250, err
    rc, out, err = cli(capsys, "results", "export", "1", "--db", src, "--csv")
    assert rc == 0 and len(out.splitlines()) == 251, err
    rc, out, err = cli(capsys, "report", "1", "--db", src, "-o", str(tmp_path / "r.html"))
    assert rc == 0, err
    rc, out, err = cli(capsys, "validate", "1", "--db", src, "--profile", "amd-mi300x-oem")
    assert rc in (0, 1) and "Traceback" not in err and "database" not in err, err
    # writing is still refused, in one line
    rc, _, err = cli(capsys, "results", "tag", "1", "team=a", "--db", src)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err


def test_import_refuses_a_newer_database(tmp_path):
    db = str(tmp_path / "newer.db")
    _make_newer(db)
    log = next((TESTS / "data" / "nccl-tests").glob("*.txt"))
    p = _store_versions_cb("import", str(log), "--db", db)
    assert p.returncode == 2 and "newer clusterbench" in p.stderr and p.stdout == ""


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("output", ["closed pipe", "head -1", "/dev/full"])
def test_an_output_that_fails_stores_the_file_then_exits_74(tmp_path, big_log, output, as_json):
    # `import x.log | true` and `> /dev/full` rolled the file's transaction back with the output:
    # exit 74, yet nothing stored. The output failing ends the printing; every file is stored,
    # and the exit code and its one line come once the transaction has committed.
    db = tmp_path / "r.db"
    argv = [sys.executable, "-m", "clusterbench", "import", str(big_log), str(NCCL_LOG), "--db", str(db),
            *(["--json"] if as_json else [])]
    if output == "closed pipe":
        read, write = os.pipe()
        os.close(read)   # the reader is gone before the first line, as `| true`
        try:
            p = subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, text=True, timeout=300)
        finally:
            os.close(write)
        why = "standard output (a pipe): its reader closed it (broken pipe)"
    elif output == "head -1":   # the reader takes the first line and goes (issue 31: 4 stored of 12)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline()
        proc.stdout.close()
        err = proc.communicate(timeout=300)[1]
        p = subprocess.CompletedProcess(argv, proc.returncode, "", err)
        why = "standard output (a pipe): its reader closed it (broken pipe)"
    else:
        with open("/dev/full", "w") as full:
            p = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
        why = "standard output (/dev/full): No space left on device"
    assert p.returncode == OUTPUT_FAILED, p.stderr
    assert p.stderr.splitlines() == [f"clusterbench: error: cannot write to {why}; every run imported is stored"]
    runs = _fault_import_runs(str(db))
    assert len(runs) == RUNS + 1 and {r.status for r in runs} == {"complete"}
    again = subprocess.run(argv[:-1] if as_json else argv, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and again.stdout.count("already imported") == 2, again.stderr


def test_a_signal_at_the_commit_of_a_file_says_it_is_stored(tmp_path):
    # Ctrl-C as a file's transaction committed: "run(s) 1-3000 ... were not stored", yet all of
    # them were. Said once the outcome is known: the file is stored, the files after it are not.
    from commit_window import commit_held, rollback_journal

    log = tmp_path / "30-runs.log"
    log.write_text(SMALL_LOG.read_text() * 30)
    db = tmp_path / "r.db"
    Store.open(db).close()
    rollback_journal(db)
    with commit_held(db) as held:
        p = subprocess.Popen([sys.executable, "-m", "clusterbench", "import", str(log), str(NCCL_LOG), "--db", str(db)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        held.wait_for_commit(p)
        p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert err == (f"clusterbench: error: interrupted by SIGINT (Ctrl-C) as {log} was stored: run(s) 1-30 are stored; "
                   "1 file(s) after it were not imported\n")
    assert out.count(": run ") == 30
    assert len(_fault_import_runs(str(db))) == 30
    again = subprocess.run([sys.executable, "-m", "clusterbench", "import", str(log), str(NCCL_LOG), "--db", str(db)],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"{log}: already imported as run(s) 1-30 (same content): skipped" in again.stdout
    assert len(_fault_import_runs(str(db))) == 31
def _stored_runs(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM runs").fetchone()[0]
    finally:
        conn.close()


def test_import_json_into_head_1_stores_the_file_then_exits_74(tmp_path):
    """``import --json | head -1``: the reader leaves while the file's transaction is open (five
    runs, several pipe buffers of lines); the file is still committed, and 74 means just that."""
    log = tmp_path / "five.log"
    log.write_text(BIG_LOG.read_text() * 5)
    for attempt in range(4):   # it failed in most tries: each must store the file whole
        db = tmp_path / f"pipe{attempt}.db"
        cb = subprocess.Popen([sys.executable, "-m", "clusterbench", "import", "--json", "--db", str(db), str(log)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        head = subprocess.Popen(["head", "-1"], stdin=cb.stdout, stdout=subprocess.PIPE, text=True)
        assert cb.stdout is not None
        cb.stdout.close()   # head holds the pipe's only reading end
        first, _ = head.communicate(timeout=120)
        _, err = cb.communicate(timeout=120)
        assert json.loads(first)["run"] == 1
        assert cb.returncode == 74, err
        assert err.splitlines() == ["clusterbench: error: cannot write to standard output (a pipe): its "
                                    "reader closed it (broken pipe); every run imported is stored"], err
        assert _stored_runs(db) == 5


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("as_json", [False, True])
def test_import_into_a_full_stdout_stores_the_file_then_exits_74(tmp_path, as_json):
    log = tmp_path / "five.log"
    log.write_text(BIG_LOG.read_text() * 5)
    db = tmp_path / "full.db"
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "clusterbench", "import", *(["--json"] if as_json else []),
                            "--db", str(db), str(log)], stdout=full, stderr=subprocess.PIPE, text=True,
                           timeout=120)
    assert p.returncode == 74, p.stderr
    assert p.stderr == ("clusterbench: error: cannot write to standard output (/dev/full): No space left on "
                        "device; every run imported is stored\n")
    assert _stored_runs(db) == 5
    again = subprocess.run([sys.executable, "-m", "clusterbench", "import", "--db", str(db), str(log)],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "already imported" in again.stdout   # the import was recorded too
