"""A nccl-tests log cut into parts and parsed by worker processes, for the tests of parallel
import."""

from __future__ import annotations

from pathlib import Path

from paths import DATA

from clusterbench.ingest import iter_runs

LOGS = ["superbench-nccl_allreduce.log", "a3mega-h100-2node-all_reduce.txt", "seed-mi300x-rccl-all_reduce-8gpu.txt",
        "seed-tensorwave-mi355x-4node-all_reduce.txt"]


def _texts() -> list[str]:
    """The LOGS' texts, each ending in a newline, the superbench one headed by the command line
    that names its op."""
    out = []
    for name in LOGS:
        text = (DATA / "nccl-tests" / name).read_text()
        if name.startswith("superbench"):   # its op is named only by the file name
            text = "$ mpirun -np 8 ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1\n" + text
        out.append(text if text.endswith("\n") else text + "\n")
    return out


def _key(r):
    d = r.run.to_dict()
    d.pop("started_at")
    return d, [(p.format, p.count, p.body) for p in r.store_rows().packs]


def _runs(path: Path, jobs: int) -> list:
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        return [_key(r) for r in iter_runs(f, name="big.log", jobs=jobs, path=str(path))]


def _write(tmp_path: Path, pieces: list[str]) -> Path:
    path = tmp_path / "big.log"
    path.write_text("".join(pieces))
    return path


FAILED = "node1: Test NCCL failure common.cu:1005 'unhandled cuda error'\n"
