"""clusterbench run as a child process (`python -m clusterbench`), its one-line errors, and a
database from a newer clusterbench."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from clusterbench.store import Store

FUTURE = "9999_from_a_newer_clusterbench"


def _make_newer(db: str) -> None:
    with Store.open(db) as store:
        with store.db.write():
            store.db.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                             (FUTURE, "2099-01-01 00:00:00"))


def _runs(db: Path) -> list:
    if not db.exists():
        return []
    with Store.open(str(db)) as s:
        return s.list_runs()


def _cb(*argv: str, env: dict[str, str] | None = None, stdin: str | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clusterbench", *map(str, argv)], capture_output=True,
                          text=True, timeout=timeout, input=stdin, env={**os.environ, **(env or {})})


def _one_error(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("clusterbench: error: "), p.stderr
    assert "Traceback" not in p.stderr and "RecursionError" not in p.stderr
    return lines[0]


def _deep_array(depth: int) -> str:
    return "[" * depth + "]" * depth
