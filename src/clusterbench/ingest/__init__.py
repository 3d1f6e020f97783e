"""Importers for the logs of the standard tools: text in, runs with measurements out.

    parse_text(text, tool=None, name="") -> list[ImportedRun]
    iter_runs(lines, tool=None, name="")  -> Iterator[ImportedRun]   (streams nccl-tests logs)
    detect_tool(text) -> str | None
    TOOLS: the tool names accepted by ``tool=`` and ``clusterbench import --tool``

Every parser is a pure function of the text. Records use the benchmark families of
docs/architecture.md, so an imported run is selected, validated and compared like a native one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator

from clusterbench.ingest import (
    babelstream,
    blas_bench,
    clusterbench_jsonl,
    iperf3,
    nccl_files,
    nccl_tests,
    osu,
    perftest,
    transferbench,
    vllm_serving,
)
from clusterbench.ingest.common import IMPORT_BENCHMARK, ImportedRun, LogFormatError, clean_lines
from clusterbench.ingest.detect import detect

__all__ = ["IMPORT_BENCHMARK", "TOOLS", "ImportedRun", "LogFormatError", "detect_tool", "iter_runs", "parse_text"]

TOOLS = ("nccl-tests", "rccl-tests", "transferbench", "babelstream", "stream", "rocblas-bench", "hipblaslt-bench",
         "perftest", "iperf3", "osu", "vllm-serving", clusterbench_jsonl.TOOL)
HEAD_CHARS = 64 * 1024  # enough to see every tool's signature; the rest is streamed


def detect_tool(text: str) -> str | None:
    """The tool that wrote ``text`` (its beginning suffices), or None."""
    return detect("\n".join(clean_lines(text[:HEAD_CHARS].splitlines())))


def _whole(parser: Callable[[str, str], list[ImportedRun]]) -> Callable[[Iterable[str], str], Iterator[ImportedRun]]:
    def run(lines: Iterable[str], name: str) -> Iterator[ImportedRun]:
        yield from parser("".join(lines), name)
    return run


def _nccl(lines: Iterable[str], name: str, head: str) -> Iterator[ImportedRun]:
    start = head.lstrip()[:1]
    if head.lstrip().startswith("numCycle,") or start == "[" and '"numCycle"' in head:
        fmt = "csv" if start != "[" else "json"
        yield from nccl_files.parse_rccl_results("".join(lines), name, fmt)
    elif start == "{":
        yield from nccl_files.parse_nccl_json("".join(lines), name)
    else:
        yield from nccl_tests.parse_lines(lines, name)


def _vllm(lines: Iterable[str], name: str, head: str) -> Iterator[ImportedRun]:
    text = "".join(lines)
    if head.lstrip()[:1] in "{[":
        yield from vllm_serving.parse_json(text, name)
    else:
        yield from vllm_serving.parse_text(text, name)


_PARSERS: dict[str, Callable[[Iterable[str], str, str], Iterator[ImportedRun]]] = {
    "nccl-tests": _nccl,
    "rccl-tests": _nccl,
    "transferbench": lambda lines, name, head: _whole(transferbench.parse)(lines, name),
    "babelstream": lambda lines, name, head: _whole(babelstream.parse)(lines, name),
    "stream": lambda lines, name, head: _whole(babelstream.parse)(lines, name),
    "rocblas-bench": lambda lines, name, head: iter(blas_bench.parse("".join(lines), name, "rocblas-bench")),
    "hipblaslt-bench": lambda lines, name, head: iter(blas_bench.parse("".join(lines), name, "hipblaslt-bench")),
    "perftest": lambda lines, name, head: _whole(perftest.parse)(lines, name),
    "iperf3": lambda lines, name, head: _whole(iperf3.parse)(lines, name),
    "osu": lambda lines, name, head: _whole(osu.parse)(lines, name),
    "vllm-serving": _vllm,
    clusterbench_jsonl.TOOL: lambda lines, name, head: clusterbench_jsonl.iter_parse(lines, name),
}


def iter_runs(lines: Iterable[str], tool: str | None = None, name: str = "") -> Iterator[ImportedRun]:
    """Runs found in a log given as lines (with or without line ends; a file object works).

    Raises LogFormatError for empty input, binary data, an unknown format, or a log of the tool
    that holds no results. nccl-tests text logs are parsed as they stream, one run at a time.
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
    if tool is not None and tool not in _PARSERS:
        raise LogFormatError(f"unknown tool {tool!r}: choose one of {', '.join(TOOLS)}")
    found = tool or detect_tool(head)
    if found is None:
        raise LogFormatError(f"unknown format: not the output of {', '.join(TOOLS)} (use --tool to force one)")
    rest = (line if line.endswith("\n") else line + "\n" for line in it)
    count = 0
    for run in _PARSERS[found](itertools.chain(head_lines, rest), name, head):
        count += 1
        yield run
    if count == 0:
        raise LogFormatError(f"no {found} results found")


def _binary(head: str) -> bool:
    sample = head[:4096]
    odd = sum(1 for ch in sample if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\n\r\t\x1b\x0c"))
    return odd > len(sample) * 0.05


def parse_text(text: str, tool: str | None = None, name: str = "") -> list[ImportedRun]:
    """All runs in ``text``; see ``iter_runs``."""
    return list(iter_runs(text.splitlines(keepends=True), tool, name))
