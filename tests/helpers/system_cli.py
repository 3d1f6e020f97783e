"""What the system tests share: the CLI in-process and as a child, real logs, hostile hosts and
tags, servers polled with a bound."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from bench_cli import cli_bench_cpu, measurements
from judge_helpers import cli
from paths import DATA, TESTS

from clusterbench.store import Store


def _fault_disk_cb(*argv: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """``clusterbench ARGV`` as a child, no stdin: its exit code, stdout and stderr as text."""
    return subprocess.run([sys.executable, "-m", "clusterbench", *argv], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _healthy(db: Path) -> list[tuple]:
    """The database opens, passes its integrity check; its runs and measurement counts."""
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        orphans = conn.execute("SELECT count(*) FROM measurement_packs WHERE run_id NOT IN (SELECT id FROM runs)")
        assert orphans.fetchone() == (0,)
        return conn.execute("SELECT r.id, r.status, coalesce(sum(m.count), 0) FROM runs r"
                            " LEFT JOIN measurement_packs m ON m.run_id = r.id GROUP BY r.id ORDER BY r.id").fetchall()


# long enough that the signal lands mid-sweep, short enough for two cores
LONG = ["coll", "all_reduce", "-b", "8", "-e", "256M", "-f", "2", "-n", "20", "-w", "1", "--np", "2",
        "--device", "cpu", "--telemetry-interval", "0", "--timeout", "120"]


def _default_sighup() -> None:
    # under nohup (or a CI runner that ignores SIGHUP) the command would inherit SIG_IGN
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _start(db: str, *extra: str, stdout=subprocess.PIPE, preexec_fn=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "clusterbench", *LONG, *extra, "--db", db],
                            stdout=stdout, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=preexec_fn)


def _stored(db: str):
    with Store.open(db) as store:
        runs = store.list_runs(oldest_first=True)
        return runs, {r.id: store.measurements(int(r.id or 0)) for r in runs}


def _finish(proc: subprocess.Popen) -> tuple[str, str]:
    killer = threading.Timer(150, proc.kill)  # never let a test hang
    killer.start()
    try:
        return proc.communicate(timeout=160)
    finally:
        killer.cancel()


def _get(url: str, timeout: float = 5) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def _wait(fn, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            got = fn()
            if got:
                return got
        except OSError as e:
            last = e
        time.sleep(0.5)
    pytest.fail(f"{what} within {timeout:g} s (last error: {last})")


DTYPE_BYTES = {"float": 4, "half": 2, "double": 8}


def clusterbench_native_records(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "clusterbench", *args], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def lines_native_records(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def stored_bench_cpu(capsys: pytest.CaptureFixture[str], db: str, run: int) -> list[dict[str, Any]]:
    code, out, err = cli_bench_cpu(capsys, "results", "show", "--db", db, str(run), "--json")
    assert code == 0, err
    return measurements(out)


HOST = "n\u0153ud-\u00b5\u2192"     # œ (not latin-1), µ (latin-1), → (neither)


BIG = {"show": ["results", "show", "1-300"], "export": ["results", "export", "1-300"],
       "csv": ["results", "export", "1-300", "--csv"], "list": ["results", "list", "--limit", "300", "--json"],
       "trend": ["trend", "--json"]}


def _store_versions_cb(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return _fault_disk_cb(*argv, timeout=timeout)


STREAM_LOG = DATA / "stream" / "babelstream-repo-results-v2.0-broadwell-mccalpin-cray.txt"


NCCL_LOG = DATA / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"


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


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "CLUSTERBENCH_DEBUG")}
    return {**env, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", **extra}


def _cb(argv: list[str], env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clusterbench", *argv], env=env or _env(), capture_output="stdout" not in kw,
                          timeout=120, **kw)


def _argv(name: str, db: str, tmp: Path, as_json: bool = False) -> list[str]:
    """READS[name] on ``db``, its {tmp} in ``tmp``."""
    return [a.replace("{tmp}", str(tmp)) for a in READS[name]] + (["--json"] if as_json else []) + ["--db", db]


_utf8: dict[tuple[str, str, bool], subprocess.CompletedProcess] = {}


def _reference(name: str, db: str, tmp: Path, as_json: bool = False) -> subprocess.CompletedProcess:
    """The command's output with a UTF-8 standard output: what the others are held to (once a
    database)."""
    if (name, db, as_json) not in _utf8:
        _utf8[name, db, as_json] = _cb(_argv(name, db, tmp, as_json))
    return _utf8[name, db, as_json]


def _which(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/bin/{name}", f"/usr/sbin/{name}") if os.path.exists(p)), None)


DATA_postgres = TESTS / "data" / "nccl-tests"


LOG = DATA_postgres / "a3mega-h100-2node-all_reduce.txt"


def _errors(err: str) -> list[str]:
    assert "Traceback" not in err and "internal error" not in err, err
    return [line for line in err.splitlines() if line.startswith("clusterbench: error:")]


def _closing(*fds: int):
    def close() -> None:
        for fd in fds:
            os.close(fd)
    return close


def _export(capsys, db: str) -> list[str]:
    rc, out, err = cli(capsys, "results", "export", "1..1000", "--db", db)
    assert rc == 0, err
    return [re.sub(r'"(run|id)": \d+, ', "", line) for line in out.splitlines()]
