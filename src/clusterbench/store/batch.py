"""How a run's rows are written: in bulk with the other runs of one transaction (``Batch``), or
at once (``Batch.write_rows``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from clusterbench.records import TelemetrySample
from clusterbench.store.backend import Backend
from clusterbench.store.headlines import HEADLINE_COLS, RunHeadlines, SeriesIds, headline_rows
from clusterbench.store.nul import refuse_nul_in_pack
from clusterbench.store.packs import Pack, benchmarks_of, storable
from clusterbench.store.run_columns import RUN_WRITE_COLS


class Batch:
    """The runs of one transaction, written in bulk (``Backend.insert_rows``: executemany, COPY)
    every ``FLUSH_BYTES`` of measurement packs and at its end. Run ids are taken when a run is
    added (``Backend.next_ids``), so a caller knows a run's id at once."""

    FLUSH_BYTES = 8 << 20
    IDS = 1024   # at most this many ids taken at once; fewer at first (PostgreSQL never gives back)

    def __init__(self, db: Backend) -> None:
        self.db = db
        self.ids: list[int] = []
        self.runs: list[tuple[Any, ...]] = []
        self.tags: list[tuple[Any, ...]] = []
        self.packs: list[tuple[Any, ...]] = []
        self.measured: list[tuple[Any, ...]] = []
        self.samples: list[tuple[Any, ...]] = []
        self.headlines: list[tuple[Any, ...]] = []
        self.series = SeriesIds(db)
        self.size = 0
        self.taken = 0

    def add(self, values: tuple[Any, ...], tags: dict[str, str], packs: Iterable[Pack],
            telemetry: Iterable[TelemetrySample], found: RunHeadlines) -> int:
        if not self.ids:   # 1, 2, 4 ... ids: a small import leaves no gap in the ids
            n = min(self.IDS, max(1, self.taken))
            self.ids = self.db.next_ids("runs", n)[::-1]
            self.taken += n
        run_id = self.ids.pop()
        # the packs first: one that is refused leaves nothing of its run in the batch
        stored: list[tuple[Any, ...]] = []
        benchmarks: set[str] = set()
        for p in packs:
            if p.count:
                measured = benchmarks_of(p)
                refuse_nul_in_pack(p, measured)
                found.pack(p)
                p = storable(p)
                stored.append((run_id, p.format, p.count, p.body))
                benchmarks.update(measured)
        headlines = headline_rows(self.series, run_id, found.run, found)
        self.runs.append((run_id, *values))
        self.tags += [(run_id, k, str(v)) for k, v in tags.items()]
        self.packs += stored
        self.size += sum(len(p[3]) for p in stored)
        self.measured += [(run_id, b) for b in sorted(benchmarks)]
        self.samples += [(run_id, s.t, s.host, s.device, s.metric, s.value, s.unit) for s in telemetry]
        self.headlines += headlines
        if self.size >= self.FLUSH_BYTES:
            self.flush()
        return run_id

    def flush(self) -> None:
        db = self.db
        if self.runs:
            db.insert_rows("runs", ("id", *RUN_WRITE_COLS), self.runs)
        if self.tags:
            db.insert_rows("run_tags", ("run_id", "key", "value"), self.tags)
        if self.packs:
            db.insert_rows("measurement_packs", ("run_id", "format", "count", "body"), self.packs)
        if self.measured:
            db.insert_rows("run_benchmarks", ("run_id", "benchmark"), self.measured)
        if self.samples:
            db.insert_rows("telemetry", ("run_id", "t", "host", "device", "metric", "value", "unit"), self.samples)
        if self.headlines:
            db.insert_rows("headlines", HEADLINE_COLS, self.headlines)
        self.runs, self.tags, self.packs, self.measured, self.samples, self.headlines = [], [], [], [], [], []
        self.size = 0

    @staticmethod
    def write_rows(db: Backend, run_id: int, tags: dict[str, str], packs: Iterable[Pack],
                   telemetry: Iterable[TelemetrySample], found: RunHeadlines) -> None:
        """A run's other rows, written at once (outside a batch)."""
        if tags:
            db.insert_rows("run_tags", ("run_id", "key", "value"), [(run_id, k, str(v)) for k, v in tags.items()])
        stored = []
        for p in packs:
            if p.count:
                refuse_nul_in_pack(p, benchmarks_of(p))
                found.pack(p)
                stored.append(storable(p))
        db.insert_rows("measurement_packs", ("run_id", "format", "count", "body"),
                       [(run_id, p.format, p.count, p.body) for p in stored])
        # what the run measured, for selectors and ``results list`` without reading the packs
        db.insert_rows("run_benchmarks", ("run_id", "benchmark"),
                       [(run_id, b) for b in sorted({b for p in stored for b in benchmarks_of(p)})])
        samples = [(run_id, s.t, s.host, s.device, s.metric, s.value, s.unit) for s in telemetry]
        if samples:
            db.insert_rows("telemetry", ("run_id", "t", "host", "device", "metric", "value", "unit"), samples)
        headlines = headline_rows(SeriesIds(db), run_id, found.run, found)
        if headlines:
            db.insert_rows("headlines", HEADLINE_COLS, headlines)
