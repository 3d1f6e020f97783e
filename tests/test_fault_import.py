"""Issue 18: an import of one file is one transaction, whatever signal ends it.

A log of 3,000 runs is built from the real nccl-tests and rccl-tests logs in tests/data; a real
``python -m clusterbench import`` of it gets a real signal once it has stored (and printed)
hundreds of runs. Nothing of the file may remain; the same import run again stores all 3,000
runs; run once more, it stores nothing new. On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from clusterbench.store import Store

DATA = Path(__file__).parent / "data" / "nccl-tests"
COMPLETE_LOGS = ("a3mega-h100-2node-all_reduce.txt", "seed-mi300x-rccl-all_reduce-8gpu.txt",
                 "seed-tensorwave-mi355x-4node-all_reduce.txt")
RUNS = 3000


@pytest.fixture(scope="module")
def big_log(tmp_path_factory) -> Path:
    texts = [(DATA / name).read_text() for name in COMPLETE_LOGS]
    path = tmp_path_factory.mktemp("big") / "3000-runs.log"
    with path.open("w") as f:
        for i in range(RUNS):  # concatenated logs, as a job that ran nccl-tests in a loop leaves
            text = texts[i % len(texts)]
            f.write(text if text.endswith("\n") else text + "\n")
    return path


def _default_sighup() -> None:
    # under nohup (or a CI runner that ignores SIGHUP) the child would inherit SIG_IGN and finish
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


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


def _runs(db: str) -> list:
    with Store.open(db) as store:
        return store.list_runs(limit=RUNS * 2)


def test_sigterm_mid_import_stores_nothing_then_the_import_completes(any_db, big_log):
    _signal_mid_import(any_db, big_log, signal.SIGTERM)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL, signal.SIGHUP], ids=lambda s: signal.Signals(s).name)
def test_any_signal_mid_import_stores_nothing(db, big_log, sig):
    _signal_mid_import(db, big_log, sig)


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
    assert _runs(any_db) == []  # not 700 runs: the file is stored whole or not at all

    again = _import(str(big_log), "--db", any_db, "--json")
    out, err = _wait(again)
    assert again.returncode == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["kind"] == "summary" and len(summary["runs"]) == RUNS and summary["already_imported"] == []
    runs = _runs(any_db)
    assert len(runs) == RUNS and {r.status for r in runs} == {"complete"}

    third = _import(str(big_log), "--db", any_db)
    out, err = _wait(third)
    assert third.returncode == 0, err
    assert out.strip() == f"{big_log}: already imported as run(s) {min(r.id for r in runs)}-{max(r.id for r in runs)} " \
                          "(same content): skipped"
    assert len(_runs(any_db)) == RUNS  # no duplicates


def test_the_same_content_from_standard_input_is_skipped(tmp_path):
    db = str(tmp_path / "stdin.db")
    log = DATA / COMPLETE_LOGS[2]
    first = subprocess.run([sys.executable, "-m", "clusterbench", "import", str(log), "--db", db],
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    piped = subprocess.run([sys.executable, "-m", "clusterbench", "import", "-", "--db", db, "--json"],
                           input=log.read_text(), capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    summary = json.loads(piped.stdout.splitlines()[-1])
    assert summary["runs"] == [] and summary["already_imported"] == [{"file": "-", "runs": [1]}]
    assert len(_runs(db)) == 1
    # another host's copy of the same text is another import (--host changes what is stored)
    other = subprocess.run([sys.executable, "-m", "clusterbench", "import", str(log), "--host", "n2", "--db", db],
                           capture_output=True, text=True, timeout=120)
    assert other.returncode == 0 and len(_runs(db)) == 2
    # deleting the runs forgets the file: it can be imported again
    subprocess.run([sys.executable, "-m", "clusterbench", "results", "delete", "1-2", "--db", db], check=True,
                   capture_output=True, timeout=60)
    back = subprocess.run([sys.executable, "-m", "clusterbench", "import", str(log), "--db", db],
                          capture_output=True, text=True, timeout=120)
    assert back.returncode == 0 and ": run 3:" in back.stdout
