"""Copy runs between two stores (a laptop's SQLite file into the team's PostgreSQL, or back).

Idempotent: a run is known by its uid, so a run already in the destination is skipped, and
copying twice stores it once. Each run goes in with its tags, measurements, telemetry and, for an
imported log, the identity of its file (so the log imported there again is skipped) in one
transaction; an interrupted copy leaves whole runs only, and running it again finishes it.
Measurements move as the packs they are stored in (store/packs.py), without being decoded.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from clusterbench.errors import StoreError, UsageError
from clusterbench.store import Packs, Store
from clusterbench.store import location as loc
from clusterbench.store.packs import benchmarks_of


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


def copy_databases(source_db: str | os.PathLike[str] | None, dest_db: str | os.PathLike[str] | None,
                   on_run: Callable[[CopiedRun], None] | None = None) -> CopySummary:
    """Copy every run the database ``dest_db`` names lacks from ``source_db``, oldest first. The
    source is opened only to read it; a destination SQLite file that does not exist yet is made
    only once the first run to copy has been read whole from the source, so a copy that fails
    before it (an unreadable run, a source that is not a database) leaves no new empty database
    behind. (A source without runs still makes it: the copy succeeded, and ``--to`` is created as
    needed.)"""
    with Store.open_readonly(source_db) as source:
        where = loc.parse(dest_db)
        new_file = where.kind == loc.SQLITE and where.path is not None and not where.path.exists()
        opened = None if new_file else Store.open(dest_db)
        try:
            dest = _Dest(where.display, lambda: Store.open(dest_db), opened)
        except BaseException:
            if opened is not None:
                opened.close()
            raise
        try:
            summary = _copy(source, dest, on_run)
            dest.store()
        finally:
            dest.close()
    return summary


class _Dest:
    """The destination store, opened on first use when it is not open yet (a new SQLite file)."""

    def __init__(self, where: str, opener: Callable[[], Store], opened: Store | None) -> None:
        self.where = where
        self._open = opener
        self._store = opened
        # a new file holds no run: nothing to skip, no need to make it to ask
        self.present: dict[str, int] = opened.uids() if opened is not None else {}

    def store(self) -> Store:
        if self._store is None:
            self._store = self._open()
            self.present = self._store.uids()   # another process may have made it meanwhile
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def _checked_packs(source: Store, source_id: int) -> Packs:
    """The run's packs as stored, each with the benchmarks it holds: read and checked here, so a
    run whose measurements this clusterbench could not read back is one line naming it, and
    nothing of it is written."""
    why = f"run {source_id} of {source.where} is not copied: unreadable measurements"
    try:
        packs = source.measurement_packs(source_id)
    except (ValueError, TypeError):   # SQLite keeps any type in any column: a count that is a word
        raise StoreError(f"{why}: a pack's record count is not a number") from None
    try:
        return Packs([p._replace(benchmarks=benchmarks_of(p)) for p in packs.packs])
    except ValueError as e:
        raise StoreError(f"{why}: {e}") from None


def _copy(source: Store, dest: _Dest, on_run: Callable[[CopiedRun], None] | None) -> CopySummary:
    summary = CopySummary(source.where, dest.where)
    runs = source.list_runs(oldest_first=True)
    # uids after the runs: a run stored in the source meanwhile is left for the next copy,
    # and every run listed has its uid here (unless deleted meanwhile: then it is not copied)
    uid_of = {rid: uid for uid, rid in source.uids().items()}
    not_text = source.non_text_tags()
    for run in runs:
        source_id = int(run.id or 0)
        uid = uid_of.get(source_id)
        if uid is None:
            continue
        found, copied, measurements = dest.present.get(uid), False, 0   # saves reading runs to skip
        if found is None:
            packs = _checked_packs(source, source_id)
            telemetry = source.telemetry(source_id)
            imported_from = source.imported_file_of(source_id)
            store = dest.store()   # made now, when a new file: the run to write in it reads
            found = dest.present.get(uid)
        if found is None:
            if source_id in not_text:
                # its escaped form is how it is shown, not what is stored: copied, it would change
                key, value = not_text[source_id]
                raise UsageError(f"run {source_id} of {source.where} is not copied: its tag {key!r} holds "
                                 f"{_stored(value)}, not text (put in by hand?): give it a "
                                 f"text value with clusterbench results tag {source_id} {key}=VALUE --db "
                                 f"{source.where}")
            try:
                new_id = store.add_copied_run(run, uid, packs, telemetry, imported_from)
            except UsageError as e:   # a run an older clusterbench stored (a tag with a NUL)
                raise UsageError(f"run {source_id} of {source.where} is not copied: {e}") from None
            if new_id is None:       # another copy stored it since we looked
                found = store.uids()[uid]
            else:
                found, copied, measurements = new_id, True, len(packs)
        item = CopiedRun(uid, source_id, int(found), copied, run.benchmark, measurements)
        summary.runs.append(item)
        if on_run:
            on_run(item)
    return summary


def _stored(value: object) -> str:
    """A value that is not text, as SQL writes it: bytes as ``x'ff00'``, a number as it is."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        return f"the bytes x'{data[:32].hex()}'" + ("..." if len(data) > 32 else "")
    return f"the {type(value).__name__} {value!r}"


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
