"""What a collective table's own columns prove about its op and its rank count.

Every nccl-tests/rccl-tests table carries evidence of the op it measured, whether or not a line
names it (facts from nccl-tests' and rccl-tests' ``src/<op>.cu``, ``*GetCollByteCount`` and
``*GetBw``, and the collective spec):

- the ``redop`` column: ``none`` for the ops that reduce nothing, a reduction for the others;
- the ``root`` column: ``-1`` for the ops without a root, a rank for broadcast, reduce, gather,
  scatter. nccl-tests before 2019 printed only the columns an op takes (all_gather ``type``,
  all_reduce ``type redop``, broadcast ``type root``, reduce both; alltoall an empty redop), so
  a table without the column is of an op without that parameter;
- the ``count`` column against the size: ``size = count x element size`` for all_reduce,
  broadcast, reduce and sendrecv, ``size = count x element size x n`` for the ops that split
  their buffer over the n ranks (all_gather, reduce_scatter, alltoall, gather, scatter, ...),
  which also gives n;
- busbw/algbw: the op's bus factor for n ranks (2(n-1)/n, (n-1)/n or 1); read as the interval the
  printed digits allow on every row (each value is rounded to its last printed digit), so it
  both tells ops apart and bounds n;
- the ``#wrong`` columns: alltoall, alltoallv and sendrecv never check their in-place run, and
  since nccl-tests 2.13.1 (2022-09, commit a0a1491) print ``N/A`` there: a table that checked
  out-of-place (a number) and printed ``N/A`` in place is one of them; one with a number in place
  is not, if the log prints its tool's version (nccl-tests prints it since 2.17, rccl-tests
  since 2024): before 2.13.1 those ops printed a number there too.

``decide_op`` weighs that evidence with the names a log prints and its file name; ``rank_count``
combines what proves the rank count. Neither guesses: an op the evidence does not single out, a
rank count it does not pin down, is left unknown and said so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache

from clusterbench.families.collectives.spec import ALL_OPS, OP_SPELLINGS, SPECS
from clusterbench.ingest.common import LogFormatError

RANKS_LIMIT = 1 << 31      # no run has this many ranks: the upper end of "any number"
# a floor on the rounding of a value printed with all its digits (rccl-tests' JSON): busbw is
# algbw times the factor in double precision, not exactly
_RELATIVE = 1e-9
# The names of the evidence, in the order op_from and ranks_from list them
PRINTED = "printed name"
FILE_NAME = "file name"
REDOP = "redop"
ROOT = "root"
COUNT = "count"
FACTOR = "busbw factor"
IN_PLACE = "in-place #wrong"
RANK_LIST = "rank list"
NRANKS = "nranks"
HIGHEST_RANK = "highest rank"
# nccl-tests before 2020-06 printed busbw in the algbw column of these ops (see nccl_tests)
OLD_ALGBW_OPS = ("all_gather", "reduce_scatter")


class RunRefused(LogFormatError):
    """One run's op cannot be decided: its evidence disagrees, or nothing singles it out. The
    file is refused (``iter_runs`` says which run of it)."""


_HALF = tuple(0.5 * 10.0 ** -d for d in range(40))   # (rccl-tests' JSON prints up to 17 decimals)


def half_unit(token: str) -> float:
    """Half of the last digit ``token`` prints (``0.61`` -> 0.005, ``1.2e+03`` -> 50): how far
    the value it was printed from may lie."""
    if "e" not in token and "E" not in token:   # nccl-tests' %.2f, the common case, without a split
        t = token.strip()
        dot = t.find(".")
        decimals = len(t) - dot - 1 if dot >= 0 else 0
        if decimals < len(_HALF):
            return _HALF[decimals]
    t = token.strip().lstrip("+-")
    mantissa, _, exponent = t.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    try:
        exp = int(exponent) if exponent else 0
        return 0.5 * 10.0 ** (exp - decimals)
    except (ValueError, OverflowError):   # no exponent Python reads, or past the float limit
        return math.inf


def ratio_interval(pairs: Iterable[tuple[str, str]]) -> tuple[float, float] | None:
    """The busbw/algbw interval that every (algbw, busbw) pair of printed tokens allows, or None
    where no pair says anything (algbw 0.00, N/A) or the pairs disagree (no one factor fits
    them all: not one op's rows, or a tool that computes busbw otherwise)."""
    bounds = ratio_bounds(pairs)
    return bounds if bounds is not None and bounds[0] <= bounds[1] else None


def ratio_bounds(pairs: Iterable[tuple[str, str]]) -> tuple[float, float] | None:
    """``ratio_interval``'s ends before they are checked: the first above the second where the
    pairs disagree; None where no pair says anything."""
    lo, hi = 0.0, math.inf
    seen = False
    half = _HALF
    for a_tok, b_tok in pairs:
        try:
            a, b = float(a_tok), float(b_tok)
        except ValueError:
            continue
        if not (0.0 < a < math.inf and 0.0 <= b < math.inf):   # (also false for nan)
            continue
        # half_unit inline for nccl-tests' %.2f tokens: this runs for every run of a large log
        dot = a_tok.find(".")
        da = half[len(a_tok) - dot - 1] if dot > 0 and "e" not in a_tok else half_unit(a_tok)
        dot = b_tok.find(".")
        db = half[len(b_tok) - dot - 1] if dot > 0 and "e" not in b_tok else half_unit(b_tok)
        if da < a * _RELATIVE:
            da = a * _RELATIVE
        if db < b * _RELATIVE:
            db = b * _RELATIVE
        if a <= da:
            continue
        low, high = (b - db if b > db else 0.0) / (a + da), (b + db) / (a - da)
        if low > lo:
            lo = low
        if high < hi:
            hi = high
        seen = True
    return (lo, hi) if seen else None


def ranks_fitting(op: str, lo: float, hi: float) -> tuple[int, int] | None:
    """The rank counts n (1..RANKS_LIMIT) whose bus factor lies in [lo, hi], as (first, last);
    None when none does. Every op's factor is 1 or c(n-1)/n (c = 2 for all_reduce, 1 for the
    ops that split their buffer), whose inverse is c/(c-f): the ends are that inverse at lo and
    hi, checked against the factor itself (the float arithmetic may put them a step off)."""
    factor = SPECS[op].busbw_factor
    c = _limit(op)
    if c is None:   # a constant factor: any rank count, or none
        return (1, RANKS_LIMIT) if lo <= factor(2) <= hi else None
    start = 1 if lo <= 0.0 else RANKS_LIMIT + 1 if lo >= c else max(1, math.ceil(c / (c - lo)) - 1)
    while start <= RANKS_LIMIT and factor(start) < lo:
        start += 1
    end = RANKS_LIMIT if hi >= c else min(RANKS_LIMIT, max(0, math.floor(c / (c - hi)) + 1))
    while end >= 1 and factor(end) > hi:
        end -= 1
    return (start, end) if start <= end else None


@cache
def _limit(op: str) -> float | None:
    """c of an op whose factor is c(n-1)/n (its value as n grows), None for a constant one."""
    factor = SPECS[op].busbw_factor
    return None if factor(2) == factor(3) else 2.0 * factor(2)


def ranks_from_ratio(op: str, algbw: float, busbw: float) -> int | None:
    """The one rank count busbw/algbw allows for ``op`` from values printed with two decimals;
    None where several do (too rounded) or the factor does not depend on it."""
    interval = ratio_interval([(f"{algbw:.2f}", f"{busbw:.2f}")])
    fits = ranks_fitting(op, *interval) if interval and op in SPECS else None
    return fits[0] if fits and fits[0] == fits[1] and fits != (1, RANKS_LIMIT) else None


@dataclass(slots=True)
class Evidence:
    """What one run's table shows about its op; each field None where the table does not show
    it. ``row``: the table's last row, quoted by refusals."""

    redops: frozenset[str] | None = None
    roots: frozenset[int] | None = None
    redop_column: bool = True         # False: no redop column (an old table of an op without one)
    root_column: bool = True
    split: int | None = None          # size / (count x element size), one value on every row
    split_unit: int = 0               # that row's element size (for the messages)
    ratio: tuple[float, float] | None = None
    ratio_disagrees: bool = False     # rows whose busbw/algbw no one factor fits (then ratio is None)
    in_place_checked: bool | None = None
    old_algbw: bool = False           # a pre-2020-06 table: algbw may be busbw (OLD_ALGBW_OPS)
    min_ranks: int | None = None      # ranks the rank lines show (none with split communicators)
    row: str = ""
    fits: dict[str, tuple[int, int] | None] = field(default_factory=dict, repr=False, compare=False)

    def describe(self, what: str) -> str:
        """One piece of evidence as a refusal states it, with the row that shows it."""
        if what == REDOP:
            text = f"redop {', '.join(sorted(self.redops or ()))}" if self.redop_column else "no redop column"
        elif what == ROOT:
            text = f"root {', '.join(map(str, sorted(self.roots or ())))}" if self.root_column else "no root column"
        elif what == COUNT:
            text = ("count = size / " + (f"({self.split_unit} x {self.split})" if self.split != 1
                                         else str(self.split_unit)))
            if self.min_ranks:
                text += f" with {self.min_ranks} ranks shown"
        elif what == FACTOR and self.ratio is not None:
            text = f"busbw/algbw {self.ratio[0]:.4f}..{self.ratio[1]:.4f}"
        elif what == IN_PLACE:
            text = "in-place #wrong " + ("checked" if self.in_place_checked else "N/A where out-of-place is checked")
        else:
            text = what
        return f"{text} ('{_short(self.row)}')" if self.row else text


def _ratio_ranks(op: str, ev: Evidence) -> tuple[int, int] | None:
    """The rank counts busbw/algbw allows for ``op`` (everything where it says nothing)."""
    if ev.ratio is None or (ev.old_algbw and op in OLD_ALGBW_OPS and ev.ratio[0] <= 1.0 <= ev.ratio[1]):
        return (1, RANKS_LIMIT)
    if op not in ev.fits:   # (asked again by decide_op and rank_count)
        ev.fits[op] = ranks_fitting(op, *ev.ratio)
    return ev.fits[op]


def contradicts(op: str, ev: Evidence) -> str | None:
    """The first piece of evidence ``op`` does not fit, or None."""
    spec = SPECS[op]
    if ev.redops is not None and (len(ev.redops - {"none"}) != len(ev.redops) if spec.reduces
                                  else ev.redops != {"none"}):
        return REDOP
    if ev.roots is not None and not (all(r >= 0 for r in ev.roots) if spec.has_root
                                     else ev.roots == {-1}):
        return ROOT
    if ev.split is not None and (ev.split != 1 if not spec.splits_count
                                 else ev.min_ranks is not None and ev.split < ev.min_ranks):
        return COUNT
    fits = _ratio_ranks(op, ev)
    if fits is None:
        return FACTOR
    if ev.split is not None and spec.splits_count and not fits[0] <= ev.split <= fits[1]:
        return FACTOR
    if ev.in_place_checked is not None and ev.in_place_checked != spec.in_place_checked:
        return IN_PLACE
    return None


def present(ev: Evidence) -> list[str]:
    """The pieces of evidence the table shows."""
    shown = [(REDOP, ev.redops), (ROOT, ev.roots), (COUNT, ev.split), (FACTOR, ev.ratio),
             (IN_PLACE, ev.in_place_checked)]
    return [name for name, value in shown if value is not None]


def agrees(op: str, ev: Evidence) -> list[str]:
    """The pieces of evidence the table shows (``op`` fits all of them: ``contradicts``)."""
    factor = ev.ratio is not None and not (ev.old_algbw and op in OLD_ALGBW_OPS)
    present = [(REDOP, ev.redops is not None), (ROOT, ev.roots is not None), (COUNT, ev.split is not None),
               (FACTOR, factor), (IN_PLACE, ev.in_place_checked is not None)]
    return [name for name, there in present if there]


@lru_cache(maxsize=64)   # asked once per run: a file of thousands of runs has one name
def ops_in_name(name: str) -> tuple[str, ...]:
    """The ops a file name names, in order (``allgather-allreduce-2runs.txt``: all_gather,
    all_reduce): its words (runs of letters), alone or joined with the next one or two
    (``all_reduce_perf``), matched to the ops' spellings longest first, each word used once; a
    word that only holds a spelling names nothing (``gathered``, ``reduced``)."""
    words = re.findall(r"[a-z]+", name.rsplit("/", 1)[-1].lower())
    spellings = dict(OP_SPELLINGS)
    found: list[str] = []
    i = 0
    while i < len(words):
        for j in range(min(i + 3, len(words)), i, -1):
            op = spellings.get("".join(words[i:j]))
            if op is not None:
                found.append(op)
                i = j
                break
        else:
            i += 1
    return tuple(dict.fromkeys(found))


def decide_op(ev: Evidence, named: Sequence[tuple[str, str]], file_ops: Sequence[str],
              nrows: int) -> tuple[str, list[str]]:
    """The op of a table, and what it was read from (``op_from``).

    ``named``: (op, line) for every line of the run that names its op (``Collective test``
    lines, a program on a command line); they must agree with each other and with the table's
    columns. Without one, the file name's ops narrow what the columns allow. A conflict, or a
    table nothing singles out, raises ``RunRefused``."""
    ops: list[str] = []
    for op, _line in named:
        if op not in ops:
            ops.append(op)
    if len(ops) == 1 and contradicts(ops[0], ev) is None:   # the common case, checked alone
        return ops[0], [PRINTED, *agrees(ops[0], ev)]
    against = {op: contradicts(op, ev) for op in ALL_OPS}
    fitting = [op for op in ALL_OPS if against[op] is None]
    if len(ops) > 1:
        lines = " and ".join(f"{op} ('{_short(next(ln for o, ln in named if o == op))}')" for op in ops)
        raise RunRefused(f"the log names its op {lines}: not imported")
    if ops:
        op = ops[0]
        if against.get(op) is not None:
            line = next(ln for o, ln in named if o == op)
            raise RunRefused(f"the log names its op {op} ('{_short(line)}'), but its table's "
                             f"{ev.describe(against[op] or '')} does not fit {op}"
                             + (f" (it fits {', '.join(fitting)})" if fitting else "") + ": not imported")
        return op, [PRINTED, *agrees(op, ev)]
    if file_ops:
        chosen = [op for op in fitting if op in file_ops]
        if len(chosen) == 1:
            return chosen[0], [FILE_NAME, *agrees(chosen[0], ev)]
        if not chosen:
            why = "; ".join(f"{op}: {ev.describe(against.get(op) or '')}" for op in file_ops)
            raise RunRefused(f"the file name says {' or '.join(file_ops)}, but the table's columns do not "
                             f"fit {'it' if len(file_ops) == 1 else 'them'} ({why})"
                             + (f"; they fit {', '.join(fitting)}" if fitting else "") + ": not imported")
        fitting = chosen
    if len(fitting) == 1:
        return fitting[0], agrees(fitting[0], ev)
    if not fitting:
        shown = "; ".join(ev.describe(what) for what in present(ev))
        raise RunRefused(f"a table of {nrows} rows fits no collective: its columns disagree with each other "
                         f"({shown}): not imported")
    raise RunRefused(
        f"a table of {nrows} rows does not say which collective it measured: no line names it and its "
        f"columns fit {', '.join(fitting)}: keep the command line in the log or name the file after "
        "the op (all_gather.log)")


@dataclass
class Ranks:
    """A run's rank count as the log proves it: ``value`` None where it does not."""

    value: int | None
    proof: list[str] = field(default_factory=list)     # ranks_from
    warnings: list[str] = field(default_factory=list)
    at_least: int | None = None
    at_most: int | None = None


def rank_count(op: str, ev: Evidence, highest: int | None, stated: tuple[str, int] | None) -> Ranks:
    """What proves ``op``'s rank count: the count column (ops that split their buffer), the bus
    factor interval, the highest rank index a rank line shows (a lower bound), and a stated count
    (``stated``: (what, n), a complete rank list or NCCL's ``nranks``)."""
    lo, hi = 1, RANKS_LIMIT
    proof: list[str] = []
    warnings: list[str] = []
    if ev.split is not None and SPECS[op].splits_count:
        lo = hi = ev.split
        proof.append(COUNT)
    fits = _ratio_ranks(op, ev)
    if fits is not None and fits != (1, RANKS_LIMIT):
        if max(lo, fits[0]) <= min(hi, fits[1]):
            lo, hi = max(lo, fits[0]), min(hi, fits[1])
            proof.append(FACTOR)
    if highest is not None:
        if highest + 1 > hi:
            warnings.append(f"the log shows rank {highest}, but its table says at most {hi} ranks "
                            "(a communicator split from a larger job?): the table's count is kept")
        elif highest + 1 > lo:
            lo = highest + 1
            proof.append(HIGHEST_RANK)
    if stated is not None:
        what, n = stated
        if lo <= n <= hi:
            lo = hi = n
            proof.append(what)
        elif lo == hi:
            warnings.append(f"the log lists {n} ranks but busbw/algbw says {lo}: stored as {lo}")
        else:
            warnings.append(f"the log lists {n} ranks, which its table ({_span(lo, hi)}) does not allow")
    if lo == hi:
        return Ranks(lo, proof, warnings)
    return Ranks(None, [], warnings, at_least=lo if lo > 1 else None,
                 at_most=hi if hi < RANKS_LIMIT else None)


def _span(lo: int, hi: int) -> str:
    if hi >= RANKS_LIMIT:
        return f"at least {lo} ranks"
    return f"{lo} to {hi} ranks"


def unknown_ranks_note(r: Ranks) -> str:
    """The warning of a run whose rank count the log does not prove."""
    bounds = ""
    if r.at_least is not None or r.at_most is not None:
        bounds = f" (the log allows {_span(r.at_least or 1, r.at_most or RANKS_LIMIT)})"
    return ("the number of ranks is unknown: no complete rank list, no nranks, and busbw/algbw too rounded "
            f"to pin it down{bounds}; stored as null")


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
