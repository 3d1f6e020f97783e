"""Picking measurements out of runs: parameter matching shared by validate, baseline and compare."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any, NamedTuple

from clusterbench.records import INTERRUPTED, Measurement, Run
from clusterbench.store import Store
from clusterbench.store.runs import loaded
from clusterbench.units import MAX_UINT64, whole_number_or_none

# A number in text that is no whole number: a fraction or an exponent in ASCII digits (float()
# also takes ``٣.٥``, ``1_000.5``, ``nan`` and ``infinity``).
_DECIMAL_RE = re.compile(r"-?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))(?:[eE][+-]?[0-9]+)?", re.ASCII)



def _number(value: Any) -> int | float | None:
    """``value`` as a number: a number, or text that spells one (``1``, ``-1``, ``1.0``, ``2e3``);
    None for anything else (booleans included). Integers are ``whole_number``'s (ASCII digits: not
    ``1_000``, ``+1`` or ``٣``), with a minus sign before them: params may be negative."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if not isinstance(value, str):
        return None
    text = value.strip(" \t\n\r\x0b\x0c")
    negative = text.startswith("-")
    digits = text[1:] if negative else text
    # "- 1" is no number: whole_number would trim the space; integers compare exactly up to a uint64
    whole = whole_number_or_none(digits, maximum=MAX_UINT64) if digits[:1].isdigit() else None
    if whole is not None:
        return -whole if negative else whole
    if _DECIMAL_RE.fullmatch(text):
        number = float(text)
        return number if math.isfinite(number) else None
    return None


def _same(want: Any, have: Any) -> bool:
    if isinstance(want, list):
        return any(_same(w, have) for w in want)
    if isinstance(want, bool) or isinstance(have, bool):
        return str(want).lower() == str(have).lower()
    if isinstance(want, (int, float)) or isinstance(have, (int, float)):
        # a number and text that spells one compare as numbers, whichever side the text is on;
        # integers exactly (as floats, 2**53 + 1 would equal 2**53: byte counts are integers)
        a, b = _number(want), _number(have)
        if a is None or b is None:
            return False
        return a == b
    return str(want) == str(have)


def params_match(want: Mapping[str, Any], have: Mapping[str, Any]) -> bool:
    """Every wanted param is present with an equal value (a list means any of its values)."""
    return all(k in have and _same(v, have[k]) for k, v in want.items())


class Row(NamedTuple):   # a tuple: a thousand runs' judgement makes 400,000 of them
    """A measurement with the run it came from."""

    run: Run
    m: Measurement

    def key(self, by: str) -> str | None:
        """Identity for outlier detection: a param (host, device, rank), ``run``, or ``tag:KEY``."""
        if by == "run":
            return str(self.run.id)
        if by.startswith("tag:"):
            return self.run.tags.get(by[4:])
        v = self.m.params.get(by)
        if v is None and by == "host" and len(self.run.hosts) == 1:
            return self.run.hosts[0]  # single-host run: the run's host is the measurement's host
        return None if v is None else str(v)


def identity_of(rows: Sequence[Row], by: str) -> Callable[[Row], str | None]:
    """``Row.key(by)`` for outliers among ``rows``, except that a ``device`` is ``host:device``
    where the rows come from several hosts: a device number names a GPU only on its host, and
    pooling GPU 3 of every host hides a slow one behind the others."""
    if by != "device" or len({r.key("host") for r in rows} - {None}) < 2:
        return lambda r: r.key(by)

    def on_host(r: Row) -> str | None:
        key, host = r.key(by), r.key("host")
        return f"{host}:{key}" if key is not None and host else key

    return on_host


_new_tuple = tuple.__new__


def rows_of(runs: Iterable[tuple[Run, list[Measurement]]]) -> list[Row]:
    out: list[Row] = []
    for r, ms in runs:   # tuple.__new__ at C speed: Row's own __new__ is a Python call per row
        out += map(_new_tuple, repeat(Row), zip(repeat(r), ms))
    return out


def by_metric(rows: Iterable[Row]) -> dict[tuple[str, str], list[Row]]:
    """Rows by (benchmark, metric), in their order: a profile of a thousand criteria looks up its
    rows instead of scanning every row once per criterion."""
    out: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        out.setdefault((r.m.benchmark, r.m.metric), []).append(r)
    return out


def select(rows: Iterable[Row], benchmark: str, metric: str, params: Mapping[str, Any],
           absent: Sequence[str] = ()) -> list[Row]:
    """The rows of this benchmark and metric whose params include ``params`` and hold none of
    ``absent`` (a profile's ``key: null``)."""
    return [r for r in rows if r.m.benchmark == benchmark and r.m.metric == metric
            and params_match(params, r.m.params) and not any(k in r.m.params for k in absent)]


class Selection:
    """``select`` for many criteria over the same rows (a profile of a hundred criteria over a
    thousand runs' rows): whether a row matches depends only on its values of the params a
    criterion names, so each distinct set of those values is matched once and its rows taken
    whole, in their order, instead of every row matched once per criterion."""

    def __init__(self, rows: Iterable[Row]) -> None:
        self._of_metric = by_metric(rows)
        # (benchmark, metric, names) -> (the rows' values of the names -> indexes of its rows)
        self._groups: dict[tuple[str, str, tuple[str, ...]], dict[tuple[Any, ...], list[int]]] = {}

    def of_metric(self, benchmark: str, metric: str) -> list[Row]:
        """The rows of this benchmark and metric, in their order (``by_metric``)."""
        return self._of_metric.get((benchmark, metric), [])

    def select(self, benchmark: str, metric: str, params: Mapping[str, Any],
               absent: Sequence[str] = ()) -> list[Row]:
        """``select(rows, benchmark, metric, params, absent)``, the same rows in the same order."""
        rows = self.of_metric(benchmark, metric)
        names = tuple(sorted(set(params) | set(absent)))
        groups = self._groups.get((benchmark, metric, names))
        if groups is None:
            groups = self._groups[benchmark, metric, names] = _grouped(rows, names)
        picked = [ix for ix in groups.values()
                  if params_match(params, rows[ix[0]].m.params) and not any(k in rows[ix[0]].m.params for k in absent)]
        if len(picked) == 1:
            return [rows[i] for i in picked[0]]
        return [rows[i] for i in sorted(i for ix in picked for i in ix)]


def _grouped(rows: Sequence[Row], names: tuple[str, ...]) -> dict[tuple[Any, ...], list[int]]:
    """Indexes of ``rows`` by their values of ``names`` (each value with its type: ``1``, ``1.0``,
    ``True`` and ``"1"`` apart, as ``params_match`` may tell them apart; a list or an object by its
    JSON, whose text is the same only for values ``_same`` takes the same). Records read with
    shared params share one dict per parameter set: its values are worked out once."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    seen: dict[int, tuple[dict, tuple[Any, ...]]] = {}
    absent = [_ABSENT] * len(names)
    for i, r in enumerate(rows):
        p = r.m.params
        known = seen.get(id(p))
        if known is None or known[0] is not p:
            values = tuple(map(p.get, names, absent))
            types = tuple(map(type, values))
            key: tuple[Any, ...] = ("values", values, types)
            if not all(t in _SCALARS for t in types):   # a list or an object: by its JSON
                key = ("json", *(_value_key(p, k) for k in names))
            known = seen[id(p)] = (p, key)
        groups.setdefault(known[1], []).append(i)
    return groups


_ABSENT: Any = object()   # a param a record does not have (apart from one it has as null)
_SCALARS = frozenset({str, int, float, bool, type(None), object})


def _value_key(params: Mapping[str, Any], name: str) -> tuple[Any, ...]:
    if name not in params:
        return (False,)
    v = params[name]
    if v is None or isinstance(v, (str, int, float, bool)):
        return True, type(v), v
    return True, list, json.dumps(v, default=str)


def interrupted_note(runs: Iterable[Run]) -> str | None:
    """What a judgement of interrupted runs must say: their rows stop where the signal came."""
    ids = [str(r.id) for r in runs if r.status == INTERRUPTED]
    if not ids:
        return None
    return (f"run(s) {', '.join(ids)} {'was' if len(ids) == 1 else 'were'} interrupted (SIGINT or SIGTERM): "
            "only the rows measured before the signal are judged")


def load_runs(store: Store, selectors: Iterable[str], since: str | None = None
              ) -> list[tuple[Run, list[Measurement]]]:
    """Resolve selectors (``clusterbench.store.selectors``: ids, ranges, ``last~N``, tags,
    ``bench:NAME``) to runs with their measurements, each run once, in id order; ``since``: a
    UTC timestamp. A selector matching nothing raises UsageError (from the store)."""
    return loaded(store, selectors, since)
