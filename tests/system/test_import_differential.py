"""System tests (import differential): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import os
import random
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from paths import TESTS

from clusterbench.ingest import _head, nccl_parallel
from clusterbench.ingest.common import Lines, clean_lines, text_chunks
from clusterbench.ingest.nccl_tests import NcclTextParser, parse_chunks

DATA = TESTS / "data" / "nccl-tests"


LOGS = sorted(p for p in DATA.iterdir() if p.suffix in (".txt", ".log"))


NAMES = ["log.txt", "all_reduce_perf.log", "alltoall.txt"]


INFO_LINES = [
    "gpu-node-01:4242:4242 [0] NCCL INFO comm 0x5555 rank 0 nranks 16 cudaDev 0 busId 1000 - Init COMPLETE",
    "gpu-node-01:4242:4242 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
    "gpu-node-02:4243:4250 [1] NCCL INFO Channel 00/32 :    0   1   2   3",
    "node1:11:11 [0] NCCL INFO Launch mode Parallel",
    "mi300x:77:77 [3] NCCL INFO RCCL version 2.20.5+hip6.2 HEAD:abc",
]


ERROR_LINES = [
    "node1: Test NCCL failure common.cu:1005 'unhandled cuda error'",
    "gpu-node-01:4242:4250 [0] enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'",
    "# error: 3 wrong values",
    "Segmentation fault (core dumped)",
    " .. node2 pid 77: Test failure common.cu:401",
    "terminate called after throwing an instance of 'std::runtime_error'",
    "mpirun noticed that process rank 3 exited on signal 6 (Aborted).",
]


OTHER_LINES = [
    "$ mpirun -np 8 ./build/all_gather_perf -b 8 -e 8G -f 2 -g 1",
    "srun ./build/reduce_scatter_perf -b 1M -e 1G",
    "# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903",
    "# Collective test starting: broadcast_perf",
    "# Collective test concluded: broadcast_perf",
    "#",
    "...",
    "C:\\logs\\run 1 \\| path \\* star \\\\ two",
    "a path with a backslash: C:\\temp\\nccl\\out.txt",
    "# Avg bus bandwidth    : 12.5 ",
    "# Out of bounds values : 0 OK",
    "Using devices",
]


PREFIXES: list[Callable[[int], str]] = [
    lambda i: f"[1,{i % 8}]<stdout>:",
    lambda i: f"[1,{i % 8}]<stderr>:",
    lambda i: f"(head, rank={i % 4}, pid={1000 + i}) ",
    lambda i: "[pod/nccl-test-launcher-x9/mpi] ",
    lambda i: "2025-11-19T18:02:33.123Z ",
    lambda i: "[2025-11-19 18:02:33] ",
    lambda i: f"{i % 16:>2}: ",
    lambda i: f"{i % 4}: ",
]


ANSI = ["\x1b[32m", "\x1b[0m", "\x1b[1;31m", "\x1b[K"]


def _logs() -> list[tuple[str, str]]:
    return [(p.name, p.read_text(encoding="utf-8", errors="replace")) for p in LOGS]


def _delete(rng: random.Random, lines: list[str]) -> list[str]:
    for _ in range(rng.randint(1, 4)):
        if lines:
            del lines[rng.randrange(len(lines))]
    return lines


def _duplicate(rng: random.Random, lines: list[str]) -> list[str]:
    for _ in range(rng.randint(1, 4)):
        if lines:
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
    return lines


def _insert_from(pool: list[str]) -> Callable[[random.Random, list[str]], list[str]]:
    def insert(rng: random.Random, lines: list[str]) -> list[str]:
        for _ in range(rng.randint(1, 3)):
            lines.insert(rng.randint(0, len(lines)), rng.choice(pool))
        return lines
    return insert


def _blank(rng: random.Random, lines: list[str]) -> list[str]:
    for _ in range(rng.randint(1, 5)):
        lines.insert(rng.randint(0, len(lines)), rng.choice(["", " ", "\t", "   "]))
    return lines


def _prefix(rng: random.Random, lines: list[str]) -> list[str]:
    make = rng.choice(PREFIXES)
    if rng.random() < 0.5:   # every line, as the launcher writes them
        return [make(i) + ln for i, ln in enumerate(lines)]
    for _ in range(rng.randint(1, 6)):   # some lines: a second stream mixed in
        if lines:
            i = rng.randrange(len(lines))
            lines[i] = make(i) + lines[i]
    return lines


def _pdsh(rng: random.Random, lines: list[str]) -> list[str]:
    host = rng.choice(["node1", "gpu-a.cluster", "h100x"])
    return [f"{host}: {ln}" if ln.strip() or rng.random() < 0.5 else ln for ln in lines]


def _crlf(rng: random.Random, lines: list[str]) -> list[str]:
    every = rng.random() < 0.5
    return [ln + "\r" if every or rng.random() < 0.3 else ln for ln in lines]


def _ansi(rng: random.Random, lines: list[str]) -> list[str]:
    for _ in range(rng.randint(1, 8)):
        if lines:
            i = rng.randrange(len(lines))
            ln = lines[i]
            at = rng.randint(0, len(ln))
            lines[i] = ln[:at] + rng.choice(ANSI) + ln[at:]
    return lines


def _escape(ln: str) -> str:
    return ln.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*")


def _mark(rng: random.Random, lines: list[str]) -> list[str]:
    """A document quoting the output: lines in ``:mark:`` roles, some wrapped over two source
    lines, escapes for the characters the markup uses, blank lines between."""
    out: list[str] = []
    everything = rng.random() < 0.5
    for ln in lines:
        if "`" in ln or not (everything or rng.random() < 0.2):
            out.append(ln)
            continue
        body = _escape(ln)
        if rng.random() < 0.2 and " " in body.strip():
            cut = body.rfind(" ", 0, len(body) // 2 + 1)
            cut = cut if cut > 0 else body.find(" ", 1)
            if cut > 0:
                out += [f":mark:`{body[:cut]}", f"   {body[cut + 1:]}`"]
                continue
        out.append(f":mark:`{body}`")
        if everything and rng.random() < 0.3:
            out.append("")
    return out


def _truncate(rng: random.Random, lines: list[str]) -> list[str]:
    if not lines:
        return lines
    i = rng.randrange(len(lines))
    return lines[:i] + [lines[i][:rng.randint(0, len(lines[i]))]]


MUTATIONS = [_delete, _duplicate, _insert_from(INFO_LINES), _insert_from(ERROR_LINES), _insert_from(OTHER_LINES),
             _blank, _prefix, _pdsh, _crlf, _ansi, _mark, _truncate]


def mutated(rng: random.Random, logs: list[tuple[str, str]]) -> tuple[str, str]:
    """A mutated log and the file name it is read under."""
    picked = [rng.choice(logs) for _ in range(rng.choice([1, 1, 2, 3, 4]))]
    lines = [ln for _, text in picked for ln in text.split("\n")[:-1 if text.endswith("\n") else None]]
    # CR line ends and a cut line last: a CR inside a line (a role's closing backtick after
    # it, a colour code) is a terminal's overwrite, another subject
    for mutate in sorted(rng.sample(MUTATIONS, rng.randint(1, 4)), key=lambda m: m in (_crlf, _truncate)):
        lines = mutate(rng, lines)
    text = "\n".join(lines)
    if rng.random() < 0.9:
        text += "\n"
    name = rng.choice([*NAMES, picked[0][0]])
    return text, name


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


def run_cases(seed: int, cases: int, processes_every: int = 1) -> list[tuple[int, str, str, str]]:
    """(case, name, text, why) of each mutated case whose paths diverge."""
    logs = _logs()
    rng = random.Random(seed)
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in range(cases):
            text, name = mutated(rng, logs)
            why = divergence(text, name, random.Random(case), tmp, processes=case % processes_every == 0)
            if why is not None:
                found.append((case, name, text, why))
    return found


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


def test_every_path_agrees_on_mutated_logs():
    found = run_cases(seed=20251126, cases=300, processes_every=3)
    assert not found, "\n\n".join(f"case {c} ({n}): {why}" for c, n, _t, why in found[:3])


def test_the_runs_before_a_refused_one_come_first(tmp_path):
    # a run that cannot be stored (rows of several runs interleaved) ends the import; the runs
    # finished before it are given first on every path (feed_text dropped those of its block)
    text = "".join(ln + "\n" for ln in [*HEADER, *_rows(), *FOOTER, *HEADER, *_rows(), *_rows(), *HEADER])
    want = _outcome(by_lines(text, "all_reduce.log"))
    assert len(want[0]) == 1 and want[1] is not None and "interleaved" in want[1][1]
    assert _outcome(by_blocks(text, "all_reduce.log", [])) == want
    assert _outcome(by_processes(text, "all_reduce.log", 256, str(tmp_path))) == want


@pytest.mark.parametrize("first", [
    BOM + HEADER[0],                          # the second log saved with a byte order mark
    BOM * 2 + HEADER[0],
    f"{BOM}\x1b[32m{HEADER[0]}\x1b[0m",       # before a colour code
    f"\x1b[32m{BOM}{HEADER[0]}",               # after one: the line as a terminal shows it
    f"  37% |###   | 12/32\r{BOM}{HEADER[0]}",  # after progress written over
    f"{BOM}{HEADER[0]}\r",                    # a CRLF line end
], ids=["bom", "two", "before-colour", "after-colour", "after-progress", "crlf"])
def test_a_bom_starting_a_line_in_the_middle(tmp_path, first):
    # two logs concatenated, the second with a byte order mark: it stayed part of that line and
    # hid the second log's '# nThread' header, so its rows ran on into the first run
    log = [*HEADER, *_rows(), *FOOTER]
    want = _agreed(log + log, tmp_path)
    assert len(want) == 2
    assert _agreed([*log, first, *log[1:]], tmp_path) == want


@pytest.mark.parametrize("before", [":mark:`# Collective test concluded: all_reduce_perf`",
                                    "[1,0]<stdout>:# Collective test concluded: all_reduce_perf",
                                    "node1: all_reduce_perf: Test NCCL failure common.cu:1005 'unhandled cuda error'"])
def test_processes_cut_only_before_a_command_line(tmp_path, before):
    # a line naming x_perf just before a header was taken for the next run's command line and
    # the file cut before it: the run it ends (its op, its failure) lost it
    lines = [*HEADER, *_rows(), *FOOTER, before, *HEADER, *_rows(), *FOOTER]
    runs = _agreed(lines, tmp_path, name="all_reduce.log")
    assert [dict(r)["meta"]["op"] for r in runs] == ["all_reduce", "all_reduce"]
    assert [dict(r)["meta"]["op_from"][0] for r in runs] == ["printed name" if "Collective" in before
                                                             else "file name", "file name"]
    assert [dict(r)["status"] for r in runs] == ["failed" if "failure" in before else "complete", "complete"]
    part = nccl_parallel.parts(str(tmp_path / "log.txt"), (tmp_path / "log.txt").stat().st_size, 256)
    assert [p.next_kind for p in part] == ["header", ""]
