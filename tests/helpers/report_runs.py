"""Runs for the report tests: busbw and transfer rows, telemetry, the verdict a page shows."""

from __future__ import annotations

import random

from judge_helpers import coll_rows, save

from clusterbench.records import Measurement, Run, TelemetrySample
from clusterbench.store import Store

EVIL = "<script>alert(1)</script>node"


def _store(db: str) -> None:
    rng = random.Random(31)
    for i in range(3):
        save(db, coll_rows(1.0, rng), tags={"env": "native"}, hosts=[f"{EVIL}{i}", "node-b"],
             devices=["AMD Instinct MI300X"] * 2)
        save(db, coll_rows(0.9, rng), tags={"env": "container", "link_speed": "100Gbps"},
             hosts=["node-a", "node-b"])
    ms = [Measurement("transfer", "bandwidth", 48.0 + (i + j) % 3, "GB/s",
                      {"src": f"G{i}", "dst": f"G{j}", "test": "p2p", "direction": "uni", "stat": "pair"})
          for i in range(4) for j in range(4) if i != j]
    ms += [Measurement("stream", "bandwidth", bw * (0.7 if dev == 3 else 1.0), "GB/s",
                       {"kernel": k, "array_size": 1 << 25, "dtype": "double", "device": dev})
           for k, bw in (("Copy", 4200.0), ("Triad", 3900.0)) for dev in range(6)]
    ms += [Measurement("gemm", "tflops", t, "TFLOP/s", {"m": 4096, "n": 4096, "k": 4096, "batch": 1, "dtype": d})
           for d, t in (("fp32", 97.0), ("bf16", 650.0))]
    save(db, ms, benchmark="import", hosts=["mi300x-1"], devices=["AMD Instinct MI300X"], tags={"kind": "node"})


def _verdict_of_html(page: str) -> tuple[str, list[str]]:
    import html as htmlmod
    import re

    block = re.search(r'<div class="verdict v-[a-z]+" id="verdict"><span class="word">([A-Z]+)</span><ul>(.*?)</ul>',
                      page)
    assert block, "no verdict block"
    return block.group(1), [htmlmod.unescape(x) for x in re.findall(r"<li>(.*?)</li>", block.group(2))]


def _busbw(value: float, size: int = 8, **params: object) -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", value, "GB/s",
                        {"bytes": size, "count": size // 4, "dtype": "float", "redop": "sum", "root": -1,
                         "placement": "out", **params})]


def _report_busbw(value: float, size: int = 8, **params: object) -> list[Measurement]:
    return [Measurement("all_reduce", "busbw", value, "GB/s",
                        {"bytes": size, "count": max(1, size // 4), "dtype": "float", "redop": "sum", "root": -1,
                         "placement": "out", **params})]


def _transfer(scale: float) -> list[Measurement]:
    return [Measurement("transfer", "bandwidth", scale * (48.0 + i + j), "GB/s",
                        {"src": f"G{i}", "dst": f"G{j}", "test": "p2p", "direction": "uni", "stat": "pair"})
            for i in range(3) for j in range(3) if i != j]


def _save_with_telemetry(db: str, ms: list[Measurement], tags: dict[str, str]) -> None:
    tele = [TelemetrySample(1.7e9 + k, "gpu_power", 300.0 + k, "W", "h", "gpu0") for k in range(5)]
    with Store.open(db) as s:
        s.save_run(Run("transfer", hosts=["h"], ranks=1, tags=tags), ms, tele)
