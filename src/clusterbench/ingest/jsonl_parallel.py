"""Large files of clusterbench JSON lines read by several processes, with the runs one pass finds.

A fleet's night of runs gathered in one file (``kubectl logs`` of a thousand pods, a collector's
day) is about 100 KB of JSON lines per run, and reading them is most of an import's time. The
file is cut after a run line that starts a line (``{"kind": "run", ...``), worker processes read
the parts at once, each from a fresh reading, and the main process stores the runs in file
order. A part's runs are used only where one pass would have found the same:

- the part before must have ended with no measurement waiting for its run line (a fresh reading
  starts with none); where one waits (the lines of two runs interleaved across the cut), or a
  part raised an error, or its worker died, the main process reads the rest of the file itself
  from that part's start, as one pass would, and so meets the error at its place;
- a run line is checked against the run lines of its id in every part before (``RunLines``:
  runs that print one id whose measurements cannot be told apart are refused), in the main
  process, in file order, before its run is handed on.

Line numbers are the file's: each part starts counting where the part before stopped. The
importer of clusterbench's JSON lines is here (``IMPORTERS``): it reads a large file so, any
other in one pass.
"""

from __future__ import annotations

import io
import mmap
import os
import re
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection
from typing import Any, BinaryIO, NamedTuple

from clusterbench.ingest import workers as workers_
from clusterbench.ingest.clusterbench_jsonl import TOOL, RunLines, iter_parse
from clusterbench.ingest.common import ImportedRun, Lines, Prepared
from clusterbench.ingest.registry import Importer

PART_BYTES = 4 << 20    # parts of about this size
MIN_BYTES = 24 << 20    # smaller files are read by one process
# a run line at the start of a line, as clusterbench prints it (report/jsonl.py)
_RUN_LINE = b'\n{"kind": "run", '


class Part(NamedTuple):
    start: int
    end: int
    first_line: int   # the lines before it
    last: bool        # the file's last part: its waiting measurements become runs


def usable(lines: Any) -> bool:
    """Whether ``lines`` come from a plain file worth reading with several processes."""
    return workers_.usable(lines, MIN_BYTES)


def parts(path: str, part: int | None = None) -> list[Part]:
    """The file cut after the first run line that starts at or after each multiple of ``part``
    bytes (default PART_BYTES) past the cut before."""
    part = part or PART_BYTES
    size = os.path.getsize(path)
    if size == 0:
        return [Part(0, 0, 0, True)]
    cuts: list[int] = []
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        target = part
        while target < size - part // 2:
            at = mm.find(_RUN_LINE, target - 1)
            end = mm.find(b"\n", at + 1) if at >= 0 else -1
            if end < 0 or end + 1 >= size:
                break
            cuts.append(end + 1)
            target = end + 1 + part
        bounds = [0, *cuts, size]
        out, lines = [], 0
        for a, b in zip(bounds, bounds[1:]):
            out.append(Part(a, b, lines, b == size))
            lines += mm[a:b].count(b"\n")
    return out


def parse_file(lines: Lines, name: str) -> Iterator[ImportedRun | Prepared]:
    """The runs of ``lines.path`` read by ``lines.jobs`` worker processes where the file can be
    cut; the same runs in the same order, and the same errors at the same place, as one pass
    (``iter_parse``). A run a worker read comes as ``Prepared`` when ``lines.prepare`` is given."""
    path = lines.path
    assert path is not None
    cut = parts(path)
    if len(cut) < 2:   # nowhere to cut: one pass, without a worker to hand every run over
        yield from iter_parse(lines, name)
        return
    jobs = min(lines.jobs, len(cut))
    workers = workers_.start(_work, [(path, cut[j::jobs], name, lines.prepare) for j in range(jobs)])
    run_lines = RunLines()
    try:
        if lines.meanwhile is not None:
            lines.meanwhile()
        for k, part in enumerate(cut):
            runs, outcome = workers_.receive(workers[k % jobs][1])
            if outcome[0] != "end":
                workers_.stop(workers)   # the rest is read here: their parts are not wanted
                yield from _rest(path, part, name, run_lines)
                return
            for run, admitted in runs:
                if admitted is not None:
                    run_lines.admit(*admitted)
                yield run
    finally:
        workers_.stop(workers)


def _read(f: BinaryIO, part: Part, name: str, prepare: Callable[[ImportedRun], Any] | None
          ) -> list[tuple[Any, Any]]:
    """A part's runs (with ``prepare``: what it makes of each, as ``Prepared``), each with its
    run line's record to be checked against the parts before. Raises ``PartUnfinished`` where
    measurements wait at its end, and whatever the reading raises."""
    admitted: list[Any] = []
    out: list[tuple[Any, Any]] = []
    text = io.StringIO(workers_.part_text(f, part.start, part.end), newline="")
    for run in iter_parse(Lines([], text), name, first_line=part.first_line, admitted=admitted,
                          part=not part.last):
        out.append((Prepared(prepare(run)) if prepare is not None else run, admitted[-1]))
    return out


def _rest(path: str, part: Part, name: str, run_lines: RunLines) -> Iterator[ImportedRun]:
    """The file from ``part`` on, read here in one pass that goes on from the parts before."""
    with workers_.text_from(path, part.start) as text:
        yield from iter_parse(Lines([], text), name, first_line=part.first_line, run_lines=run_lines)


def _work(path: str, mine: list[Part], name: str, prepare: Callable[[ImportedRun], Any] | None,
          conn: Connection, parent: int) -> None:
    """A worker process: each of its parts read whole, then sent; a part that ends with measurements
    waiting, or raises, is sent as ("again",): the main process reads from there."""
    workers_.serve_parts(path, mine, lambda f, part: (_read(f, part, name, prepare), ("end",)), conn, parent)


def _parse(lines: Iterable[str], name: str) -> Iterator[Any]:
    if usable(lines):
        return parse_file(lines, name)  # type: ignore[arg-type]
    return iter_parse(lines, name)


IMPORTERS = (
    # first: clusterbench's own lines may hold any other tool's words in their params and meta
    Importer(TOOL, re.compile(r'\{"kind": "(measurement|run)", |\{"run": (\d+|null), "benchmark": "[^"]*", "metric": '),
             lambda lines, name, head: _parse(lines, name), order=0, streams=True),
)
