"""Histories built from real logs (tests/data) for the fleet tests: the same measurements night
after night on several hosts, with run-to-run noise and, where a test asks, a step."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from clusterbench.ingest import parse_text
from clusterbench.records import Measurement, Run
from clusterbench.store import Store

DATA = Path(__file__).resolve().parent.parent / "data"
START = datetime(2025, 3, 1, 3, 0, tzinfo=timezone.utc)


def real_measurements(relpath: str) -> list[Measurement]:
    """Every measurement of the first run of a real log."""
    runs = parse_text((DATA / relpath).read_text(), name=relpath)
    return list(runs[0].measurements)


def night(i: int) -> str:
    return (START + timedelta(days=i)).isoformat().replace("+00:00", "Z")


def store_history(db: str, base: list[Measurement], hosts: list[str], nights: int, *, cv: float = 0.015,
                  seed: int = 0, factor: Callable[[str, int, Measurement], float] | None = None,
                  benchmark: str = "import") -> dict[tuple[str, int], int]:
    """One run per host per night: ``base`` with each value times (1 + N(0, cv)) times
    ``factor(host, night, measurement)``. Returns the run id of each (host, night)."""
    rng = random.Random(seed)
    ids = {}
    with Store.open(db) as store:
        for i in range(nights):
            for h in hosts:
                ms = []
                for m in base:
                    f = (1 + rng.gauss(0, cv)) * (factor(h, i, m) if factor else 1.0)
                    ms.append(Measurement(m.benchmark, m.metric, m.value * f, m.unit, dict(m.params)))
                run = Run(benchmark, hosts=[h], started_at=night(i), tags={"node": h, "fleet": "test"})
                ids[(h, i)] = store.save_run(run, ms)
    return ids
