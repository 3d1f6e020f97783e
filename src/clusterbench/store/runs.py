"""What commands do with stored runs, each in one function that opens the database, does it
and closes it again: read the runs selectors pick (with their measurements), list, delete,
tag, save. Commands that only read open the database to read (``Store.open_to_read``: a missing
file is an error, a read-only one is read); a command that writes opens it to write."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from clusterbench.errors import CommittedWhenInterrupted
from clusterbench.records import Measurement, Run
from clusterbench.store import Store
from clusterbench.store.packs import Keep

Db = str | os.PathLike[str] | None
Loaded = list[tuple[Run, list[Measurement]]]


def loaded(store: Store, selectors: Iterable[str], since: str | None = None, keep: Keep | None = None,
           shared: bool = False) -> Loaded:
    """Resolve selectors (``clusterbench.store.selectors``: ids, ranges, ``last~N``, tags,
    ``bench:NAME``) to runs with their measurements, each run once, in id order; ``since``: a
    UTC timestamp. A selector matching nothing raises UsageError. ``keep`` and ``shared``: as
    ``Store.measurements_by_run`` (only the records a judgement reads; params dicts shared)."""
    return with_measurements(store, store.select_all(selectors, since), keep, shared)


def with_measurements(store: Store, runs: list[Run], keep: Keep | None = None, shared: bool = False) -> Loaded:
    """``runs``, each with its measurements (``Store.measurements_by_run``: not a query per run)."""
    found = store.measurements_by_run([int(r.id or 0) for r in runs], keep, shared)
    return [(r, found[int(r.id or 0)]) for r in runs]


def read_runs(db: Db, selectors: Iterable[str], since: str | None = None, shared: bool = False) -> Loaded:
    """``loaded`` from the database ``db`` names, opened to read."""
    with Store.open_to_read(db) as store:
        return loaded(store, selectors, since, shared=shared)


def select_runs(db: Db, selectors: Iterable[str], since: str | None = None) -> list[Run]:
    """The runs selectors pick, without their measurements."""
    with Store.open_to_read(db) as store:
        return store.select_all(selectors, since)


@dataclass(frozen=True)
class Listed:
    """A run as ``results list`` shows it: with its count of measurements and what it measured."""

    run: Run
    measurements: int
    benchmarks: list[str]


def list_runs(db: Db, limit: int | None = None, benchmark: str | None = None,
              since: str | None = None) -> list[Listed]:
    """Runs, newest first (``Store.list_runs``), each with its measurement count and benchmarks,
    read in bulk (not a query per run)."""
    with Store.open_to_read(db) as store:
        runs = store.list_runs(limit=limit, benchmark=benchmark, since=since)
        ids = [int(r.id or 0) for r in runs]
        counts = store.measurement_counts(ids)
        measured = store.run_benchmarks(ids)
    return [Listed(r, counts.get(int(r.id or 0), 0), measured.get(int(r.id or 0), [])) for r in runs]


def iter_listed(db: Db, limit: int | None = None, benchmark: str | None = None,
                since: str | None = None) -> Iterator[Listed]:
    """``list_runs``, each run as it is read: a chunk of runs at a time, with their counts and
    benchmarks; memory is one chunk, however many runs are listed. The database is opened and
    the filter checked before the first run is asked for (an error comes before any output)."""
    store = Store.open_to_read(db)
    try:
        chunks = store.iter_list_runs(limit=limit, benchmark=benchmark, since=since)
    except BaseException:
        store.close()
        raise
    return _listed(store, chunks)


def _listed(store: Store, chunks: Iterator[list[Run]]) -> Iterator[Listed]:
    with store:
        for runs in chunks:
            ids = [int(r.id or 0) for r in runs]
            counts = store.measurement_counts(ids)
            measured = store.run_benchmarks(ids)
            for r in runs:
                yield Listed(r, counts.get(int(r.id or 0), 0), measured.get(int(r.id or 0), []))


def iter_read_runs(db: Db, selectors: Iterable[str], since: str | None = None,
                   chunk: int = 200) -> Iterator[tuple[Run, list[Measurement]]]:
    """``read_runs``, each run with its measurements as it is read, in id order, ``chunk`` runs at
    a time. A selector that picks nothing raises UsageError here, before any run is given."""
    store = Store.open_to_read(db)
    try:
        ids = store.select_ids(selectors, since)
    except BaseException:
        store.close()
        raise
    return _read(store, ids, chunk)


def _read(store: Store, ids: list[int], chunk: int) -> Iterator[tuple[Run, list[Measurement]]]:
    with store:
        for i in range(0, len(ids), chunk):
            part = ids[i:i + chunk]
            runs = store.runs_by_ids(part)
            found = store.measurements_by_run(part)
            for run in runs:
                yield run, found[int(run.id or 0)]


def delete_runs(db: Db, selectors: Iterable[str], since: str | None = None) -> list[int]:
    """Delete every run the selectors pick (all of them, or none); their ids. A missing SQLite
    file is an error: a mistyped --db is no new, empty database."""
    with _changing(db) as (store, run_ids):
        run_ids += store.select_ids(selectors, since)
        store.delete_runs(run_ids)
    return run_ids


def tag_runs(db: Db, selectors: Iterable[str], tags: dict[str, str], since: str | None = None) -> list[int]:
    """Add or change ``tags`` on every run the selectors pick (all of them, or none); their ids."""
    with _changing(db) as (store, run_ids):
        run_ids += store.select_ids(selectors, since)
        store.tag_runs(run_ids, tags)
    return run_ids


@contextmanager
def _changing(db: Db) -> Iterator[tuple[Store, list[int]]]:
    """The store opened to change existing runs (the block fills in their ids), closed at the
    end. A stop signal that comes once the change has committed (as the commit ran, or while
    the store closed) is raised as ``CommittedWhenInterrupted`` naming those runs: the command
    then says what the database holds instead of "interrupted" alone."""
    store = Store.open(db, create=False)
    commits = store.db.commits
    run_ids: list[int] = []
    try:
        try:
            yield store, run_ids
        finally:
            store.close()
    except KeyboardInterrupt as e:
        if store.db.commits == commits:
            raise
        told = e if isinstance(e, CommittedWhenInterrupted) else CommittedWhenInterrupted(e)
        told.done = list(run_ids)
        raise told from None


def check_writable(db: Db) -> None:
    """Open the database to write (creating and migrating it), write a transaction that changes
    nothing (``Store.check_writable``) and close it again: a database this version cannot write,
    or that cannot take a write now (immutable, a full disk), fails before a command starts work
    that would be stored there."""
    with Store.open(db) as store:
        store.check_writable()


def save_run(db: Db, run: Run, measurements: Iterable[Measurement]) -> int:
    """Store one run with its measurements; its id."""
    with Store.open(db) as store:
        return store.save_run(run, measurements)


def runs_tagged(db: Db, tags: dict[str, str]) -> list[Run]:
    """The runs carrying every given tag, in id order."""
    with Store.open(db) as store:
        return store.runs_with_tags(tags)
