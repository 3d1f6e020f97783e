"""Every way a nccl-tests text log is read (line by line, in blocks cut anywhere, by worker
processes) and where their runs differ."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from paths import TESTS

from clusterbench.ingest import _head, nccl_parallel
from clusterbench.ingest.common import Lines, clean_lines, text_chunks
from clusterbench.ingest.nccl_tests import NcclTextParser, parse_chunks

DATA = TESTS / "data" / "nccl-tests"


LOGS = sorted(p for p in DATA.iterdir() if p.suffix in (".txt", ".log"))


def fingerprint(r: Any) -> tuple:
    """What a run holds, as the store keeps it: the run record (but its clock) and every
    measurement."""
    d = r.run.to_dict()
    d.pop("started_at")
    ms = tuple((m.benchmark, m.metric, repr(m.value), m.unit, tuple(sorted(m.params.items())))
               for m in r.measurements)
    return repr(sorted(d.items())), ms


class _Cut(Lines):
    """A log given as blocks cut at chosen lines, as a file's reader hands them over."""

    def __init__(self, pieces: list[str]) -> None:
        super().__init__([], iter(()))
        self.pieces = pieces

    def blocks(self, size: int = 1 << 20) -> Iterator[str]:
        yield from self.pieces


def _outcome(runs: Iterator[Any]) -> tuple:
    got = []
    try:
        for r in runs:
            got.append(fingerprint(r))
    except Exception as e:   # noqa: BLE001 - a defect shows up as any exception, on every path alike
        return tuple(got), (type(e).__name__, str(e))
    return tuple(got), None


def _lines_of(text: str) -> list[str]:
    """The lines of ``text``, split at line feeds only (a CR before one stays: the cleaning's)."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def by_lines(text: str, name: str) -> Iterator[Any]:
    parser = NcclTextParser(name)
    for line in clean_lines(_lines_of(text)):
        done = parser.feed(line)
        if done is not None:
            yield done
    done = parser.finish()
    if done is not None:
        yield done


def by_blocks(text: str, name: str, cuts: list[int]) -> Iterator[Any]:
    """``cuts``: line indexes where a new block starts (the first block is the log's head)."""
    lines = [ln + "\n" for ln in _lines_of(text)]
    bounds = [0, *sorted(c for c in set(cuts) if 0 < c < len(lines)), len(lines)]
    pieces = ["".join(lines[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a]
    yield from parse_chunks(NcclTextParser(name), text_chunks(_Cut(pieces)))


def by_processes(text: str, name: str, part: int, tmp: str) -> Iterator[Any]:
    path = os.path.join(tmp, "log.txt")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    saved = nccl_parallel.PART_BYTES, nccl_parallel.MIN_BYTES
    nccl_parallel.PART_BYTES, nccl_parallel.MIN_BYTES = part, 0
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            head, rest = _head(f)
            yield from nccl_parallel.parse_file(Lines(head, rest, path=path, jobs=2), name)
    finally:
        nccl_parallel.PART_BYTES, nccl_parallel.MIN_BYTES = saved


def _difference(want: tuple, got: tuple) -> str:
    """The first thing that differs, line-by-line path first."""
    (runs_a, err_a), (runs_b, err_b) = want, got
    if len(runs_a) != len(runs_b):
        return f"{len(runs_a)} runs (error {err_a}) vs {len(runs_b)} runs (error {err_b})"
    for i, ((run_a, ms_a), (run_b, ms_b)) in enumerate(zip(runs_a, runs_b)):
        if run_a != run_b:
            a, b = dict(eval(run_a)), dict(eval(run_b))   # noqa: S307 - our own repr of plain values
            keys = [k for k in a if a[k] != b[k]]
            return f"run {i}: " + "; ".join(f"{k}: {a[k]!r} vs {b[k]!r}" for k in keys)
        if ms_a != ms_b:
            if len(ms_a) != len(ms_b):
                return f"run {i}: {len(ms_a)} vs {len(ms_b)} measurements"
            j = next(j for j, (x, y) in enumerate(zip(ms_a, ms_b)) if x != y)
            return f"run {i} measurement {j}: {ms_a[j]} vs {ms_b[j]}"
    return f"error {err_a} vs {err_b}"


def divergence(text: str, name: str, rng: random.Random, tmp: str, processes: bool = True) -> str | None:
    """None when every path gives what the line-by-line path gives; else which one differs, how."""
    want = _outcome(by_lines(text, name))
    nlines = len(_lines_of(text))
    head = rng.choice([40, 60, 160, nlines])   # the log's head: at least the lines cleaning is decided on
    tries: list[tuple[str, Callable[[], Iterator[Any]]]] = []
    for step in (1, 2, 3, 7, rng.randint(1, 50)):
        cuts = list(range(head, nlines, step))
        tries.append((f"blocks head={head} every {step} lines", lambda c=cuts: by_blocks(text, name, c)))
    later = range(head, nlines + 1)
    random_cuts = [head, *rng.sample(later, min(len(later), rng.randint(1, 20)))]
    tries.append((f"blocks cut at {sorted(random_cuts)}", lambda: by_blocks(text, name, random_cuts)))
    if processes:
        for part in (rng.choice([256, 512, 1024]), 4096):
            tries.append((f"processes part={part}", lambda p=part: by_processes(text, name, p, tmp)))
    for label, run in tries:
        got = _outcome(run())
        if got != want:
            return f"{label}: {_difference(want, got)}"[:1500]
    return None


HEADER = ["# nThread 1 nGpus 1 minBytes 1048576 maxBytes 33554432 step: 2(factor) warmup iters: 5 iters: 20 "
          "agg iters: 1 validation: 1 graph: 0",
          "#  Rank  0 Group  0 Pid  1 on node1 device  0 [0x01] NVIDIA H100",
          "#  Rank  1 Group  0 Pid  2 on node2 device  0 [0x01] NVIDIA H100",
          "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
          "busbw #wrong"]


FOOTER = ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 24.2333"]   # the mean of _rows()' busbw


def _rows(n: int = 6) -> list[str]:
    """n rows of a 2-rank all_reduce (busbw = algbw), 1 MiB up."""
    out = []
    for i in range(n):
        size = 1 << (20 + i)
        t, bw = 100.0 * (i + 1), size / 1e5 / (i + 1)
        out.append(f"  {size:>10}  {size // 4:>10}  float  sum  -1  {t:.1f}  {bw:.2f}  {bw:.2f}  0  "
                   f"{t:.1f}  {bw:.2f}  {bw:.2f}  0")
    return out


def _agreed(lines: list[str], tmp: Path, head: int = len(HEADER), name: str = "all_reduce.log") -> list:
    """The runs of the log ``lines``, after checking every path gives them: blocks whose first
    (the log's start, where cleaning is decided) holds ``head`` lines, then one line each; a
    single block; processes over tiny parts."""
    text = "".join(ln + "\n" for ln in lines)
    runs, error = _outcome(by_lines(text, name))
    assert error is None, error
    for got in (_outcome(by_blocks(text, name, list(range(head, len(lines))))),
                _outcome(by_blocks(text, name, [])),
                _outcome(by_processes(text, name, 256, str(tmp)))):
        assert got == (runs, None), _difference((runs, None), got)
    return [eval(run)  # noqa: S307 - our own repr of plain values
            for run, _ in runs]


BOM = "\ufeff"
