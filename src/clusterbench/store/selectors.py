r"""The one grammar that picks stored runs, for every command that reads them.

A selector is one or more terms joined by commas; a run must match every term::

    12              run 12
    3..7  3-7       runs 3 to 7 (inclusive)
    last            the newest run (of those the other terms and --since match)
    last~2          the one before the one before it (git's ``HEAD~2``)
    env=prod        runs tagged env=prod (several: env=prod,node=gpu-07)
    team="a,b"      a KEY or VALUE in double quotes is taken exactly as written: commas, '=',
                    ':', spaces and quotes included ("bench:x"=1, ""=x, k=" v "); inside the
                    quotes \\ is a backslash, \" a quote, and \n \r \t \xHH \uHHHH \UHHHHHHHH
                    the characters ``printable`` shows escaped that way
    bench:NAME      runs that measured NAME: a benchmark (all_reduce, stream, osu_bw), a family
                    (collectives, rdma), or, for imported logs, the tool (rccl-tests, babelstream)

Every tag a run can hold has a term that picks exactly the runs holding it: ``tag_term`` writes
it (quoting only what needs it), and ``results list/show`` print tags that way.

``--since 7d`` (also ``12h``, ``30m``, ``2w``, an ISO date or time in UTC) keeps runs started at
or after then. Several selectors given to one command add up (validate 3 4 env=x); commands that
compare groups take one selector per group. ``parse_selector`` checks the text; ``Store.select``
runs it as one SQL query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from clusterbench.errors import UsageError
from clusterbench.families import FAMILIES
from clusterbench.printable import not_utf8, printable

# Run ids are 64-bit signed integers in both engines; a larger number is a typo, not a query.
MAX_RUN_ID = 2**63 - 1
BENCH_PREFIX = "bench:"
TERMS = 'a run id (12), a range (3..7 or 3-7), last, last~N, KEY=VALUE ("KEY"="VALUE" quoted) or bench:NAME'
GRAMMAR = f"{TERMS}, joined by commas"

# [0-9], not \d: a run id is ASCII digits (``whole_number``'s rule), never ``９`` or ``٣``
_RANGE = re.compile(r"^([0-9]+)\s*(?:\.\.|-)\s*([0-9]+)$")
_LAST = re.compile(r"^last(?:~([0-9]+))?$")


@dataclass(frozen=True)
class BenchFilter:
    """What ``bench:NAME`` matches: these benchmark names, benchmarks starting with these
    prefixes (OSU's ``osu_*``), or imports whose source is this tool."""

    name: str
    benchmarks: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    tool: str = ""


@dataclass(frozen=True)
class Selector:
    text: str
    ids: tuple[int, ...] = ()
    ranges: tuple[tuple[int, int], ...] = ()
    last: int | None = None                  # N of last~N; 0 for last; None: every match
    tags: dict[str, str] = field(default_factory=dict)
    benchmarks: tuple[BenchFilter, ...] = ()


def _run_id(text: str, selector: str, what: str = "run id ") -> int:
    # the length first: int() refuses more than 4300 digits (leading zeros too) with a ValueError
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(MAX_RUN_ID)) or int(digits) > MAX_RUN_ID:
        # the whole selector: the number alone does not say which term it was (last~N, a range's end)
        raise UsageError(f"invalid selector {selector!r}: {what}{text} is out of range")
    return int(digits)


def bench_filter(name: str) -> BenchFilter:
    """``bench:NAME``: a family's benchmarks, a benchmark (or its alias), and a tool of that name."""
    name = name.strip()
    if not name:
        raise UsageError("empty benchmark name: expected bench:NAME, e.g. bench:all_reduce")
    if not_utf8(name):  # no run holds one, and no database query can carry it
        raise UsageError(f"invalid benchmark name {name!r}: not UTF-8 text")
    for fam in FAMILIES:
        if fam.name == name:
            return BenchFilter(name, fam.benchmarks, fam.prefixes, tool=name)
    for fam in FAMILIES:
        if name in fam.aliases:  # another spelling of a benchmark: allreduce
            return BenchFilter(name, (fam.aliases[name],), tool=name)
    return BenchFilter(name, (name,), tool=name)


# Inside quotes: the escapes ``printable`` writes (so a tag shown escaped can be typed back as
# shown), and the quote and backslash themselves. Nothing else, so a typo is an error, not a guess.
_ESCAPE = re.compile(r'\\(?:(["\\nrt])|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))')
_NAMED = {'"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t"}
# A part written bare must read back as itself: a term's separator, the quote, the escape
# character (and '=' in a key) make it quoted, and so does anything ``printable`` escapes.
_QUOTED_KEY = re.compile(r'[,="\\]')
_QUOTED_VALUE = re.compile(r'[,"\\]')


def _quote(part: str) -> str:
    # printable's escapes are the ones _unquote reads, and they leave no control character in the
    # term: what is shown on a terminal can be typed back
    return '"' + printable(part.replace("\\", "\\\\").replace('"', '\\"')) + '"'


def tag_term(key: str, value: str) -> str:
    """The selector term that picks exactly the runs tagged ``key=value``: ``env=prod`` as
    people type it; a key or value that would read back otherwise is quoted (``team="a,b"``)."""
    bare_key = (bool(key) and key == key.strip() and not key.startswith(BENCH_PREFIX)
                and not _QUOTED_KEY.search(key) and printable(key) == key)
    bare_value = value == value.strip() and not _QUOTED_VALUE.search(value) and printable(value) == value
    return f"{key if bare_key else _quote(key)}={value if bare_value else _quote(value)}"


def _unquote(text: str, start: int) -> tuple[str, int]:
    """The quoted string opening at ``text[start]``, decoded, and the index after its closing quote."""
    i = start + 1
    out: list[str] = []
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        m = _ESCAPE.match(text, i)
        if m is None:
            raise UsageError(f"invalid selector {text!r}: unknown escape {text[i:i + 2]!r} in quotes "
                             '(\\\\, \\", \\n, \\r, \\t, \\xHH, \\uHHHH, \\UHHHHHHHH)')
        if m.group(1):
            out.append(_NAMED[m.group(1)])
        else:
            code = int(m.group(2) or m.group(3) or m.group(4), 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:   # no tag holds one: UTF-8 cannot
                raise UsageError(f"invalid selector {text!r}: {m.group()!r} is not a character")
            out.append(chr(code))
        i = m.end()
    raise UsageError(f"invalid selector {text!r}: a quote opened at {text[start:start + 12]!r} is never closed")


def _skip_space(text: str, i: int) -> int:
    # str.isspace is what str.strip removes: bare parts and the space around quotes agree
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _split_terms(text: str) -> list[tuple[str, str | None, str]]:
    """The terms of a selector, split at the commas outside quotes: (raw text, tag key, tag
    value); the key is None for a term that is not a tag (an id, a range, last, bench:NAME)."""
    terms: list[tuple[str, str | None, str]] = []
    i, n = 0, len(text)
    while True:
        start = _skip_space(text, i)
        if start < n and text[start] == '"':
            key, i = _unquote(text, start)
            i = _skip_space(text, i)
            if i >= n or text[i] != "=":
                raise UsageError(f"invalid selector {text!r}: a quoted KEY must be followed by =VALUE")
        else:
            stop = min((j for j in (text.find(",", start), text.find("=", start)) if j >= 0), default=n)
            key = text[start:stop].strip()
            # bench:NAME keeps what it meant before quotes existed: the name is the whole term
            if stop == n or text[stop] == "," or key.startswith(BENCH_PREFIX) or not key:
                stop = text.find(",", start)
                stop = n if stop < 0 else stop
                terms.append((text[start:stop].strip(), None, ""))
                if stop == n:
                    return terms
                i = stop + 1
                continue
            i = stop
        i = _skip_space(text, i + 1)   # after the '='
        if i < n and text[i] == '"':
            value, i = _unquote(text, i)
            i = _skip_space(text, i)
            if i < n and text[i] != ",":
                raise UsageError(f"invalid selector {text!r}: text after a closing quote: {text[i:i + 12]!r}")
        else:
            stop = text.find(",", i)
            stop = n if stop < 0 else stop
            value, i = text[i:stop].strip(), stop
        terms.append((text[start:i].strip(), key, value))
        if i >= n:
            return terms
        i += 1


def parse_selector(text: str) -> Selector:
    """A selector's terms (see the module's docstring); one ``UsageError`` line when it is not one."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"empty selector: expected {GRAMMAR}")
    ids: list[int] = []
    ranges: list[tuple[int, int]] = []
    tags: dict[str, str] = {}
    benches: list[BenchFilter] = []
    last: int | None = None
    for term, key, value in _split_terms(text):
        if key is not None:
            if tags.get(key, value) != value:   # a run has one value per key: nothing would match
                raise UsageError(f"invalid selector {text!r}: tag {key!r} given twice with different values")
            tags[key] = value
        elif term.isascii() and term.isdecimal():  # ASCII: int() also takes "９" and "٣"
            ids.append(_run_id(term, text))
        elif m := _RANGE.match(term):
            lo, hi = _run_id(m.group(1), text), _run_id(m.group(2), text)
            if lo > hi:
                raise UsageError(f"invalid selector {text!r}: range {term} runs backwards")
            ranges.append((lo, hi))
        elif m := _LAST.match(term):
            if last is not None:
                raise UsageError(f"invalid selector {text!r}: last given twice")
            last = _run_id(m.group(1) or "0", text, "last~")
        elif term.startswith(BENCH_PREFIX):
            benches.append(bench_filter(term[len(BENCH_PREFIX):]))
        else:
            raise UsageError(f"invalid selector {text!r}: {term!r} is not {TERMS}")
    if any(not_utf8(t) for t in (*tags, *tags.values())):  # as typed, or a quoted \udcff: no tag holds one
        raise UsageError(f"invalid selector {text!r}: not UTF-8 text")
    return Selector(text.strip(), tuple(ids), tuple(ranges), last, tags, tuple(benches))


_AGO = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*(s|m|min|h|d|w)$", re.IGNORECASE)
_SECONDS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str, option: str = "--window") -> float:
    """An age (``7d``, ``12h``, ``30m``, ``2w``, ``90s``, ``1.5d``) in seconds: a window that moves
    with the clock, as ``--window`` takes it."""
    m = _AGO.match(text.strip())
    if not m or not 0 < (seconds := float(m.group(1)) * _SECONDS[m.group(2).lower()]) < 1e12:
        raise UsageError(f"invalid {option} {text!r}: expected an age such as 2d, 12h or 30m")
    return seconds


def parse_since(text: str, now: datetime | None = None) -> str:
    """``--since``: ``7d``, ``12h``, ``30m``, ``2w``, ``90s``, ``1.5d``, or an ISO date/time (UTC unless it
    says otherwise), as the timestamp form runs are stored with (``2026-11-23T18:13:34.099Z``)."""
    value = text.strip()
    now = now or datetime.now(timezone.utc)
    m = _AGO.match(value)
    if m:
        try:
            when = now - timedelta(seconds=float(m.group(1)) * _SECONDS[m.group(2).lower()])
        except OverflowError:   # longer ago than the calendar goes: every run
            when = datetime.min.replace(tzinfo=timezone.utc)
    else:
        try:
            when = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
        except ValueError:
            raise UsageError(f"invalid --since {text!r}: expected e.g. 7d, 12h, 30m or an ISO date "
                             "(2026-11-01, 2026-11-01T08:00)") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
    try:
        when = when.astimezone(timezone.utc)
    except OverflowError:
        # a time zone that moves the date past the calendar's first or last day (0001-01-01T00:00+05:00):
        # before every run, or after every run
        edge = datetime.min if when.year == datetime.min.year else datetime.max
        when = edge.replace(tzinfo=timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
