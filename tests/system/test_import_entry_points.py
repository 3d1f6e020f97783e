"""System tests (import entry points): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from paths import TESTS

from clusterbench.errors import ClusterbenchError
from clusterbench.ingest import nccl_parallel
from clusterbench.ingest.source import runs_of as _runs_of

DATA = TESTS / "data"


TOOL_DIRS = ["babelstream", "hipblaslt-bench", "iperf3", "nccl-tests", "osu", "perftest", "rocblas-bench", "stream",
             "transferbench", "vllm-serving"]


LOGS = sorted(p for d in TOOL_DIRS for p in (DATA / d).iterdir() if p.name != "README.md")


NCCL = [p for p in LOGS if p.parent.name == "nccl-tests"]


BOM = b"\xef\xbb\xbf"


PROGRESS = b"  37% |#####     | 12/32 [00:03<00:05]\r"


Outcome = tuple[tuple[Any, ...], str | None]


def _fingerprint(item: Any, names: Iterable[str]) -> tuple[str, tuple[Any, ...]]:
    """A run as stored, but what depends on when and how it was imported: its clock, id, file
    name (in its meta and its source) and command line."""
    d = item.run.to_dict()
    for key in ("id", "started_at", "ended_at", "command"):
        d.pop(key)
    d["meta"] = {k: v for k, v in d["meta"].items() if k != "file"}
    text = repr(sorted(d.items()))
    for name in sorted(names, key=len, reverse=True):
        text = text.replace(name, "<file>")
    ms = tuple((m.benchmark, m.metric, repr(m.value), m.unit, tuple(sorted(m.params.items())))
               for m in item.measurements)
    return text, ms


def _outcome(runs: Iterator[Any], names: Iterable[str]) -> Outcome:
    got = []
    try:
        for item in runs:
            got.append(_fingerprint(item, names))
    except ClusterbenchError as e:   # LogFormatError and the command's own (an unreadable file)
        return tuple(got), str(e)
    return tuple(got), None


def _differs(want: Outcome, got: Outcome) -> str:
    (runs_a, err_a), (runs_b, err_b) = want, got
    if len(runs_a) != len(runs_b) or err_a != err_b:
        return f"{len(runs_a)} runs, error {err_a!r} vs {len(runs_b)} runs, error {err_b!r}"
    i = next(i for i, (a, b) in enumerate(zip(runs_a, runs_b)) if a != b)
    (run_a, ms_a), (run_b, ms_b) = runs_a[i], runs_b[i]
    if run_a != run_b:
        return f"run {i}: {run_a[:600]} vs {run_b[:600]}"
    return f"run {i}: {len(ms_a)} vs {len(ms_b)} measurements, first difference " + \
        str(next(((x, y) for x, y in zip(ms_a, ms_b) if x != y), "(one list is longer)"))


def _same(want: Outcome, got: Outcome, what: str) -> None:
    assert got == want, f"{what}: {_differs(want, got)}"


def by_file(tmp: Path, data: bytes, name: str, tool: str | None = None, jobs: int = 1) -> Outcome:
    path = tmp / name
    path.write_bytes(data)
    return _outcome(_runs_of(str(path), tool, None, jobs, str(path)), [str(path), name])


def _progress(data: bytes, every: int = 3) -> bytes:
    """Progress output written before some lines and overwritten by them, as a terminal shows."""
    lines = data.split(b"\n")
    return b"\n".join(PROGRESS + ln if i % every == 1 and ln.strip() else ln for i, ln in enumerate(lines))


@pytest.mark.parametrize("path", NCCL[::3], ids=lambda p: p.name)
def test_processes_read_every_form_alike(tmp_path, monkeypatch, path):
    # the first part is read by a worker from the file itself: a byte order mark there was read
    # as the start of the first line
    monkeypatch.setattr(nccl_parallel, "PART_BYTES", 2048)
    monkeypatch.setattr(nccl_parallel, "MIN_BYTES", 0)
    data = path.read_bytes() * 6
    plain = by_file(tmp_path, data, path.name)
    for label, form, want in (("plain", data, plain), ("a BOM", BOM + data, plain),
                              ("progress", _progress(data, 5), plain),
                              ("CRLF", data.replace(b"\n", b"\r\n"), plain),
                              # at a line's start it is no part of the log: the second
                              # copy's header was hidden by it
                              ("a BOM in the middle", data + BOM + data, by_file(tmp_path, data + data, path.name))):
        _same(want, by_file(tmp_path, form, path.name, jobs=2), f"{label}, 2 processes")
