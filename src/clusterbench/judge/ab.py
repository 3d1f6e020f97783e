"""``compare``'s A/B of two selections of stored runs: both read from the database in one go,
row by row (``judge.compare``), with the counts per verdict and the rows only one side has."""

from __future__ import annotations

import os
from dataclasses import dataclass

from clusterbench.errors import UsageError
from clusterbench.judge.compare import (
    BETTER,
    INSUFFICIENT,
    NOISY,
    SAME,
    WORSE,
    Comparison,
    GroupKeys,
    compare,
    family_size,
    group_rows,
)
from clusterbench.judge.select import Row, interrupted_note, rows_of
from clusterbench.store import Store
from clusterbench.store.runs import loaded

VERDICTS = (WORSE, BETTER, SAME, NOISY, INSUFFICIENT)


@dataclass
class AB:
    rows: list[Comparison]   # every row compared, whatever its verdict
    runs_a: list[int]
    runs_b: list[int]
    family: int              # the rows the p-values were adjusted over
    only_in_a: int           # rows that only one side has: not compared
    only_in_b: int
    partial: str | None      # the note interrupted runs need

    def counts(self) -> dict[str, int]:
        return {s: sum(c.status == s for c in self.rows) for s in VERDICTS}

    def changes(self) -> list[Comparison]:
        """The rows judged better or worse."""
        return [c for c in self.rows if c.status in (BETTER, WORSE)]


def compare_selections(db: str | os.PathLike[str] | None, selector_a: str, selector_b: str,
                       since: str | None = None, benchmark: str | None = None, metric: str | None = None,
                       *, alpha: float, min_effect: float, max_cv: float, adjust_by: str) -> AB:
    """Compare the runs ``selector_a`` picks with those ``selector_b`` picks, only rows of
    ``benchmark`` and ``metric`` where given; ``min_effect`` and ``max_cv`` as fractions. The
    selections must not share a run (UsageError)."""
    with Store.open_to_read(db) as store:
        # read-only records: one params dict per parameter set, and group keys made once for it
        runs_a, runs_b = loaded(store, [selector_a], since, shared=True), loaded(store, [selector_b], since, shared=True)
    a, b = rows_of(runs_a), rows_of(runs_b)
    partial = interrupted_note(r for r, _ in runs_a + runs_b)
    ids_a, ids_b = {r.run.id for r in a}, {r.run.id for r in b}
    if ids_a & ids_b:
        raise UsageError(f"selectors {selector_a!r} and {selector_b!r} share runs; compare disjoint groups")

    def keep(rows: list[Row]) -> list[Row]:
        return [r for r in rows if (not benchmark or r.m.benchmark == benchmark)
                and (not metric or r.m.metric == metric)]

    a, b = keep(a), keep(b)
    key_of = GroupKeys()   # each params dict's key made once, for compare and the counts below
    rows = compare(a, b, alpha=alpha, min_effect=min_effect, max_cv=max_cv, adjust_by=adjust_by, key_of=key_of)
    ka, kb = set(group_rows(a, key_of)), set(group_rows(b, key_of))
    return AB(rows=rows, runs_a=sorted(ids_a), runs_b=sorted(ids_b), family=family_size(rows),
              only_in_a=len(ka - kb), only_in_b=len(kb - ka), partial=partial)
