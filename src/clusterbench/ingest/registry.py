"""How importers plug in: each parser module lists its ``Importer`` (tool name, the signature its
output carries, its parse function) in ``IMPORTERS``; the package finds every module that does.

Detection tries signatures in ``order`` (lower first) and the first match names the tool, so a
signature that another tool's output may also contain goes after the more specific ones.

``starts`` matches the lines that begin a tool's output (its banner, its first header line): a
log holding the output of several tools is split there and each part read by its own tool.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from clusterbench.ingest.common import ImportedRun

# (lines, name, head) -> runs: ``lines`` is the whole log (streamed), ``head`` its first 64 KiB
Parse = Callable[[Iterable[str], str, str], Iterator[ImportedRun]]


@dataclass(frozen=True)
class Importer:
    tool: str                          # the name ``--tool`` takes and runs record as their source
    signature: re.Pattern[str] | None  # lines or keys only this tool prints; None: only by --tool
    parse: Parse
    order: int = 50
    aliases: tuple[str, ...] = ()      # other --tool names for the same parser (rccl-tests)
    starts: re.Pattern[str] | None = None   # lines that begin this tool's output (multiline)
    streams: bool = False              # parse reads the lines as they come (not the whole text)

    def detects(self, head: str) -> bool:
        return self.signature is not None and self.signature.search(head) is not None


def whole_text(lines: Iterable[str]) -> str:
    """The lines (with or without their line ends) as one text."""
    return "".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines)


def whole(parser: Callable[[str, str], list[ImportedRun]]) -> Parse:
    """A parse function for a parser that needs the whole text at once."""
    def parse(lines: Iterable[str], name: str, head: str) -> Iterator[ImportedRun]:
        yield from parser(whole_text(lines), name)
    return parse


class ForeignOutput(Exception):
    """A streaming parser met another tool's output: ``text`` is the log from there on."""

    def __init__(self, text: str) -> None:
        super().__init__("another tool's output")
        self.text = text
