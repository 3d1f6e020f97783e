"""System tests (env): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import TESTS

DATA = TESTS / "data"


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
