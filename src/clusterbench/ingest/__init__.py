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
from collections.abc import Iterable, Iterator

from clusterbench.ingest.common import (
    IMPORT_BENCHMARK,
    ImportedRun,
    Lines,
    LogFormatError,
    clean_lines,
)
from clusterbench.ingest.registry import ForeignOutput, Importer, whole_text

__all__ = ["IMPORT_BENCHMARK", "IMPORTERS", "TOOLS", "ImportedRun", "LogFormatError", "detect_tool",
           "iter_runs", "parse_text"]

HEAD_CHARS = 64 * 1024  # enough to see every tool's signature; the rest is streamed


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
    tool's output begins."""
    parts: list[tuple[str, str]] = []
    tool, start = None, 0
    for m in _ALL_STARTS.finditer(text):
        found = _STARTERS[int((m.lastgroup or "g0")[1:])].tool
        if tool is None:
            tool = found
            continue
        if found == tool:
            continue
        line = text.rfind("\n", 0, m.start()) + 1
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


def detect_tool(text: str) -> str | None:
    """The tool that wrote ``text`` (its beginning suffices), or None."""
    head = "\n".join(clean_lines(text[:HEAD_CHARS].splitlines()))
    return next((imp.tool for imp in IMPORTERS if imp.detects(head)), None)


def iter_runs(lines: Iterable[str], tool: str | None = None, name: str = "", jobs: int = 1,
              path: str | None = None) -> Iterator[ImportedRun]:
    """Runs found in a log given as lines (with or without line ends; a file object works).

    Raises LogFormatError for empty input, binary data, an unknown format, or a log of the tool
    that holds no results. nccl-tests text logs are parsed as they stream, one run at a time.
    ``path``: the uncompressed file ``lines`` reads from its start (opened as UTF-8 with
    ``errors="replace", newline=""``); a large nccl-tests log there is read by up to ``jobs``
    processes (nccl_parallel), with the same runs.
    """
    it = iter(lines)
    head_lines: list[str] = []
    size = 0
    for line in it:
        head_lines.append(line if line.endswith("\n") else line + "\n")
        size += len(line)
        if size >= HEAD_CHARS:
            break
    head = "".join(head_lines)
    if not head.strip():
        raise LogFormatError("empty file")
    if "\x00" in head or _binary(head):
        raise LogFormatError("binary data, not a text log")
    if tool is not None and tool not in _BY_TOOL:
        raise LogFormatError(f"unknown tool {tool!r}: choose one of {', '.join(TOOLS)}")
    found = tool or detect_tool(head)
    if found is None:
        raise LogFormatError(f"unknown format: not the output of {', '.join(TOOLS)} (use --tool to force one)")
    count = 0
    imp = _BY_TOOL[found]
    if tool is not None:          # forced: the whole log is that tool's
        runs = imp.parse(Lines(head_lines, it), name, head)
    elif imp.streams:             # a foreign tool's output met on the way is read by its tool
        runs = _streamed(imp, Lines(head_lines, it, foreign=_foreign_starts(found), path=path, jobs=jobs), name, head)
    else:
        runs = _parts(whole_text(Lines(head_lines, it)), found, name)
    try:
        for run in runs:
            count += 1
            yield run
    except RecursionError:   # JSON nested thousands deep: Python's parser gives up, so do we
        raise LogFormatError(f"{found} data nested more than {sys.getrecursionlimit()} levels deep: "
                             "not a log this tool writes") from None
    if count == 0:
        raise LogFormatError(f"no {found} results found")


def _streamed(imp: Importer, lines: Lines, name: str, head: str) -> Iterator[ImportedRun]:
    try:
        yield from imp.parse(lines, name, head)
    except ForeignOutput as rest:
        yield from _parts(rest.text, imp.tool, name, mixed=True)


def _parts(text: str, found: str, name: str, mixed: bool = False) -> Iterator[ImportedRun]:
    """Each tool's part of a log, read by its tool (one part when one tool wrote it all)."""
    parts = split_tools(text, found)
    for tool, part in parts:
        lines = part.splitlines(keepends=True)
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
    return list(iter_runs(text.splitlines(keepends=True), tool, name))
