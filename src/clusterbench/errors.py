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


class CommittedWhenInterrupted(KeyboardInterrupt):
    """A stop signal (Ctrl-C, SIGTERM, SIGHUP) that came as a write transaction committed: its
    changes are in the database. Raised in place of the signal's own exception, so that the
    command says what was done instead of "interrupted" alone; ``done`` is what the writer
    adds about it (the run ids deleted, tagged or imported)."""

    def __init__(self, interrupt: BaseException) -> None:
        super().__init__(interrupt)
        # Python's own Ctrl-C is a plain KeyboardInterrupt; the CLI's and the runs' carry signum
        self.signum: int = int(getattr(interrupt, "signum", 2))
        self.done: object = None

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class Stopped(ClusterbenchError):
    """A command a signal stopped, saying what the database holds: exit 128 + the signal."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.exit_code = 128 + signum
