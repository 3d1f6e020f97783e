"""Copy runs between two stores (a laptop's SQLite file into the team's PostgreSQL, or back).

Idempotent: a run is known by its uid, so a run already in the destination is skipped, and
copying twice stores it once. Each run goes in with its tags, measurements and telemetry in
one transaction; an interrupted copy leaves whole runs only, and running it again finishes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from clusterbench.store import MeasurementRow, Store


@dataclass(frozen=True)
class CopiedRun:
    uid: str
    source_id: int
    dest_id: int           # the new id, or the id of the run that was there already
    copied: bool
    benchmark: str
    measurements: int      # copied (0 when skipped)


@dataclass
class CopySummary:
    source: str
    dest: str
    runs: list[CopiedRun] = field(default_factory=list)

    @property
    def copied(self) -> int:
        return sum(r.copied for r in self.runs)

    @property
    def skipped(self) -> int:
        return sum(not r.copied for r in self.runs)

    @property
    def measurements(self) -> int:
        return sum(r.measurements for r in self.runs)

    def to_dict(self) -> dict[str, object]:
        return {"from": self.source, "to": self.dest, "copied": self.copied,
                "skipped": self.skipped, "measurements": self.measurements,
                "runs": [{"uid": r.uid, "from": r.source_id, "to": r.dest_id, "copied": r.copied}
                         for r in self.runs]}


def copy_runs(source: Store, dest: Store, on_run: Callable[[CopiedRun], None] | None = None) -> CopySummary:
    """Copy every run of ``source`` that ``dest`` lacks, oldest first."""
    summary = CopySummary(source.where, dest.where)
    uid_of = {rid: uid for uid, rid in source.uids().items()}
    present = dest.uids()            # saves reading the measurements of runs to skip
    for run in source.list_runs(oldest_first=True):
        source_id = int(run.id or 0)
        uid = uid_of[source_id]
        dest_id, copied, rows = present.get(uid), False, _Counted(source.measurement_rows(source_id))
        if dest_id is None:
            new_id = dest.add_copied_run(run, uid, rows, source.telemetry(source_id))
            if new_id is None:       # another copy stored it since we looked
                dest_id = dest.uids()[uid]
            else:
                dest_id, copied = new_id, True
        item = CopiedRun(uid, source_id, dest_id, copied, run.benchmark, rows.n if copied else 0)
        summary.runs.append(item)
        if on_run:
            on_run(item)
    return summary


class _Counted:
    """Passes rows through and counts them, so a run's measurements stream from one database
    into the other without being held in memory."""

    def __init__(self, rows: Iterator[MeasurementRow]) -> None:
        self._rows = rows
        self.n = 0

    def __iter__(self) -> Iterator[MeasurementRow]:
        for row in self._rows:
            self.n += 1
            yield row
