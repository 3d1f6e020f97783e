"""Rows of an nccl-tests table: the column layout, and a run's rows as the records they hold.

This is the hot path of importing large logs (a million rows in 200 MB). A row is split once
and kept as the text it was printed as; the parser keeps only the few tokens its checks need
(size, the dtype/redop/root group, busbw), as text, and converts them in bulk when the run
ends. The records are the row's tokens: they are stored as a ``table`` pack (store/packs.py),
and become Measurement objects only when someone asks for them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from clusterbench.families.base import Metric
from clusterbench.families.collectives.spec import (
    ALGBW,
    BUSBW,
    ITER_CV,
    ITER_TIME,
    MAX_ERROR,
    TIME,
    WRONG,
)
from clusterbench.store.packs import (
    ROWS,
    Pack,
    Packs,
    number,
    pack_measurements,
    pack_table,
    table_header,
)

PLACEMENTS = ("out", "in")
DEFAULT_TAIL = ["time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"]
# column header word -> (metric, unit, stat)
COLUMN_METRICS = {"time": (TIME.name, TIME.unit, ""), "cputime": (TIME.name, TIME.unit, "cpu"),
                  "algbw": (ALGBW.name, ALGBW.unit, ""), "busbw": (BUSBW.name, BUSBW.unit, ""),
                  "#wrong": (WRONG.name, WRONG.unit, ""), "wrong": (WRONG.name, WRONG.unit, ""),
                  "error": (MAX_ERROR.name, MAX_ERROR.unit, ""), "res": (MAX_ERROR.name, MAX_ERROR.unit, ""),
                  "i_min": (ITER_TIME.name, ITER_TIME.unit, "min"), "i_max": (ITER_TIME.name, ITER_TIME.unit, "max"),
                  "i_p99": (ITER_TIME.name, ITER_TIME.unit, "p99"), "i_cv%": (ITER_CV.name, ITER_CV.unit, "")}
# A row as stored: size, count, type, redop, root, then the columns.
LEAD = (("bytes", "int"), ("count", "int"), ("dtype", "str"), ("redop", "str"), ("root", "int"))
ORDER = ("bytes", "count", "dtype", "redop", "root", "placement", "ranks", "stat", "cycle")


class Layout:
    """Which values follow the leading size/count/type[/redop][/root] fields of a row."""

    def __init__(self, tail: Sequence[str], from_header: bool, placements: tuple[str, ...] = PLACEMENTS) -> None:
        self.names = list(tail)
        self.placements = placements
        self.ntail = len(tail)
        self.from_header = from_header
        # per tail position: (metric, unit, stat, placement), or None (not a record)
        self.cols: list[tuple[str, str, str, str] | None] = []
        block = -1
        for name in tail:
            if name in ("time", "cputime"):
                block += 1
            known = COLUMN_METRICS.get(name)
            if block < 0 or block >= len(placements) or known is None:
                self.cols.append(None)
                continue
            metric, unit, stat = known
            self.cols.append((metric, unit, stat, placements[block]))
        self.ignored = [n for n, c in zip(tail, self.cols) if c is None]
        self.bus = [i for i, c in enumerate(self.cols) if c and c[0] == BUSBW.name]
        self.alg = [i for i, c in enumerate(self.cols) if c and c[0] == ALGBW.name]
        self.wrong = [i for i, c in enumerate(self.cols) if c and c[0] == WRONG.name]
        self.error = [i for i, c in enumerate(self.cols) if c and c[0] == MAX_ERROR.name]


DEFAULT_LAYOUT = Layout(DEFAULT_TAIL, from_header=False)


@lru_cache(maxsize=256)   # one per column header seen; concatenated logs repeat a few
def layout_of(tail: tuple[str, ...], placements: tuple[str, ...] = PLACEMENTS) -> Layout:
    """``placements``: what each time column's block measured; ("in",) for rccl-tests ``-O 0``,
    whose table has only the in-place block."""
    return Layout(tail, from_header=True, placements=placements)


class RowTable:
    """A run's rows with their layout: the run's records, packed for the store."""

    def __init__(self, op: str, ranks: int | None, layout: Layout, parts: list[list], cycles: list[int],
                 footer: list[tuple[Metric, float]], error_column: bool, drop_algbw: bool = False,
                 part_cycles: list[int | None] | None = None) -> None:
        self.op, self.ranks, self.layout = op, ranks, layout
        self.parts = parts                # [shape, rows' text, row count]: what follows size/count/type
        self.cycles = cycles              # index of the part where each cycle starts (rccl-tests -N)
        self.part_cycles = part_cycles    # or each part's cycle, given (nccl-tests -N prints no cycle line)
        self.footer = footer              # per-run records: (metric, value), params {"ranks": n}
        self.error_column = error_column  # an old #wrong-less log whose 4th value is an error
        self.drop_algbw = drop_algbw      # an old log whose algbw column is not size/time

    def packs(self) -> Packs:
        """The run's packs; ``unreadable`` then holds the value cells that are no number (and
        not N/A, nan or inf): never stored, so never counted either."""
        packs: list[Pack] = []
        self.unreadable = Unreadable()
        cycle_of = self.part_cycles or (_cycles(self.cycles, len(self.parts)) if self.cycles else None)
        for i, (shape, text, rows) in enumerate(self.parts):
            header, stored, ncols = _header(self.op, self.layout, shape, self.error_column, self.ranks,
                                            cycle_of[i] if cycle_of else None, self.drop_algbw)
            packs.append(pack_table(header, [text], _count(text, rows, stored, ncols, self.unreadable), self.op))
        if self.footer:
            packs.append(_footer_pack(self.op, self.ranks, self.footer))
        return Packs(packs)


def _footer_pack(op: str, ranks: int | None, footer: list[tuple[Metric, float]]) -> Pack:
    """The run's footer records, all with params {"ranks": n} (null where the log does not prove
    n), as a ``rows`` pack: written directly (as pack_rows would) because it is done once per
    run of a large log."""
    metrics, values = zip(*footer)
    values = tuple(map(float, values))
    if not op.isidentifier() or not all(map(math.isfinite, values)):
        return pack_measurements([metric(op, value, {"ranks": ranks}) for metric, value in footer])
    count = "null" if ranks is None else str(int(ranks))
    return Pack(ROWS, len(values), _footer_format(op, metrics) % (count, *values), (op,))


@lru_cache(maxsize=256)
def _footer_format(op: str, metrics: tuple[Metric, ...]) -> str:
    """The ``rows`` pack body of these footer records, with %s for the rank count (a JSON
    number or null) and %r for each value (op is an identifier: nothing in it needs quoting)."""
    keys = ",".join(f'["{op}","{m.name}","{m.unit}"]' for m in metrics).replace("%", "%%")
    rows = ",".join(f"[{i},0,%r]" for i in range(len(metrics)))
    return '{"k":[' + keys + '],"p":[{"ranks":%s}],"r":[' + rows + "]}"


def _cycles(starts: list[int], nparts: int) -> list[int | None]:
    if len(starts) < 2:
        return [None] * nparts
    out: list[int | None] = []
    for i in range(nparts):
        out.append(max(0, sum(1 for s in starts if s <= i) - 1))
    return out


@lru_cache(maxsize=4096)
def _header(op: str, layout: Layout, shape: tuple[str, ...], error_column: bool, ranks: int | None,
            cycle: int | None, drop_algbw: bool = False) -> tuple[str, list[int], int]:
    """The pack header of rows of this shape, which token positions hold records, and how many."""
    cols: list[tuple[str, str, dict] | None] = []
    for c in layout.cols:
        if c is None or (drop_algbw and c[0] == ALGBW.name):
            cols.append(None)
            continue
        metric, unit, stat, placement = c
        if error_column and metric == WRONG.name:
            metric = MAX_ERROR.name
        params: dict[str, str] = {"placement": placement}
        if stat:
            params["stat"] = stat
        cols.append((metric, unit, params))
    lead = LEAD[:3] + tuple(x for x in LEAD[3:] if x[0] in shape)
    const: dict[str, object] = {"ranks": ranks}
    if "redop" not in shape:
        const["redop"] = "none"
    if "root" not in shape:
        const["root"] = -1
    if cycle is not None:
        const["cycle"] = cycle
    header = table_header(op, lead, cols, const, ORDER)
    stored = [i + len(lead) for i, c in enumerate(cols) if c is not None]
    return header, stored, len(cols)


class Unreadable:
    """Value cells of a run's rows that are no number, N/A, nan or inf (``4x4.41``, ``44.41.7``,
    bytes that were not UTF-8): how many, and the first few with their rows."""

    SHOWN = 3

    def __init__(self) -> None:
        self.count = 0
        self.first: list[tuple[str, str]] = []   # (cell, its row)

    def add(self, cell: str, row: str) -> None:
        self.count += 1
        if len(self.first) < self.SHOWN:
            self.first.append((cell, row))


def _count(text: str, rows: int, stored: list[int], ncols: int, unreadable: Unreadable | None = None) -> int:
    """Value tokens that are numbers, counted in C where the text allows it: every stored column
    holds a number or N/A, unless the rows carry nan/inf/* or the table has columns not stored,
    or a cell may be no number at all (``_only_numbers``): then each cell is read, and one that
    is no number, N/A, nan or inf goes to ``unreadable``."""
    # one-character tests first: they scan fastest (a float/sum table holds no 'n' at all)
    if len(stored) == ncols and "*" not in text and ("n" not in text or "nan" not in text and "inf" not in text) \
            and _only_numbers(text, rows, len(stored)):
        return rows * ncols - (text.count("N/A") if "N" in text else 0)
    total = 0
    for line in text.split("\n"):
        toks = line.split()
        for i in stored:
            if i < len(toks):
                if number(toks[i]) is not None:
                    total += 1
                elif unreadable is not None and not _not_measured(toks[i]):
                    unreadable.add(toks[i], line.strip())
    return total


_DIGITS = str.maketrans("", "", "0123456789")
_GAPS = str.maketrans("", "", " \n.")


def _only_numbers(text: str, rows: int, values: int) -> bool:
    """Whether every value cell of these rows (``values`` per row, after the leading size,
    count, type, redop and root) is ASCII digits with at most one '.', or N/A: then the cells
    are counted without reading each (the hot path of a large import). Two translations in C:
    with the digits gone, a cell of two dots (``44.41.7``) leaves "..", and with spaces and dots
    gone too, what is left is each row's leading words (``floatsum-``) and the N/As, unless a
    cell holds anything else (``4x4.41``, U+FFFD for bytes that were not UTF-8, a sign, an
    exponent). Rows whose leading words differ (several dtypes) are read cell by cell. (About
    a tenth of a parse's time.)"""
    # not ASCII: U+FFFD for bytes that were not UTF-8, another script's digits; " .": a lone '.'
    # (or .5, which nccl-tests never prints); a tab: cells not split as the residue assumes
    if not text.isascii() or " ." in text or "\t" in text or text[:1] == ".":
        return False
    digitless = text.translate(_DIGITS)
    if ".." in digitless:
        return False
    rest = digitless.translate(_GAPS)
    if "N" in rest:
        rest = rest.replace("N/A", "")
    nl = text.find("\n")
    first = (text if nl < 0 else text[:nl]).split()
    lead = "".join(first[:len(first) - values]).translate(_DIGITS).replace(".", "")
    return rest == lead * rows


def _not_measured(token: str) -> bool:
    """A cell nccl-tests prints where there is no value: N/A (#wrong without a check), nan, inf."""
    return token == "N/A" or token.lower().lstrip("+-").rstrip("*,") in ("nan", "inf", "infinity")
