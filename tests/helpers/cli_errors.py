"""What a command's error is: one line, `clusterbench: error: ...`, and nothing on stdout."""

from __future__ import annotations

from pathlib import Path

from child_cli import _runs
from judge_helpers import cli


def _one_line_error(rc: int, out: str, err: str) -> None:
    assert rc == 2, (rc, out, err)
    assert err.startswith("clusterbench: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err


def one_error(capsys, path: Path, db: Path) -> str:
    """The one error line a bad file gives on its own (exit 2), and nothing stored."""
    rc, out, err = cli(capsys, "import", path, "--db", db)
    lines = err.splitlines()
    assert rc == 2 and len(lines) == 1, (rc, err)
    assert lines[0].startswith(f"clusterbench: error: {path}: ") and "internal error" not in err
    assert _runs(db) == []
    return lines[0][len(f"clusterbench: error: {path}: "):]
