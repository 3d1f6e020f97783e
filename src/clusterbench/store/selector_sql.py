"""A selector (``store/selectors.py``, the grammar) as SQL: one condition on ``runs`` and its
arguments, the same on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from clusterbench.store.nul import NUL
from clusterbench.store.selectors import Selector


def nul_in_selector(sel: Selector) -> bool:
    """Whether ``sel`` names a tag or benchmark holding a NUL, which no PostgreSQL run holds
    (``store/nul.py``) and PostgreSQL refuses in a query."""
    texts = [*sel.tags, *sel.tags.values()]
    for b in sel.benchmarks:
        texts += [b.name, *b.benchmarks, *b.prefixes, b.tool]
    return any(NUL in t for t in texts)


def starts_with(column: str, prefix: str) -> str:
    """An SQL condition, with one ``?`` for ``prefix``: ``column`` starts with ``prefix``, case
    included on both engines (SQLite's LIKE ignores ASCII case, PostgreSQL's does not; both
    count ``substr`` in characters)."""
    return f"substr({column}, 1, {len(prefix)}) = ?"


def filters(sel: Selector, since: str | None) -> tuple[str, list[Any]]:
    """A selector's terms (and ``--since``) as one SQL condition on ``runs`` and its arguments."""
    conds: list[str] = ["1=1"]
    args: list[Any] = []
    for rid in sel.ids:
        conds.append("id=?")
        args.append(rid)
    for lo, hi in sel.ranges:
        conds.append("id BETWEEN ? AND ?")
        args += [lo, hi]
    for key, value in sel.tags.items():
        conds.append("id IN (SELECT run_id FROM run_tags WHERE key=? AND value=?)")
        args += [key, value]
    for b in sel.benchmarks:
        measured = [f"benchmark IN ({','.join('?' * len(b.benchmarks))})"] if b.benchmarks else []
        args += list(b.benchmarks)
        for prefix in b.prefixes:
            measured.append(starts_with("benchmark", prefix))
            args.append(prefix)
        either = [f"id IN (SELECT run_id FROM run_benchmarks WHERE {' OR '.join(measured)})"] if measured else []
        if b.tool:  # an imported log's source is its tool, then maybe a version: "osu 7.0"
            either.append(f"(source=? OR {starts_with('source', b.tool + ' ')})")
            args += [b.tool, b.tool + " "]
        conds.append(f"({' OR '.join(either)})")
    if since:
        conds.append("started_at >= ?")
        args.append(since)
    return " AND ".join(conds), args
