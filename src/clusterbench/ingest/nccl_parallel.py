"""Large nccl-tests text logs read by several processes, with the runs one process finds.

Parsing is most of the time of importing a large log (a state machine over every line, in
Python). A file of many concatenated runs is cut into parts where a run begins: at a header
line (``# nThread``, ``# Collective test starting``, a version line), or at the command line
naming the op just before it. Worker processes read the parts at once, each from a fresh parser
state, and the runs are handed back in file order. A part's runs are used only where one pass
would have found the same:

- the part before must end in a state the cut's first line closes (``closes_before``: a run
  with results, or nothing read since the last run); otherwise (a version line before the
  header, a failure with no results) the main process reads the part itself, from that state;
- no document markup role (``:mark:```) may be open across the cut, no other tool's output may
  begin inside the part (handed over as one pass does), and its worker must not have died:
  otherwise the main process reads the rest of the file itself, as one pass would.

Each worker holds one part's runs at a time and the main process one more, so memory stays
flat however large the file.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any, NamedTuple

from clusterbench.ingest import workers as workers_
from clusterbench.ingest.collectives import RunRefused
from clusterbench.ingest.common import (
    ImportedRun,
    Lines,
    LogFormatError,
    Prepared,
    Roles,
    TextCleaner,
    first_cleaner,
    text_chunks,
)
from clusterbench.ingest.nccl_tests import (
    ForeignLine,
    NcclTextParser,
    names_op,
    parse_chunks,
    parse_lines,
)

PART_BYTES = 4 << 20    # parts of about this size
MIN_BYTES = 24 << 20    # smaller files are read by one process: starting workers would cost more
_WINDOW = 1 << 20       # bytes searched for a run's start past each part's nominal end
# a header line that starts a run, at the start of a line
_HEADER = re.compile(rb"\n(?=#[ \t]*(?:nThread:?[ \t]+\d+[ \t]+nGpus:?[ \t]+\d|Collective test starting"
                     rb"|nccl-tests version|NCCL Tests compiled|rccl-tests:[ \t]*Version))")
# a command line naming the op (``$ mpirun ... all_reduce_perf``): the quick test before names_op
_COMMAND = re.compile(rb"[^\s\d#][^\n]*\b[a-z_]+_perf\b")


class Part(NamedTuple):
    start: int
    end: int
    next_kind: str    # what the next part starts with: "header", "command", or "" (the file's end)


def usable(lines: Any) -> bool:
    """Whether ``lines`` come from a plain file worth reading with several processes."""
    return workers_.usable(lines, MIN_BYTES)


def parts(path: str, size: int, part: int | None = None) -> list[Part]:
    """The file cut where a run starts, at the first header line at or after each multiple of
    ``part`` bytes (default PART_BYTES), or at the command line just before it."""
    part = part or PART_BYTES
    cuts: list[tuple[int, str]] = []
    with open(path, "rb") as f:
        target = part
        while target < size - part // 2:
            start = max(target - 4096, cuts[-1][0] + 1 if cuts else 0)
            f.seek(start)
            window = f.read(_WINDOW)
            found = next((m.start() + 1 for m in _HEADER.finditer(window) if m.start() + start >= target), None)
            if found is None:
                target += part
                continue
            at, kind = _run_start(window, found)
            if at + start > (cuts[-1][0] if cuts else 0):
                cuts.append((at + start, kind))
            target = found + start + part
    bounds = [0, *(c for c, _ in cuts), size]
    kinds = [k for _, k in cuts] + [""]
    return [Part(a, b, k) for a, b, k in zip(bounds, bounds[1:], kinds)]


def _run_start(text: bytes, header: int) -> tuple[int, str]:
    """Where the run whose header line starts at ``header`` begins: at the command line naming
    its op when that is the last non-empty line before it, else at the header."""
    end = header - 1
    while end > 0:
        start = text.rfind(b"\n", 0, end) + 1
        line = text[start:end]
        if line.strip():
            command = start > 0 and _COMMAND.match(line) and names_op(line.decode("utf-8", "replace"))
            return (start, "command") if command else (header, "header")
        end = start - 1
    return header, "header"


def parse_file(lines: Lines, name: str) -> Iterator[ImportedRun | Prepared]:
    """The runs of ``lines.path`` (whose head ``lines`` holds), read by ``lines.jobs`` worker
    processes where the file can be cut; the same runs in the same order as ``parse_lines``.
    A run a worker read comes as ``Prepared`` when ``lines.prepare`` is given."""
    path = lines.path
    assert path is not None
    cleaner = first_cleaner("".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines.head))
    cut = parts(path, os.path.getsize(path))
    if len(cut) < 2:   # nowhere to cut: one pass, without a worker to hand every run over
        yield from parse_lines(lines, name)
        return
    jobs = min(lines.jobs, len(cut))
    workers = workers_.start(_work, [(path, cut[j::jobs], name, lines.foreign, cleaner, lines.prepare)
                                     for j in range(jobs)])
    try:
        if lines.meanwhile is not None:
            lines.meanwhile()
        carried: Any = None    # the state a part starts from when the part before left one
        for k, part in enumerate(cut):
            runs, outcome = workers_.receive(workers[k % jobs][1])
            if carried is not None and outcome[0] != "again":   # read here, from that state
                runs, outcome = _read_here(path, part, name, lines.foreign, cleaner, carried)
            if outcome[0] == "again":
                yield from _rest(path, part.start, name, lines.foreign, cleaner, carried)
                return
            yield from runs
            if outcome[0] == "error":
                raise (RunRefused if outcome[2] else LogFormatError)(outcome[1])
            carried = outcome[1]
    finally:
        workers_.stop(workers)


def _read(parser: NcclTextParser, text: str, cleaner: TextCleaner, next_kind: str,
          prepare: Callable[[ImportedRun], Any] | None = None) -> tuple[list[Any], tuple[Any, ...]]:
    """A part's runs (with ``prepare``: what it makes of each, as ``Prepared``) and how it
    ended: ("end", the state the next part starts from, or None when it starts afresh),
    ("error", message, whether it is an RunRefused), or ("again",): the main process must read the rest of the file as one
    pass (another tool's output, a markup role open across the cut)."""
    runs: list[Any] = []
    roles = Roles()
    keep = runs.append if prepare is None else (lambda run: runs.append(Prepared(prepare(run))))
    try:
        for chunk in text_chunks(Lines([], io.StringIO(text)), cleaner, roles):
            for run in parser.feed_text(chunk):
                keep(run)
        if next_kind and roles.open_at_end:
            return [], ("again",)
        if next_kind and not parser.closes_before(next_kind):
            return runs, ("end", parser.state)
        done = parser.finish()
        if done is not None:
            keep(done)
        return runs, ("end", None)
    except ForeignLine:
        return [], ("again",)
    except LogFormatError as e:
        return runs, ("error", str(e), isinstance(e, RunRefused))


def _parser(name: str, foreign: re.Pattern[str] | None, state: Any) -> NcclTextParser:
    """A parser in the state the part before left (None: afresh)."""
    parser = NcclTextParser(name, foreign)
    if state is not None:
        parser.state = state
    return parser


def _read_here(path: str, part: Part, name: str, foreign: re.Pattern[str] | None, cleaner: TextCleaner,
               state: Any) -> tuple[list[ImportedRun], tuple[Any, ...]]:
    with open(path, "rb") as f:
        text = workers_.part_text(f, part.start, part.end)
        return _read(_parser(name, foreign, state), text, cleaner, part.next_kind)


def _rest(path: str, start: int, name: str, foreign: re.Pattern[str] | None, cleaner: TextCleaner,
          state: Any) -> Iterator[ImportedRun]:
    parser = _parser(name, foreign, state)
    with workers_.text_from(path, start) as text:
        yield from parse_chunks(parser, text_chunks(Lines([], text), cleaner))


def _work(path: str, mine: list[Part], name: str, foreign: re.Pattern[str] | None, cleaner: TextCleaner,
          prepare: Callable[[ImportedRun], Any] | None, conn: Connection, parent: int | None = None) -> None:
    """A worker process: each of its parts read whole, then sent. With ``prepare``, only what it
    makes of each run is sent (the records of a run are most of what a pickle of it holds)."""
    def read(f: Any, part: Part) -> tuple[list[Any], tuple[Any, ...]]:
        text = workers_.part_text(f, part.start, part.end)
        return _read(NcclTextParser(name, foreign), text, cleaner, part.next_kind, prepare)

    workers_.serve_parts(path, mine, read, conn, parent)
