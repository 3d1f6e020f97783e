"""Synthetic runs from a seeded random generator, for the report, findings and scaling tests."""

from __future__ import annotations

import random

from clusterbench.records import Measurement, Run, TelemetrySample
from clusterbench.store import Store


def _train(rng: random.Random) -> list[Measurement]:
    return [Measurement("train", "samples_per_s", 1000 * (1 + rng.gauss(0, 0.01)), "samples/s", {"stat": "avg"})]


def _coll(rng: random.Random) -> list[Measurement]:
    ms = []
    for p in (10, 20, 24):
        for pl in ("out", "in"):
            v = 100 * (1 + rng.gauss(0, 0.02))
            params = {"bytes": 1 << p, "count": (1 << p) // 4, "dtype": "float", "redop": "sum", "root": -1,
                      "placement": pl, "ranks": 16}
            ms += [Measurement("all_reduce", "busbw", v, "GB/s", params),
                   Measurement("all_reduce", "algbw", v * 16 / 30, "GB/s", dict(params))]
    return ms


def _stream(rng: random.Random, hosts: list[str]) -> list[Measurement]:
    return [Measurement("stream", "bandwidth", 3000 * (1 + rng.gauss(0, 0.01)), "GB/s",
                        {"kernel": k, "array_size": 1 << 25, "dtype": "double", "device": d, "host": h})
            for h in hosts for d in range(2) for k in ("Copy", "Triad")]


def _fill(db: str, n: int) -> None:
    """``n`` collective runs on two hosts (half tagged grp=a, half grp=b), ``n`` stream runs with
    telemetry and ``n`` train runs: what compare, trend, report, theory and scaling read."""
    rng = random.Random(7)
    with Store.open(db) as s, s.transaction():
        for i in range(n):
            day = f"2026-01-{1 + i % 28:02d}T{i // 28:02d}:00:00Z"
            s.save_run(Run("coll", hosts=["node1", "node2"], ranks=16, started_at=day,
                           tags={"grp": "a" if i < n // 2 else "b", "link_speed": "100Gbps"}), _coll(rng))
            s.save_run(Run("stream", hosts=["node1"], ranks=2, started_at=day, tags={"kind": "stream"}),
                       _stream(rng, ["node1"]),
                       [TelemetrySample(0.5 * t, "power", 300.0 + t, "W", "node1", "0") for t in range(3)])
            s.save_run(Run("train", hosts=["node1", "node2"][: 1 + i % 2], ranks=8, started_at=day,
                           tags={"kind": "train"}), _train(rng))
