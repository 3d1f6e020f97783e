"""What every log importer shares: the result type, line cleaning and number parsing.

Logs reach us through terminals, MPI launchers, issue trackers and documents, so before a parser
sees a line we undo what those do to it: MPI output tags (``[1,0]<stdout>:``), terminal colour
codes, carriage returns, and the reStructuredText markup of documents that quote tool output
(``:mark:`...``` roles wrapped across source lines, ``\\|`` escapes, ``**bold**``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from typing import Protocol

from clusterbench.errors import UsageError
from clusterbench.records import COMPLETE, Measurement, Run

IMPORT_BENCHMARK = "import"
MAX_ERROR_LINES = 100  # a crash can print the same failure from every rank; keep the run small


class LogFormatError(UsageError):
    """The text is not a log this importer understands (unknown tool, no results, junk)."""


class RecordTable(Protocol):
    """A compact form of a run's records, for parsers that produce millions of them."""

    def __len__(self) -> int: ...

    def measurements(self) -> list[Measurement]: ...

    def rows(self) -> Iterator[tuple[str, str, float, str, str]]: ...


class ImportedRun:
    """One run found in a log: the run record and its measurements.

    Parsers give either the measurements or a ``RecordTable``; then ``store_rows`` feeds
    ``Store.save_run_rows`` without building a Measurement object and a JSON text per record.
    """

    def __init__(self, run: Run, measurements: list[Measurement] | None = None,
                 table: RecordTable | None = None) -> None:
        self.run = run
        self._measurements = measurements if measurements is not None or table is not None else []
        self._table = table

    @property
    def measurements(self) -> list[Measurement]:
        if self._measurements is None:
            assert self._table is not None
            self._measurements = self._table.measurements()
        return self._measurements

    def __len__(self) -> int:
        return len(self._measurements) if self._measurements is not None else len(self._table or ())

    def benchmarks(self) -> list[str]:
        """The benchmark names of the records, without building them."""
        op = getattr(self._table, "op", None) if self._measurements is None else None
        if op is not None:
            return [op]
        return sorted({m.benchmark for m in self.measurements})

    def store_rows(self) -> Iterator[tuple[str, str, float, str, str]]:
        if self._measurements is None and self._table is not None:
            return self._table.rows()
        return ((m.benchmark, m.metric, float(m.value), m.unit, json.dumps(m.params, default=str))
                for m in self.measurements)


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
