"""Importers for the logs of the standard tools: text in, runs with measurements out.

    parse_text(text, tool=None, name="") -> list[ImportedRun]
    iter_runs(lines, tool=None, name="")  -> Iterator[ImportedRun]   (streams nccl-tests logs)
    detect_tool(text) -> str | None
    TOOLS: the tool names accepted by ``tool=`` and ``clusterbench import --tool``

Every parser is a pure function of the text. Records use the benchmark families of
docs/architecture.md, so an imported run is selected, validated and compared like a native one.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from clusterbench.ingest.collectives import RunRefused
from clusterbench.ingest.common import (
    BOM,
    IMPORT_BENCHMARK,
    ImportedRun,
    Lines,
    LogFormatError,
    Prepared,
    clean_lines,
    drop_line_boms,
    seen_lines,
    text_lines,
)
from clusterbench.ingest.registry import ForeignOutput, Importer, whole_text

__all__ = ["IMPORT_BENCHMARK", "IMPORTERS", "TOOLS", "ImportedRun", "LogFormatError", "detect_tool",
           "iter_runs", "parse_text"]

HEAD_CHARS = 64 * 1024  # enough to see every tool's signature; the rest is streamed
# No tool writes a line near this long; a file without newlines (a disk image, /dev/zero) must
# not be read whole to find its first line end
MAX_LINE = 16 << 20
# What a parser raises when a log is damaged in a way its tests did not foresee (a cell that is
# not a number, a token missing): a defect to fix in that parser, and still a bad file to refuse
PARSER_DEFECTS = (ValueError, LookupError, ArithmeticError, TypeError, AttributeError)


def _discover() -> tuple[Importer, ...]:
    """Every ``IMPORTERS`` entry of this package's modules, in detection order."""
    found: list[Importer] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        found += getattr(module, "IMPORTERS", ())
    return tuple(sorted(found, key=lambda imp: imp.order))


IMPORTERS = _discover()
_BY_TOOL: dict[str, Importer] = {}
for _imp in IMPORTERS:
    for _name in (_imp.tool, *_imp.aliases):
        _BY_TOOL.setdefault(_name, _imp)
TOOLS = tuple(sorted(_BY_TOOL))
# Where each tool's output begins, one named group per importer (g0, g1, ...)
_STARTERS = [imp for imp in IMPORTERS if imp.starts is not None]
_ALL_STARTS = re.compile("|".join(f"(?P<g{i}>{imp.starts.pattern})" for i, imp in enumerate(_STARTERS)  # type: ignore[union-attr]
                                  ), re.M)
CONTEXT_LINES = 3   # lines before a tool's first line that go with it (its command line)


def _foreign_starts(tool: str) -> re.Pattern[str] | None:
    """Where the output of a tool other than ``tool`` begins."""
    others = [imp.starts.pattern for imp in _STARTERS if imp.tool != tool]  # type: ignore[union-attr]
    return re.compile("|".join(f"(?:{p})" for p in others), re.M) if others else None


def split_tools(text: str, first: str) -> list[tuple[str, str]]:
    """The parts of a log written by different tools, as (tool, text), in order. Text before a
    tool's first line (its command line, a prompt) goes with it; a part ends where another
    tool's output begins. Lines are seen as the parsers see them (``seen_lines``: a colour code,
    a launcher's prefix or a byte order mark before a tool's first line would hide it); the parts
    are the text as it came, without the byte order marks that start lines (a tool's output saved
    with one and appended to another's)."""
    text = drop_line_boms(text)
    seen = seen_lines(text)
    line_at = _line_offsets(text) if seen != text else None
    parts: list[tuple[str, str]] = []
    tool, start = None, 0
    for m in _ALL_STARTS.finditer(seen):
        found = _STARTERS[int((m.lastgroup or "g0")[1:])].tool
        if tool is None:
            tool = found
            continue
        if found == tool:
            continue
        line = seen.rfind("\n", 0, m.start()) + 1
        if line_at is not None:   # the same line in the text as it came
            line = line_at[seen.count("\n", 0, line)]
        context = line
        for _ in range(CONTEXT_LINES):
            prev = text.rfind("\n", 0, max(context - 1, 0)) + 1
            if prev >= context or not text[prev:context].strip():
                break
            context = prev
        parts.append((tool, text[start:line]))
        tool, start = found, context
    parts.append((tool or first, text[start:]))
    return [(t, p) for t, p in parts if p.strip()]


def _line_offsets(text: str) -> list[int]:
    """Where each line of ``text`` starts."""
    return [0, *(m.end() for m in _LINE_END.finditer(text))]


_LINE_END = re.compile("\n")


def detect_tool(text: str) -> str | None:
    """The tool that wrote ``text`` (its beginning suffices), or None."""
    head = "\n".join(clean_lines(text_lines(text[:HEAD_CHARS])))
    return next((imp.tool for imp in IMPORTERS if imp.detects(head)), None)


def iter_runs(lines: Iterable[str], tool: str | None = None, name: str = "", jobs: int = 1,
              path: str | None = None, prepare: Callable[[ImportedRun], Any] | None = None,
              meanwhile: Callable[[], None] | None = None) -> Iterator[Any]:
    """Runs found in a log given as lines (with or without line ends; a file object works).

    Raises LogFormatError for empty input, binary data, an unknown format, or a log of the tool
    that holds no results. nccl-tests text logs are parsed as they stream, one run at a time.
    ``path``: the uncompressed file ``lines`` reads from its start (opened as UTF-8 with
    ``errors="replace", newline=""``); a large nccl-tests log there is read by up to ``jobs``
    processes (nccl_parallel), with the same runs.

    ``prepare``: yield ``prepare(run)`` instead of each run, computed where the run was parsed
    (a worker process, for a large log), so that only its result crosses between processes. It
    must be a pure function of the run (it may change the run; it must not print or store);
    what it raises is raised here, after the results of the runs before.

    ``meanwhile``: called once, where worker processes read a large log, while they read their
    first parts (``Lines.meanwhile``); it must not raise.

    However the log arrives, a line ends at a line feed only (a CR before it is dropped, another
    CR is progress output overwritten in place: ``common._on_screen``), and a byte order mark
    before the first line is dropped, so a file, a pipe, a .gz file and ``parse_text`` give the
    same runs.
    """
    head_lines, it = _head(lines)
    head = "".join(head_lines)
    _refuse_junk(head)
    if tool is not None and tool not in _BY_TOOL:
        raise LogFormatError(f"unknown tool {tool!r}: choose one of {', '.join(TOOLS)}")
    found = tool or detect_tool(head)
    if found is None:
        raise LogFormatError(f"unknown format: not the output of {', '.join(TOOLS)} (use --tool to force one)")
    count = 0
    imp = _BY_TOOL[found]

    def each(run: ImportedRun) -> Any:
        _check_storable(run, found)
        return prepare(run) if prepare is not None else run

    if tool is not None:          # forced: the whole log is that tool's
        runs = imp.parse(Lines(head_lines, it), name, head)
    elif imp.streams:             # a foreign tool's output met on the way is read by its tool
        runs = _streamed(imp, Lines(head_lines, it, foreign=_foreign_starts(found), path=path, jobs=jobs,
                                    prepare=each, meanwhile=meanwhile), name, head)
    else:
        runs = _parts(whole_text(Lines(head_lines, it)), found, name)
    try:
        for run in runs:
            count += 1
            yield run.value if isinstance(run, Prepared) else each(run)
    except RunRefused as e:   # one run's evidence disagrees about its op: say which run of the file
        raise LogFormatError(f"run {count + 1}: {e}") from None
    except RecursionError:   # JSON nested thousands deep: Python's parser gives up, so do we
        raise LogFormatError(f"{found} data nested more than {sys.getrecursionlimit()} levels deep: "
                             "not a log this tool writes") from None
    except PARSER_DEFECTS as e:
        # A parser met a shape of damage its tests did not foresee: the file is refused, by its
        # name, and the other files of the import go on (CLUSTERBENCH_DEBUG=1 shows the cause)
        raise LogFormatError(f"malformed {found} log: the importer failed on it "
                             f"({type(e).__name__}: {_short(str(e))})") from e
    if count == 0:
        raise LogFormatError(f"no {found} results found")


def _refuse_junk(head: str) -> None:
    if not head.strip():
        raise LogFormatError("empty file")
    if "\x00" in head or _binary(head):
        raise LogFormatError("binary data, not a text log")


def _head(lines: Iterable[str]) -> tuple[list[str], Iterator[str]]:
    """A log's first lines (about HEAD_CHARS, each ending with a newline) and the rest.

    A file (anything with ``readline``) is read in bounded parts: its first HEAD_CHARS are
    judged before the rest of a line that goes on past them is read, and the rest comes through
    ``_Bounded``. Lines given otherwise are already in memory and are taken as they are.
    """
    head_lines: list[str] = []
    size = 0
    if not callable(getattr(lines, "readline", None)):
        it = iter(lines)
        for line in it:
            head_lines.append(line if line.endswith("\n") else line + "\n")
            size += len(line)
            if size >= HEAD_CHARS:
                break
        return _without_bom(head_lines), it
    f = _Bounded(lines)
    while size < HEAD_CHARS:
        budget = HEAD_CHARS - size
        line = f.file.readline(budget)
        if not line:
            break
        if head_lines and not head_lines[-1].endswith("\n"):
            # a file opened with newline="" splits at a lone CR; a log's line ends at a line
            # feed only (a lone CR is progress output overwritten in place, see _on_screen)
            head_lines[-1] += line
        else:
            head_lines.append(line)
        size += len(line)
    if head_lines and not head_lines[-1].endswith("\n") and size >= HEAD_CHARS:
        # cut at the budget: judged before the rest of that line, which may be gigabytes
        # without a newline
        _refuse_junk("".join(head_lines))
        head_lines[-1] = f.rest_of_line(head_lines[-1])
    return _without_bom([ln if ln.endswith("\n") else ln + "\n" for ln in head_lines]), f


def _without_bom(head_lines: list[str]) -> list[str]:
    """The lines without the byte order mark an editor may put first: invisible, it would hide
    the first line's words from the parsers (and a JSON document from its decoder)."""
    if head_lines and head_lines[0].startswith(BOM):
        head_lines[0] = head_lines[0][len(BOM):]
    return head_lines


class _Bounded:
    """A text file's lines, read so that none longer than MAX_LINE characters is held whole;
    ``read`` and ``readline`` as ``Lines.blocks`` takes them from a file (blocks, each completed
    to its line end)."""

    def __init__(self, file: Any) -> None:
        self.file = file

    def __iter__(self) -> Iterator[str]:
        readline, limit = self.file.readline, MAX_LINE + 1   # a loop, not __next__: 300k lines a second
        while line := readline(limit):
            if line[-1] != "\n":   # split at a lone CR (newline=""), cut at the limit, or the last line
                line = self.rest_of_line(line)
            if len(line) > MAX_LINE:
                raise _too_long()
            yield line

    def __next__(self) -> str:
        line = self.rest_of_line("")
        if not line:
            raise StopIteration
        return line

    def read(self, size: int) -> str:
        return self.file.read(size)  # type: ignore[no-any-return]

    def readline(self) -> str:
        return self.rest_of_line("")

    def rest_of_line(self, start: str) -> str:
        """``start`` and the rest of its line, which ends at a line feed only: a file opened
        with newline="" also stops at a lone CR, read on past."""
        line = start
        while not line.endswith("\n") and len(line) <= MAX_LINE:
            more = self.file.readline(MAX_LINE + 1 - len(line))
            if not more:
                break
            line += more
        if len(line) > MAX_LINE:
            raise _too_long()
        return line


def _too_long() -> LogFormatError:
    return LogFormatError(f"not a text log: a line longer than {MAX_LINE >> 20} MiB")


def _check_storable(run: ImportedRun, tool: str) -> None:
    """Refuse a run with a value the store cannot hold (a parser's defect, as a per-file error)."""
    bad = run.not_finite()
    if bad is not None:
        raise LogFormatError(f"malformed {tool} log: {bad.benchmark} {bad.metric} {bad.value!r} is not a finite number")


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _streamed(imp: Importer, lines: Lines, name: str, head: str) -> Iterator[ImportedRun]:
    try:
        yield from imp.parse(lines, name, head)
    except ForeignOutput as rest:
        yield from _parts(rest.text, imp.tool, name, mixed=True)


def _parts(text: str, found: str, name: str, mixed: bool = False) -> Iterator[ImportedRun]:
    """Each tool's part of a log, read by its tool (one part when one tool wrote it all)."""
    parts = split_tools(text, found)
    for tool, part in parts:
        lines = text_lines(part)
        try:
            yield from _BY_TOOL[tool].parse(Lines(lines, iter(())), name, part[:HEAD_CHARS])
        except LogFormatError as e:
            if len(parts) == 1 and not mixed:
                raise
            raise LogFormatError(f"the {tool} output in it: {e}") from None


def _binary(head: str) -> bool:
    sample = head[:4096]
    odd = sum(1 for ch in sample if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\n\r\t\x1b\x0c"))
    return odd > len(sample) * 0.05


def parse_text(text: str, tool: str | None = None, name: str = "") -> list[ImportedRun]:
    """All runs in ``text``; see ``iter_runs``."""
    # split as a file is read: at line feeds only (str.splitlines also splits at a lone CR,
    # form feeds and other separators, which a file's lines hold)
    return list(iter_runs(text_lines(text), tool, name))
