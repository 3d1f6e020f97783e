"""A small fleet's nightly runs for the judgement tests that read many runs: several hosts, each
run 2 GPUs' stream and GEMM rows and a collective sweep (with its #wrong count and spread
records), one host on other GPUs, one night's run of a host failed. ``nights`` x ``hosts`` runs,
night by night: the runs of night ``n`` are ids ``n * hosts + 1`` .. ``(n + 1) * hosts``."""

from __future__ import annotations

import random

from clusterbench.records import FAILED, Measurement, Run
from clusterbench.store import Store

HOSTS = ("gpu01", "gpu02", "gpu03", "gpu04")


def _records(rng: random.Random, host: str, slow: float) -> list[Measurement]:
    ms = []
    for size in (1 << 16, 1 << 20, 1 << 26):
        for placement in ("out", "in"):
            busbw = 300 * size / (size + (1 << 20)) * (1 + rng.gauss(0, 0.01)) * slow
            params = {"bytes": size, "count": size // 4, "dtype": "float", "redop": "sum", "root": -1,
                      "placement": placement, "ranks": 2, "host": host}
            ms += [Measurement("all_reduce", "busbw", round(busbw, 2), "GB/s", params),
                   Measurement("all_reduce", "algbw", round(busbw / 1.0, 2), "GB/s", params),
                   Measurement("all_reduce", "time_us", round(size / busbw / 1e3, 1), "us", params),
                   Measurement("all_reduce", "wrong", 0, "", params)]
    for device in ("0", "1"):
        for kernel in ("Copy", "Triad"):
            base = {"kernel": kernel, "array_size": 1 << 25, "dtype": "double", "device": device, "host": host}
            bw = 3000 * (1 + rng.gauss(0, 0.01))
            ms.append(Measurement("stream", "bandwidth", round(bw, 2), "GB/s", base))
            ms += [Measurement("stream", "time_us", round(1e5 / bw * f, 2), "us", {**base, "stat": stat})
                   for stat, f in (("min", 1.0), ("max", 1.05), ("avg", 1.01))]
        ms.append(Measurement("gemm", "tflops", round(700 * (1 + rng.gauss(0, 0.01)), 1), "TFLOP/s",
                              {"m": 4096, "n": 4096, "k": 4096, "dtype": "bf16", "device": int(device), "host": host}))
    return ms


def save_fleet(db: str, nights: int = 3, hosts: tuple[str, ...] = HOSTS, seed: int = 5) -> None:
    """Store the fleet's runs in ``db``: the last host on A100s, the second host's first night
    failed, and the third host 20% slower in its collectives from the second night on."""
    rng = random.Random(seed)
    with Store.open(db) as store:
        for night in range(nights):
            for h, host in enumerate(hosts):
                gpu = "NVIDIA A100-SXM4-80GB" if h == len(hosts) - 1 else "NVIDIA H100 80GB HBM3"
                run = Run("run", hosts=[host], ranks=2, devices=[gpu, gpu],
                          started_at=f"2026-01-{night + 1:02d}T03:00:{h:02d}.000Z",
                          status=FAILED if (night, h) == (0, 1) else "complete",
                          tags={"night": str(night), "node": host}, meta={"device_type": "cuda"})
                store.save_run(run, _records(rng, host, 0.8 if h == 2 and night >= 1 else 1.0))
