"""A log imported every way a user can hand it over (a file, .gz, standard input, text, JSON
lines), and the runs it gives, fingerprinted so that the ways can be compared."""

from __future__ import annotations

import gzip
import hashlib
import io
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterbench.errors import ClusterbenchError
from clusterbench.ingest import parse_text
from clusterbench.ingest.source import runs_of as _runs_of
from clusterbench.records import Measurement, Run
from clusterbench.report.jsonl import run_lines


def _run(run_id: int, **kw) -> Run:
    run = Run(benchmark="coll", command=["clusterbench", "coll", "all_reduce", "--json"],
              source="clusterbench 0.1.0", started_at="2026-01-02T03:04:05.678Z",
              ended_at="2026-01-02T03:04:09.000Z", hosts=["gpu01", "gpu02"], ranks=16,
              devices=["MI300X"] * 16, versions={"torch": "2.5.1", "rccl": "2.21.5"},
              env={"NCCL_IB_GID_INDEX": "3"}, tags={"env": "k8s"}, errors=[],
              meta={"launcher": "torchrun", "notes": ["x"], "nested": {"a": [1, 2.5, None]}}, id=run_id)
    for k, v in kw.items():
        setattr(run, k, v)
    return run


def _ms(n: int, bench: str = "all_reduce") -> list[Measurement]:
    return [Measurement(bench, "busbw", 10.0 + i / 3, "GB/s", {"bytes": 8 << i, "dtype": "float"})
            for i in range(n)]


def _lines(run: Run, ms: list[Measurement]) -> list[str]:
    return list(run_lines(run, ms))


def _import_jsonl_origins_run(host: str, started: str = "2026-01-02T03:04:05.678Z") -> Run:
    return Run(benchmark="coll", command=["clusterbench", "coll", "all_reduce", "--json"],
               source="clusterbench 0.1.0", started_at=started, ended_at="2026-01-02T03:04:09.000Z",
               hosts=[host], ranks=8, devices=["H100"] * 8, tags={"host": host}, id=1)


def _import_jsonl_origins_ms(n: int, base: float) -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", base + i, "GB/s", {"bytes": 8 << i, "dtype": "float"})
            for i in range(n)]


def _interleave(a: list[str], b: list[str]) -> list[str]:
    out: list[str] = []
    for i in range(max(len(a), len(b))):
        out += a[i:i + 1] + b[i:i + 1]
    return out


BOM = b"\xef\xbb\xbf"


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


def by_file(tmp: Path, data: bytes, name: str, tool: str | None = None, jobs: int = 1) -> Outcome:
    path = tmp / name
    path.write_bytes(data)
    return _outcome(_runs_of(str(path), tool, None, jobs, str(path)), [str(path), name])


def by_text(data: bytes, name: str, tool: str | None = None) -> Outcome:
    """``parse_text``: all the runs or the error alone (it gives a list)."""
    try:
        runs = parse_text(data.decode("utf-8", "replace"), tool, name)
    except ClusterbenchError as e:
        return (), str(e)
    return _outcome(iter(runs), [name])


PROGRESS = b"  37% |#####     | 12/32 [00:03<00:05]\r"


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


def by_gz(tmp: Path, data: bytes, name: str, tool: str | None = None) -> Outcome:
    path = tmp / f"{name}.gz"
    with gzip.open(path, "wb") as f:
        f.write(data)
    return _outcome(_runs_of(str(path), tool, None, 1, str(path)), [str(path)[:-3], name])


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def by_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes, tool: str | None = None) -> Outcome:
    """As ``clusterbench import -`` reads it; its runs are named "stdin"."""
    with monkeypatch.context() as m:
        m.setattr(sys, "stdin", _Stdin(data))
        return _outcome(_runs_of("-", tool, hashlib.sha256(), 1, "-"), ["stdin"])


def _text_form(want: Outcome) -> Outcome:
    return want if want[1] is None else ((), want[1])


def _progress(data: bytes, every: int = 3) -> bytes:
    """Progress output written before some lines and overwritten by them, as a terminal shows."""
    lines = data.split(b"\n")
    return b"\n".join(PROGRESS + ln if i % every == 1 and ln.strip() else ln for i, ln in enumerate(lines))


def _json(name: str, data: bytes) -> bool:
    """A JSON document or JSON lines: not terminal output (a CR in it is JSON's whitespace)."""
    return name.endswith((".json", ".jsonl")) or data.lstrip()[:1] in (b"{", b"[")


def _tool_of(outcome: Outcome) -> str | None:
    for run, _ in outcome[0]:
        meta = dict(eval(run))["meta"]   # noqa: S307 - our own repr of plain values
        if "tool" in meta:
            return str(meta["tool"])
    return None
