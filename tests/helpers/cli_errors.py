"""What a command's error is: one line, `clusterbench: error: ...`, and nothing on stdout."""

from __future__ import annotations


def _one_line_error(rc: int, out: str, err: str) -> None:
    assert rc == 2, (rc, out, err)
    assert err.startswith("clusterbench: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err
