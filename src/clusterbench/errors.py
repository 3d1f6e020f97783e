"""Exceptions that end a command with a one-line message and a known exit code."""

from __future__ import annotations


class ClusterbenchError(Exception):
    """Base class: the CLI prints ``clusterbench: error: <message>`` and exits with ``exit_code``."""

    exit_code = 1


class UsageError(ClusterbenchError):
    """Bad input from the user: sizes, ops, files, profiles, selectors."""

    exit_code = 2


class StoreError(ClusterbenchError):
    """The results database cannot be opened, read or written."""

    exit_code = 2
