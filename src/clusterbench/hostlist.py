"""Slurm hostlists as users and Slurm write them: ``gpu[01-03,07],login1``, ``rack[1-2]-node[01-04]``.

The grammar is what ``scontrol show hostnames`` accepts (tests/test_hostlist.py and
tests/test_hostlist.py compare the two where Slurm is installed):

* names are separated by commas, spaces or tabs outside brackets (Slurm keeps a newline or
  another control character inside the name; refused here);
* a name is text with zero or more bracket groups: ``rack[1-2]-node[01-02]`` is the product,
  the last bracket varying fastest (``rack1-node01 rack1-node02 rack2-node01 ...``), then the
  first, the second, ... (Slurm's order with three or more); no text may follow the last bracket
  (Slurm refuses ``node[1-2]-ib``);
* inside brackets, a comma list of numbers and ranges ``lo-hi`` with ``lo <= hi``; the width of
  ``lo`` is the zero padding (``[08-11]`` gives 08 09 10 11, ``[1-010]`` gives 1 ... 10);
* duplicates are kept, in order.

Where Slurm accepts something by accident (an unclosed or stray bracket, white space or a sign
inside brackets, ``[1-]``, numbers past 2**64 that it clamps), this parser refuses it with one
line that says Slurm would take it and clusterbench does not (``REFUSED_HERE``). Expansion is
capped at ``MAX_HOSTS`` names, counted before any name is built, and one range at Slurm's own
limit (``MAX_RANGE``), so ``gpu[1-99999999]`` is an error at once instead of minutes and gigabytes.
"""

from __future__ import annotations

import itertools
import re

from clusterbench.errors import UsageError

MAX_HOSTS = 100_000
MAX_RANGE = 65_536  # Slurm's MAX_RANGE: "Too many hosts in range"
# Slurm reads bracket numbers as C unsigned longs: larger ones are clamped to 2**64-1, and a range
# ending there wraps, so only numbers below it mean what they say.
MAX_NUMBER = 2**64 - 2
# In every refusal of something Slurm takes (by accident); tests look for it.
REFUSED_HERE = "clusterbench refuses it"

_RANGE_RE = re.compile(r"([0-9]+)(?:-([0-9]+))?")   # [0-9], not \d: Slurm takes no other digits
# What Slurm's number reading also takes: leading blanks and '+' (they count in the width),
# junk after the low number when a high one follows, '1-' for '1'.
_LOOSE_NUMBER_RE = re.compile(r"[ \t]*\+?([0-9]+)")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_SEPARATORS = ", \t"


def _split(spec: str, what: str) -> list[str]:
    """The names of ``spec``: split at commas, spaces and tabs outside brackets."""
    m = _CONTROL_RE.search(spec)
    if m:
        raise UsageError(f"invalid {what} {spec!r}: control character {m.group(0)!r} (Slurm keeps "
                         f"it in a host name, {REFUSED_HERE}); separate names with ',' or ' '")
    items: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(spec):
        if ch == "[":
            if depth:
                raise UsageError(f"invalid {what} {spec!r}: '[' inside brackets (Slurm may keep it "
                                 f"in a host name, {REFUSED_HERE})")
            depth = 1
        elif ch == "]":
            if not depth:
                raise UsageError(f"invalid {what} {spec!r}: ']' without '[' (Slurm may keep it in "
                                 f"a host name, {REFUSED_HERE})")
            depth = 0
        elif ch in _SEPARATORS and not depth:   # a comma inside brackets separates ranges
            items.append(spec[start:i])
            start = i + 1
    if depth:
        raise UsageError(f"invalid {what} {spec!r}: '[' without ']' (Slurm turns an unclosed "
                         f"bracket into odd host names, {REFUSED_HERE})")
    items.append(spec[start:])
    return [item for item in items if item]


def _slurm_reads_loosely(part: str) -> bool:
    """Whether Slurm takes ``part`` (not a plain ``lo`` or ``lo-hi``) as a valid range."""
    lo_text, _, hi_text = part.partition("-")
    if "x" in part or hi_text.startswith("-"):   # Slurm refuses boxes and negative numbers
        return False
    if hi_text:
        lo, hi = _LOOSE_NUMBER_RE.match(lo_text), _LOOSE_NUMBER_RE.fullmatch(hi_text)
    else:
        lo = hi = _LOOSE_NUMBER_RE.fullmatch(lo_text)
    if not (lo and hi):
        return False
    lo_n, hi_n = int(lo.group(1)), int(hi.group(1))
    return lo_n <= hi_n <= MAX_NUMBER and hi_n - lo_n < MAX_RANGE


def _ranges(body: str, spec: str, what: str) -> list[tuple[int, int, int]]:
    """``01-03,07`` -> [(1, 3, width 2), (7, 7, width 1)]."""
    out = []
    for part in body.split(","):
        m = _RANGE_RE.fullmatch(part)
        if not m:
            loose = (f" (Slurm reads it loosely, {REFUSED_HERE})" if _slurm_reads_loosely(part)
                     else "")
            raise UsageError(f"invalid {what} {spec!r}: {part!r} in [] is not a number or a range "
                             f"of numbers, e.g. gpu[01-04,07]{loose}")
        lo, hi = int(m.group(1)), int(m.group(2) if m.group(2) is not None else m.group(1))
        if hi > MAX_NUMBER:
            raise UsageError(f"invalid {what} {spec!r}: number in {part!r} is larger than "
                             f"{MAX_NUMBER:,} (Slurm clamps or wraps it, {REFUSED_HERE})")
        if hi < lo:
            raise UsageError(f"invalid {what} {spec!r}: range {part!r} runs backwards")
        if hi - lo + 1 > MAX_RANGE:
            raise UsageError(f"invalid {what} {spec!r}: range {part!r} has more than {MAX_RANGE:,} "
                             "hosts (Slurm's limit per range)")
        out.append((lo, hi, len(m.group(1))))
    return out


def _parse(item: str, spec: str, what: str) -> tuple[list[str], list[list[tuple[int, int, int]]]]:
    """A name as its texts and bracket groups: ``a[1-2]b[3]`` -> (["a", "b"], [[(1,2,1)], [(3,3,1)]])."""
    texts: list[str] = []
    groups: list[list[tuple[int, int, int]]] = []
    rest = item
    while "[" in rest:
        head, _, tail = rest.partition("[")
        body, _, rest = tail.partition("]")
        texts.append(head)
        groups.append(_ranges(body, spec, what))
    if groups and rest:
        raise UsageError(f"invalid {what} {spec!r}: text {rest!r} after the last ']' (Slurm "
                         "allows none)")
    if not groups:
        texts.append(rest)
    return texts, groups


def _count(groups: list[list[tuple[int, int, int]]]) -> int:
    n = 1
    for g in groups:
        n *= sum(hi - lo + 1 for lo, hi, _ in g)
    return n


def expand_hostlist(spec: str, what: str = "hostlist") -> list[str]:
    """Expand a Slurm hostlist such as ``gpu[01-03,07],login1`` into host names.

    ``what`` names the value in the one-line error (``--hosts``, ``Nodes=``). Raises
    ``UsageError`` for a malformed list and for one of more than ``MAX_HOSTS`` names."""
    parsed = [_parse(item, spec, what) for item in _split(spec, what)]
    total = sum(_count(groups) for _, groups in parsed)
    if total > MAX_HOSTS:
        raise UsageError(f"invalid {what} {spec[:80]!r}: {total:,} host names, more than the "
                         f"{MAX_HOSTS:,} clusterbench expands (Slurm has no such limit, "
                         f"{REFUSED_HERE})")
    hosts: list[str] = []
    for texts, groups in parsed:
        if not groups:
            hosts.append(texts[0])
            continue
        choices = [[f"{i:0{width}d}" for lo, hi, width in g for i in range(lo, hi + 1)] for g in groups]
        # Slurm's order: the last bracket varies fastest, then the first, the second, ... and the
        # one before the last slowest (x[1-2]y[1-2]z[1-2]: x1y1z1 x1y1z2 x2y1z1 x2y1z2 x1y2z1 ...)
        order = [*range(len(groups) - 2, -1, -1), len(groups) - 1] if len(groups) > 1 else [0]
        for picked in itertools.product(*(choices[i] for i in order)):
            numbers = dict(zip(order, picked))
            hosts.append("".join(t + numbers[i] for i, t in enumerate(texts)))
    return hosts
