"""System tests (import differential): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable

import pytest
from nccl_read_paths import (
    BOM,
    FOOTER,
    HEADER,
    LOGS,
    _agreed,
    _outcome,
    _rows,
    by_blocks,
    by_lines,
    by_processes,
    divergence,
)

from clusterbench.ingest import nccl_parallel

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
