"""Shared by the importer tests: real logs parsed, one record picked."""

from __future__ import annotations

import io
import json
from pathlib import Path

from paths import DATA

from clusterbench.ingest import parse_text


def runs(tool, name):
    return parse_text((DATA / tool / name).read_text(), name=name)


def pick(ms, metric, **params):
    found = [m for m in ms if m.metric == metric and all(m.params.get(k) == v for k, v in params.items())]
    assert len(found) == 1, (metric, params, found)
    return found[0]


SEED = DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"


def table_rows(text_run):
    rows = {}
    for m in text_run.measurements:
        if m.metric in ("time_us", "algbw", "busbw", "wrong"):
            key = (m.params["bytes"], m.params["count"])
            rows.setdefault(key, {}).setdefault(m.params["placement"], {})[m.metric] = m.value
    return rows


def nccl_json(text_run, *, finished=True) -> str:
    """The layout of nccl-tests' -J writer (JSON_FILE_VERSION 2): root is a padded string,
    okay flags are the strings "true"/"false", doubles are printed with %lf."""
    run = text_run.run
    devices = ",".join(
        f'{{"rank":{i},"group":0,"pid":806883,"hostname":"{run.meta["rank_hosts"][i]}","device":{i},'
        f'"device_hex":"{run.meta["rank_bus_id"][i]}","device_info":"{run.devices[i]}"}}' for i in range(run.ranks))
    results = []
    for (size, count), places in table_rows(text_run).items():
        blocks = ",".join(f'"{key}":{{"time":{p["time_us"]:f},"alg_bw":{p["algbw"]:f},"bus_bw":{p["busbw"]:f},'
                          f'"nwrong":{p["wrong"]:f}}}' for key, p in (("out_of_place", places["out"]),
                                                                          ("in_place", places["in"])))
        results.append(f'{{"size":{size},"count":{count},"type":"float","redop":"sum","root":"    -1",{blocks},'
                       f'"actual_iterations":20,"experiment_name":"all_reduce"}}')
    head = (f'{{"version":2,"start_time":"2025-01-01 00:00:00","args":["./build/all_reduce_perf","-b","8","-e","8G",'
            f'"-f","2","-g","8","-J","out.json"],"env":["PATH=\\/usr\\/bin"],"nccl_version":22005,'
            f'"config":{{"nthreads":1,"ngpus":8,"minimum_bytes":8,"maximum_bytes":8589934592,"step_factor":2,'
            f'"devices":[{devices}]}},"results":[')
    if not finished:  # the writer died after some rows: nothing is closed
        return head + ",".join(results[:10]) + ","
    return (head + ",".join(results) + '],"out_of_bounds":{"count":0,"okay":"true"},'
            '"average_bus_bandwidth":{"bandwidth":102.138000,"okay":"unchecked"},"errors":[],'
            '"end_time":"2025-01-01 00:01:00"}')


WOHLBIER = DATA / "nccl-tests" / "wohlbier-dgx2-v100-5-collectives-old-error-column-running-lines.txt"


A3MEGA = DATA / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"


TITANXP = DATA / "babelstream" / "repo-results-v3.3-titanxp-cuda.txt"


IPERF3 = DATA / "iperf3" / "cloudpilot-bw_proxy_target_direct-10s-omit3.json"


def _iperf3(tmp_path: Path, change) -> Path:
    """The real iperf3 -J document, changed by ``change`` (in place), written to a file."""
    doc = json.loads(IPERF3.read_text())
    change(doc)
    path = tmp_path / "iperf3.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def damaged(tmp_path: Path, source: Path, old: str, new: str, name: str = "damaged.txt") -> Path:
    text = source.read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return path


# -- clusterbench JSON lines -----------------------------------------------------------------
RUN = {"kind": "run", "id": 3, "benchmark": "coll", "source": "clusterbench 0.1.0", "command": ["clusterbench"],
       "started_at": "2026-11-23T18:13:34.099Z", "ended_at": "2026-11-23T18:13:40.000Z", "status": "complete",
       "hosts": ["gpu01"], "ranks": 2, "devices": ["H100"], "versions": {}, "env": {}, "tags": {}, "errors": [],
       "meta": {}}


MEASUREMENT = {"kind": "measurement", "run": 3, "benchmark": "all_reduce", "metric": "busbw", "value": 41.5,
               "unit": "GB/s", "params": {"bytes": 8}}


def _jsonl(tmp_path: Path, measurement: str, run: str | None = None) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_text(f"{measurement}\n{run or json.dumps(RUN)}\n")
    return path


def _with(obj: dict, key: str, raw: str) -> str:
    """``obj`` as a JSON line with ``key``'s value written as ``raw`` JSON text."""
    return json.dumps({**obj, key: "@"}).replace('"@"', raw)


# -- nccl-tests: values that are not finite --------------------------------------------------
def _a3mega_row(tmp_path: Path, new: str) -> Path:
    old = "     1048576        262144     float     sum      -1    203.2    5.16    9.68      0"
    return damaged(tmp_path, A3MEGA, old, old[:-23] + new)


def load(tool, name, **kw):
    runs = parse_text((DATA / tool / name).read_text(), name=name, **kw)
    assert len(runs) == 1
    return runs[0]


class _Newlines(io.StringIO):
    """A text file opened with newline="": readline also stops at a lone CR."""

    def __init__(self, text: str) -> None:
        super().__init__(text, newline="")


# Logs that must be refused, each with why (tested below)
REFUSED = {"issue294-h100-non-mpi-build-under-mpirun-interleaved-duplicate-rows.txt": "interleaved"}


GH200 = "issue369-v2.17.8-gh200-wrong-nonzero-oob-failed.txt"   # nccl-tests 2.17.8, 2 ranks


def is_row(line: str) -> bool:
    return line[:1] == " " and line.split()[0].isdecimal()


def lines_import_nccl(name: str) -> list[str]:
    """The lines of a real nccl-tests log (tests/data/nccl-tests)."""
    return (DATA / "nccl-tests" / name).read_text().splitlines()


def with_cycles(name: str, cycles: int) -> str:
    """nccl-tests -N <cycles> (TimeTest's do/while since 2024-07): the rows printed again right
    after the last one; the footer's average is the mean of all of them (the same here)."""
    out, rows = [], []
    for ln in lines_import_nccl(name):
        if is_row(ln):
            rows.append(ln)
            continue
        if rows:
            out += rows * cycles
            rows = []
        out.append(ln)
    return "\n".join(out + rows * cycles) + "\n"
