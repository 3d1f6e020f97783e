"""Copy runs between two stores (a laptop's SQLite file into the team's PostgreSQL, or back).

Idempotent: a run is known by its uid, so a run already in the destination is skipped, and
copying twice stores it once. Each run goes in with its tags, measurements and telemetry in
one transaction; an interrupted copy leaves whole runs only, and running it again finishes it.
Measurements move as the packs they are stored in (store/packs.py), without being decoded.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from clusterbench.errors import UsageError
from clusterbench.store import Store
from clusterbench.store import location as loc


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
    runs = source.list_runs(oldest_first=True)
    # uids after the runs: a run stored in the source meanwhile is left for the next copy,
    # and every run listed has its uid here (unless deleted meanwhile: then it is not copied)
    uid_of = {rid: uid for uid, rid in source.uids().items()}
    present = dest.uids()            # saves reading the measurements of runs to skip
    for run in runs:
        source_id = int(run.id or 0)
        uid = uid_of.get(source_id)
        if uid is None:
            continue
        found, copied, measurements = present.get(uid), False, 0
        if found is None:
            packs = source.measurement_packs(source_id)
            try:
                new_id = dest.add_copied_run(run, uid, packs, source.telemetry(source_id))
            except UsageError as e:   # a run an older clusterbench stored (a tag with a NUL)
                raise UsageError(f"run {source_id} of {source.where} is not copied: {e}") from None
            if new_id is None:       # another copy stored it since we looked
                found = dest.uids()[uid]
            else:
                found, copied, measurements = new_id, True, len(packs)
        item = CopiedRun(uid, source_id, int(found), copied, run.benchmark, measurements)
        summary.runs.append(item)
        if on_run:
            on_run(item)
    return summary


def same_database(a: str | os.PathLike[str] | None, b: str | os.PathLike[str] | None) -> bool:
    """Whether two ``--db`` values name one database: the same SQLite file (through a link or
    another spelling of its path too), or the same PostgreSQL URL (its password aside). A value
    that cannot be looked at is not the same: opening it says why."""
    try:
        la, lb = loc.parse(a), loc.parse(b)
        if la.kind != lb.kind:
            return False
        if la.kind == loc.SQLITE:
            return la.path is not None and lb.path is not None and os.path.samefile(la.path, lb.path)
        return la.display == lb.display
    except (OSError, ValueError, UsageError):
        return False
