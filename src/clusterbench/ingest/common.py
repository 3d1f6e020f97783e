"""What every log importer shares: the result type, line cleaning and number parsing.

Logs reach us through terminals, MPI launchers, issue trackers and documents, so before a parser
sees a line we undo what those do to it: MPI output tags (``[1,0]<stdout>:``), terminal colour
codes, carriage returns, and the reStructuredText markup of documents that quote tool output
(``:mark:`...``` roles wrapped across source lines, ``\\|`` escapes, ``**bold**``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from clusterbench.errors import UsageError
from clusterbench.records import COMPLETE, Measurement, Run

IMPORT_BENCHMARK = "import"
MAX_ERROR_LINES = 100  # a crash can print the same failure from every rank; keep the run small


class LogFormatError(UsageError):
    """The text is not a log this importer understands (unknown tool, no results, junk)."""


@dataclass
class ImportedRun:
    """One run found in a log: the run record and its measurements, ready for ``Store.save_run``."""

    run: Run
    measurements: list[Measurement] = field(default_factory=list)


def new_run(tool: str, name: str = "") -> Run:
    """A run record for an imported log; parsers fill hosts, devices, versions and status."""
    run = Run(benchmark=IMPORT_BENCHMARK, source=tool, status=COMPLETE)
    run.meta["tool"] = tool
    if name:
        run.meta["file"] = name
    return run


def add_error(run: Run, line: str) -> None:
    if len(run.errors) < MAX_ERROR_LINES:
        run.errors.append(line.strip())
    else:
        run.meta["errors_dropped"] = run.meta.get("errors_dropped", 0) + 1


_MPI_TAG = re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>:")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_MARK = re.compile(r":mark:`([^`]*)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")


def _strip_doc_markup(line: str) -> str:
    line = _MARK.sub(r"\1", line)
    line = _BOLD.sub(r"\1", line)
    return line.replace("\\|", "|").replace("\\\\", "\\").replace("\\*", "*")


def clean_lines(lines: Iterable[str]) -> Iterator[str]:
    """Yield the tool's own output lines, without launcher tags, colours or document markup.

    A ``:mark:`` role that a document wrapped over several source lines is joined back into one
    line (with a space where the wrap was), so a table row is one line again.
    """
    pending: str | None = None
    for raw in lines:
        line = raw.rstrip("\r\n")
        if "\x1b" in line:
            line = _ANSI.sub("", line)
        if "\r" in line:  # progress output overwritten in place: keep what was left on screen
            line = line.rsplit("\r", 1)[-1]
        if line.startswith("["):
            line = _MPI_TAG.sub("", line, count=1)
        if pending is None and ":mark:`" not in line:
            yield line
            continue
        pending = line if pending is None else pending + " " + line.strip()
        if pending.count("`") % 2 == 0:
            yield _strip_doc_markup(pending)
            pending = None
    if pending is not None:
        yield _strip_doc_markup(pending)


def to_float(token: str) -> float | None:
    """A number as tools print it (``1.5``, ``3e-08``, ``1.2e+06*``); None for N/A, nan, junk."""
    token = token.rstrip("*,")
    try:
        value = float(token)
    except ValueError:
        return None
    if math.isnan(value) or math.isinf(value):
        return None
    return value


def to_int(token: str) -> int | None:
    try:
        return int(token)
    except ValueError:
        value = to_float(token)
        return int(value) if value is not None and value == int(value) else None


def first_number(text: str) -> float | None:
    m = re.search(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)
    return float(m.group(0)) if m else None
