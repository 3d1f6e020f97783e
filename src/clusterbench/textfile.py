"""A text file a user names (a profile, a hostfile, a topology, a transfer config): read whole as
UTF-8, or one line saying why it cannot be."""

from __future__ import annotations

import os

from clusterbench.errors import UsageError


def read_user_text(path: str | os.PathLike[str], what: str) -> str:
    """The text of ``path``; ``what`` names it in the error (``hostfile``, ``--topology``)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise UsageError(f"cannot read {what} {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{what} {path}: not UTF-8 text (byte {e.start})") from None
