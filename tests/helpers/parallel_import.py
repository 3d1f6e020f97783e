"""A nccl-tests log cut into parts and parsed by worker processes, for the tests of parallel
import."""

from __future__ import annotations

from pathlib import Path

from clusterbench.ingest import iter_runs

LOGS = ["superbench-nccl_allreduce.log", "a3mega-h100-2node-all_reduce.txt", "seed-mi300x-rccl-all_reduce-8gpu.txt",
        "seed-tensorwave-mi355x-4node-all_reduce.txt"]


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
