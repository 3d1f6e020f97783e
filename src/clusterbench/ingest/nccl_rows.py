"""Rows of an nccl-tests table: the column layout, row parsing, and the compact record table.

This is the hot path of importing large logs, so a row is a plain tuple and its records are
materialized as Measurement objects only when someone asks; storing them serializes each
parameter set once per row and placement (see ``NcclTable.rows``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from clusterbench.families.collectives.spec import (
    ALGBW,
    BUSBW,
    ITER_CV,
    ITER_TIME,
    MAX_ERROR,
    TIME,
    WRONG,
)
from clusterbench.ingest.common import to_float
from clusterbench.records import Measurement

PLACEMENTS = ("out", "in")
DEFAULT_TAIL = ["time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"]
# column header word -> (metric, unit, stat)
COLUMN_METRICS = {"time": (TIME.name, TIME.unit, ""), "cputime": (TIME.name, TIME.unit, "cpu"),
                  "algbw": (ALGBW.name, ALGBW.unit, ""), "busbw": (BUSBW.name, BUSBW.unit, ""),
                  "#wrong": (WRONG.name, WRONG.unit, ""), "wrong": (WRONG.name, WRONG.unit, ""),
                  "error": (MAX_ERROR.name, MAX_ERROR.unit, ""), "res": (MAX_ERROR.name, MAX_ERROR.unit, ""),
                  "i_min": (ITER_TIME.name, ITER_TIME.unit, "min"), "i_max": (ITER_TIME.name, ITER_TIME.unit, "max"),
                  "i_p99": (ITER_TIME.name, ITER_TIME.unit, "p99"), "i_cv%": (ITER_CV.name, ITER_CV.unit, "")}
_INF = float("inf")

# (size, count, dtype, redop, root, values in tail order (None where N/A), 4th column is an error)
TableRow = tuple[int, int, str, str, int, list["float | None"], bool]


class Layout:
    """Which values follow the leading size/count/type[/redop][/root] fields of a row."""

    def __init__(self, tail: list[str], from_header: bool) -> None:
        self.ntail = len(tail)
        # per placement: [(index in the tail, metric, unit, stat)]
        self.blocks: list[list[tuple[int, str, str, str]]] = []
        for i, name in enumerate(tail):
            if name in ("time", "cputime"):
                self.blocks.append([])
            if self.blocks:
                self.blocks[-1].append((i, *COLUMN_METRICS.get(name, (name, "", ""))))
        self.blocks = self.blocks[: len(PLACEMENTS)]
        self.bw_index = [(next((i for i, m, _u, _s in b if m == ALGBW.name), None),
                          next((i for i, m, _u, _s in b if m == BUSBW.name), None)) for b in self.blocks]
        # Without a header we do not know whether the 4th value is #wrong or an old error column.
        self.wrong_index = [i for b in self.blocks for i, m, _u, _s in b if m == "wrong"] if not from_header else []


DEFAULT_LAYOUT = Layout(DEFAULT_TAIL, from_header=False)


def _number(token: str) -> float | None:
    try:
        v = float(token)
    except ValueError:
        return to_float(token)
    return None if (v != v or v in (_INF, -_INF)) else v


def _values(tokens: list[str]) -> list[float | None]:
    try:
        floats: list[float] = list(map(float, tokens))
    except ValueError:  # N/A (unchecked #wrong), a trailing '*' (error over threshold)
        return [None if t == "N/A" else _number(t) for t in tokens]
    total = sum(floats)
    if total != total or total in (_INF, -_INF):  # a nan or inf somewhere: not a measurement
        return [None if (v != v or v in (_INF, -_INF)) else v for v in floats]
    return floats  # type: ignore[return-value]


def parse_row(toks: list[str], layout: Layout) -> TableRow | None:
    """A table row split on whitespace, or None when the tokens are not one."""
    nlead = len(toks) - layout.ntail
    if nlead < 3 or nlead > 5:
        return None
    try:
        size, count = int(toks[0]), int(toks[1])
    except ValueError:
        return None
    dtype = toks[2]
    if not dtype[:1].isalpha():
        return None
    redop, root = "", -1
    for tok in toks[3:nlead]:
        if tok.lstrip("-").isdigit():  # a test, not try/int: most rows carry a redop word
            root = int(tok)
        else:
            redop = tok
    tail = toks[nlead:]
    is_error = bool(layout.wrong_index) and any("." in tail[i] or "e" in tail[i] for i in layout.wrong_index)
    return (size, count, dtype, redop, root, _values(tail), is_error)


def best_bandwidths(rows: list[TableRow], layout: Layout) -> tuple[float, float] | None:
    """(algbw, busbw) of the row with the largest algbw (its two-decimal rounding matters least)."""
    best: tuple[float, float] | None = None
    for row in rows:
        values = row[5]
        for i_alg, i_bus in layout.bw_index:
            if i_alg is None or i_bus is None:
                continue
            alg, bus = values[i_alg], values[i_bus]
            if alg and bus and (best is None or alg > best[0]):
                best = (alg, bus)
    return best if best and best[0] >= 1.0 else None


class NcclTable:
    """A run's collective records in row form (see ``RecordTable`` in ingest.common)."""

    def __init__(self, op: str, ranks: int, layout: Layout, rows: list[TableRow], extra: list[Measurement]) -> None:
        self.op, self.ranks, self.layout, self.table, self.extra = op, ranks, layout, rows, extra
        self._count: int | None = None

    def __len__(self) -> int:
        if self._count is None:
            self._count = sum(1 for _ in self._values()) + len(self.extra)
        return self._count

    def _values(self) -> Iterator[tuple[TableRow, str, str, float, str, str]]:
        for row in self.table:
            values = row[5]
            for placement, block in zip(PLACEMENTS, self.layout.blocks):
                for index, metric, unit, stat in block:
                    v = values[index]
                    if v is not None:
                        if row[6] and metric == WRONG.name:
                            metric = MAX_ERROR.name
                        yield row, placement, metric, v, unit, stat

    def measurements(self) -> list[Measurement]:
        out = []
        for row, placement, metric, value, unit, stat in self._values():
            params = {"bytes": row[0], "count": row[1], "dtype": row[2], "redop": row[3] or "none", "root": row[4],
                      "placement": placement, "ranks": self.ranks}
            if stat:
                params["stat"] = stat
            out.append(Measurement(self.op, metric, value, unit, params))
        return out + self.extra

    def rows(self) -> Iterator[tuple[str, str, float, str, str]]:
        op, ranks = self.op, self.ranks
        quoted: dict[str, str] = {}
        last: tuple[TableRow, str] | None = None
        base = ""
        for row, placement, metric, value, unit, stat in self._values():
            if last is None or last[0] is not row or last[1] != placement:
                last = (row, placement)
                dtype, redop = row[2], row[3] or "none"
                jd = quoted.get(dtype) or quoted.setdefault(dtype, json.dumps(dtype))
                jr = quoted.get(redop) or quoted.setdefault(redop, json.dumps(redop))
                # the same text as json.dumps of the params dict in measurements(): same keys, order
                base = (f'{{"bytes": {row[0]}, "count": {row[1]}, "dtype": {jd}, "redop": {jr}, '
                        f'"root": {row[4]}, "placement": "{placement}", "ranks": {ranks}')
            yield (op, metric, value, unit, f'{base}, "stat": "{stat}"}}' if stat else base + "}")
        for m in self.extra:
            yield (m.benchmark, m.metric, float(m.value), m.unit, json.dumps(m.params, default=str))
