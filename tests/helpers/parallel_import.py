"""A nccl-tests log cut into parts and parsed by worker processes, for the tests of parallel
import."""

from __future__ import annotations

import json
from pathlib import Path

from paths import DATA

from clusterbench.ingest import LogFormatError, iter_runs

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


# -- clusterbench JSON lines ---------------------------------------------------------------------

JSONL_RUN = {"kind": "run", "id": 1, "benchmark": "coll", "source": "clusterbench", "command": ["clusterbench"],
             "started_at": "2026-01-01T00:00:00.000Z", "ended_at": None, "status": "complete", "hosts": ["h1"],
             "ranks": 2, "devices": [], "versions": {}, "env": {}, "tags": {}, "errors": [], "meta": {}}


def jsonl_measurement(run: object, value: float, params: dict, **kw: object) -> str:
    d = {"kind": "measurement", "run": run, "benchmark": "all_reduce", "metric": "busbw", "value": value,
         "unit": "GB/s", "params": params}
    d.update(kw)
    return json.dumps(d)


def jsonl_run(run_id: object, host: str, **kw: object) -> str:
    return json.dumps({**JSONL_RUN, "id": run_id, "hosts": [host], **kw})


def jsonl_night(runs: int, per_run: int = 12, shared_id: bool = False) -> list[str]:
    """A fleet's night as clusterbench prints it: each host's measurements, then its run line."""
    lines = []
    for r in range(1, runs + 1):
        rid = 1 if shared_id else r
        host = f"gpu{r:03d}"
        lines += [jsonl_measurement(rid, float(r * 100 + s), {"bytes": 8 << s, "host": host}) for s in range(per_run)]
        lines.append(jsonl_run(rid, host))
    return lines


def jsonl_key(r) -> tuple:
    run = r.run.to_dict()
    if run["errors"]:   # a run whose run line never came starts when it is read
        run.pop("started_at")
    return run, [m.to_dict() for m in r.measurements], r.benchmarks(), len(r)


def jsonl_runs(path: Path, jobs: int) -> list:
    """The runs of ``path`` (or the LogFormatError's text) as the import reads them with ``jobs``."""
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            return [jsonl_key(r) for r in iter_runs(f, name="night.jsonl", jobs=jobs, path=str(path))]
    except LogFormatError as e:
        return [str(e)]


def write_jsonl(tmp_path: Path, lines: list[str], name: str = "night.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path
