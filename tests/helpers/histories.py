"""Nightly histories for the trend and change-point tests: real logs stored night after night, and
clean steps."""

from __future__ import annotations

from fleet_helpers import night

from clusterbench.records import Measurement, Run
from clusterbench.store import Store

HOSTS = ["gpu01", "gpu02", "gpu03", "gpu04"]


A3MEGA = "nccl-tests/a3mega-h100-2node-all_reduce.txt"


def _busbw_step(host: str, at: int, factor: float):
    def f(h, i, m):
        return factor if h == host and i >= at and m.metric == "busbw" else 1.0
    return f


def _history(db: str, values: list[float | list[float]], metric: str = "bandwidth", unit: str = "GB/s",
             benchmark: str = "stream", params: dict | None = None) -> list[int]:
    """One run per night on host h1 (stream Triad by default), with these values (a list: one
    per GPU)."""
    ids = []
    with Store.open(db) as store:
        for i, v in enumerate(values):
            per_gpu = v if isinstance(v, list) else [v]
            ms = [Measurement(benchmark, metric, x, unit, {**(params or {"kernel": "Triad"}), "device": str(d)})
                  for d, x in enumerate(per_gpu)]
            ids.append(store.save_run(Run("stream", hosts=["h1"], started_at=night(i)), ms))
    return ids


def _step(n: int, at: int, before: float = 100.0, after: float = 80.0) -> list[float]:
    """A clean step with a little spread on each side (no ties)."""
    return [(before if i < at else after) + 0.01 * (i % 5) for i in range(n)]


BABEL = "babelstream/seed-mi300x-hip-8gpu-mpi.txt"
