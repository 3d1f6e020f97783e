"""Warnings the store gives on stderr, each once per process (a command opens its store more
than once: to check ``--db`` before the ranks start, then to save)."""

from __future__ import annotations

import sys

from clusterbench.printable import printable

_given: set[str] = set()


def warn_once(message: str) -> None:
    if message not in _given:
        _given.add(message)
        print(f"clusterbench: warning: {printable(message)}", file=sys.stderr)


def forget() -> None:
    """Warn again from now on (tests)."""
    _given.clear()
