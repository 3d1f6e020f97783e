"""Stored measurements as CSV (``results export --csv``): one column per parameter, the run's
status on every row, and cells no spreadsheet evaluates."""

from __future__ import annotations

import csv
import json
import re
import sys
from collections.abc import Callable, Iterable
from typing import IO

from clusterbench.records import Measurement, Run

CSV_COLUMNS = ("run", "status", "benchmark", "metric", "value", "unit")


def csv_param_columns(keys: list[str]) -> list[str]:
    """Column names of the params: a param named as a fixed column (an imported run's ``value``)
    or as another column gets ``param.`` before it, so that no two columns share a name (a
    reader by name would take one column's cell for the other's)."""
    taken = set(CSV_COLUMNS) | set(keys)
    names: list[str] = []
    for k in keys:
        name = k
        if k in CSV_COLUMNS:
            name = f"param.{k}"
            while name in taken:
                name = f"param.{name}"
            taken.add(name)
        names.append(name)
    return names


def csv_cell(value: object) -> object:
    """A param as a CSV cell: text, numbers and booleans (``True``) as the csv module writes them,
    null as an empty cell; a list or mapping as its JSON text, as the JSON lines hold it (Python's
    spelling, ``['a', None]``, is no format a reader can parse)."""
    if not isinstance(value, (list, dict)):
        return inert(value) if isinstance(value, str) else value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# A cell a spreadsheet would run as a formula (OWASP "CSV injection"): imported logs and tags carry
# text from elsewhere (`=HYPERLINK(...)` in a model name). Text that reads as a plain number
# (`-1`, `+3.5e2`) is a number to a spreadsheet too, so it is left alone.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def inert(text: str) -> str:
    """Text as a cell no spreadsheet evaluates: one that starts as a formula does gets a ``'``
    before it, as OWASP advises (the JSON lines keep the text as stored)."""
    if text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


class _LineFeeds:
    """A stream for ``csv.writer``: rows end in a line feed, but the writer is told CR LF so that
    it quotes a cell holding a lone carriage return too (it quotes only the characters of its
    line terminator); unquoted, a reader ends the row there."""

    def __init__(self, out: IO[str] | None) -> None:
        self.out = out

    def write(self, line: str) -> int:
        return (self.out or sys.stdout).write(line[:-2] + "\n" if line.endswith("\r\n") else line)


def write_csv(loaded: Iterable[tuple[Run, list[Measurement]]] | Callable[[], Iterable[tuple[Run, list[Measurement]]]],
              out: IO[str] | None = None) -> None:
    """The runs' measurements as CSV on ``out`` (standard output): a header row with a column
    per param any of them has, then a row per measurement. ``loaded``: the runs, or a function
    that reads them afresh each time it is called: then they are read twice, once for the
    columns and once for the rows, and never held all at once."""
    read = loaded if callable(loaded) else (lambda runs=list(loaded): runs)
    found: dict[str, None] = {}
    for _, ms in read():
        for m in ms:
            for k in m.params:
                found.setdefault(k)
    keys = list(found)
    w = csv.writer(_LineFeeds(out), lineterminator="\r\n")
    # the run's status on every row: a spreadsheet of rows must still tell a failed run's
    # figures from a complete one's
    w.writerow([*CSV_COLUMNS, *map(inert, csv_param_columns(keys))])
    for run, ms in read():
        for m in ms:
            w.writerow([run.id, run.status, inert(m.benchmark), inert(m.metric),
                        repr(m.value) if isinstance(m.value, float) else m.value, inert(m.unit),
                        *[csv_cell(m.params[k]) if k in m.params else "" for k in keys]])
