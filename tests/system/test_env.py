"""System tests (env): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from system_cli import HOST, NCCL_LOG, READS, STREAM_LOG, TAG, _cb, _env


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
