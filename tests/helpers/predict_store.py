"""A results database for ``clusterbench predict`` tests: a 2-host fabric's collective curves
(tagged ``env=slow``, 100 Mbit/s), a faster one (``env=fast``), the nodes' gemm and stream runs
(``env=slow``), a one-rank train run, and a measured 2-rank train and ddp-comm run."""

from __future__ import annotations

from clusterbench.bench.workloads.model import PRESETS
from clusterbench.judge.workload import matmuls
from clusterbench.records import Measurement, Run
from clusterbench.store import Store

TINY = PRESETS["tiny"]
HOSTS = ["h1", "h2"]
SIZES = [1 << p for p in range(10, 25, 2)]      # 1K .. 16M
OPS = {"all_gather": "in", "reduce_scatter": "out", "all_reduce": "in"}


def _coll(op: str, per_byte: float, tags: dict[str, str]) -> tuple[Run, list[Measurement]]:
    run = Run(op, hosts=list(HOSTS), ranks=2, tags=dict(tags))
    ms = [Measurement(op, "time_us", 200.0 + s * per_byte * 1e6, "us",
                      {"bytes": s, "dtype": "float", "placement": OPS[op], "ranks": 2}) for s in SIZES]
    return run, ms


def seed_predict(db: str) -> dict[str, int]:
    """The runs above in ``db``; returns the ids of the measured train and ddp-comm runs."""
    slow = {"env": "slow", "link_speed": "100Mbps"}
    with Store.open(db) as store:
        for op in OPS:
            store.save_run(*_coll(op, 8 / 100e6, slow))          # 100 Mbit/s on the wire
            store.save_run(*_coll(op, 8 / 10e9, {"env": "fast"}))
        for host in HOSTS:
            for mm in matmuls(TINY, 1):
                params = {"m": mm.m, "n": mm.n, "k": mm.k, "dtype": "fp32", "device": "cpu", "stat": "median"}
                store.save_run(Run("gemm", hosts=[host], ranks=1, tags={"env": "slow"}),
                               [Measurement("gemm", "tflops", 0.02, "TFLOP/s", params)])
            store.save_run(Run("stream", hosts=[host], ranks=1, tags={"env": "slow"}),
                           [Measurement("stream", "bandwidth", 5.0, "GB/s", {"kernel": "Triad", "device": "cpu"})])
        meta = {"train": {"model": "tiny", "strategy": "full", "dtype": "fp32", "batch": 2,
                          "shape": TINY.to_dict(), "shard_size": 2}}
        train = store.save_run(Run("train", hosts=list(HOSTS), ranks=2, meta=meta, tags={"env": "measured"}),
                               [Measurement("train", "step_time_ms", 40.0, "ms", {"stat": "avg"}),
                                Measurement("train", "comm_share", 0.8, "", {"stat": "avg"})])
        base = {"layers": 4, "bytes": 4 << 20, "bucket_cap_mb": 1.0}
        ddp = store.save_run(Run("ddp_comm", hosts=list(HOSTS), ranks=2, tags={"env": "measured"}),
                             [Measurement("ddp_comm", "step_time_ms", 900.0, "ms", {**base, "stat": "avg"})])
    return {"train": train, "ddp": ddp}
