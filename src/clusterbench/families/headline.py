"""A run's headline series: which of its records ``trend`` follows and ``export openmetrics``
exports by default (each family's ``HeadlineRows``), chosen once per run as it is stored."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from clusterbench.families import family_of
from clusterbench.families.base import HeadlineRows

# benchmark, metric, value, unit, params
Record = tuple[str, str, float, str, dict[str, Any]]


@functools.lru_cache(maxsize=4096)   # the family table is fixed; asked once per stored record
def headline_metric(benchmark: str) -> str | None:
    """The metric a benchmark's family is judged by (busbw, bandwidth, tflops, ...), or None."""
    family = family_of(benchmark)
    return family.headline.name if family is not None and family.headline is not None else None


def _plain(value: object) -> bool:
    return isinstance(value, (str, int, float, bool))


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _chosen(rule: HeadlineRows, records: list[Record]) -> list[Record]:
    found = records
    if rule.without:
        without = frozenset(rule.without)
        found = [r for r in found if without.isdisjoint(r[4])]
    for param, allowed in rule.only:
        found = [r for r in found if param not in r[4] or r[4][param] in allowed]
    for param, preferred in rule.prefer:
        present = {v for r in found if _plain(v := r[4].get(param))}
        first = next((v for v in preferred if v in present), None)
        if first is not None:
            found = [r for r in found if r[4].get(param, first) == first]
    for param in rule.largest:
        sizes = [r[4][param] for r in found if _number(r[4].get(param))]
        if sizes:
            top = max(sizes)
            found = [r for r in found if not _number(r[4].get(param)) or r[4][param] == top]
    return found


def headline_records(records: Iterable[Record]) -> list[Record]:
    """The records of one run that are headline series, in their order."""
    by_benchmark: dict[str, list[Record]] = {}
    for r in records:
        if r[1] == headline_metric(r[0]):
            by_benchmark.setdefault(r[0], []).append(r)
    keep: set[int] = set()
    for benchmark, found in by_benchmark.items():
        family = family_of(benchmark)
        assert family is not None   # it has a headline metric
        keep.update(id(r) for r in _chosen(family.headline_rows, found))
    return [r for found in by_benchmark.values() for r in found if id(r) in keep]
