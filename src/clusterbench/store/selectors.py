"""The one grammar that picks stored runs, for every command that reads them.

A selector is one or more terms joined by commas; a run must match every term::

    12              run 12
    3..7  3-7       runs 3 to 7 (inclusive)
    last            the newest run (of those the other terms and --since match)
    last~2          the one before the one before it (git's ``HEAD~2``)
    env=prod        runs tagged env=prod (several: env=prod,node=gpu-07)
    bench:NAME      runs that measured NAME: a benchmark (all_reduce, stream, osu_bw), a family
                    (collectives, rdma), or, for imported logs, the tool (rccl-tests, babelstream)

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

# Run ids are 64-bit signed integers in both engines; a larger number is a typo, not a query.
MAX_RUN_ID = 2**63 - 1
BENCH_PREFIX = "bench:"
TERMS = "a run id (12), a range (3..7 or 3-7), last, last~N, KEY=VALUE or bench:NAME"
GRAMMAR = f"{TERMS}, joined by commas"

_RANGE = re.compile(r"^(\d+)\s*(?:\.\.|-)\s*(\d+)$")
_LAST = re.compile(r"^last(?:~(\d+))?$")


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


def _run_id(text: str, selector: str) -> int:
    value = int(text)
    if value > MAX_RUN_ID:
        raise UsageError(f"invalid selector {selector!r}: run id {text} is out of range")
    return value


def bench_filter(name: str) -> BenchFilter:
    """``bench:NAME``: a family's benchmarks, a benchmark (or its alias), and a tool of that name."""
    name = name.strip()
    if not name:
        raise UsageError("empty benchmark name: expected bench:NAME, e.g. bench:all_reduce")
    for fam in FAMILIES:
        if fam.name == name:
            return BenchFilter(name, fam.benchmarks, fam.prefixes, tool=name)
    for fam in FAMILIES:
        if name in fam.aliases:  # another spelling of a benchmark: allreduce
            return BenchFilter(name, (fam.aliases[name],), tool=name)
    return BenchFilter(name, (name,), tool=name)


def parse_selector(text: str) -> Selector:
    """A selector's terms (see the module's docstring); one ``UsageError`` line when it is not one."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"empty selector: expected {GRAMMAR}")
    ids: list[int] = []
    ranges: list[tuple[int, int]] = []
    tags: dict[str, str] = {}
    benches: list[BenchFilter] = []
    last: int | None = None
    for raw in text.split(","):
        term = raw.strip()
        if term.isdigit():
            ids.append(_run_id(term, text))
        elif m := _RANGE.match(term):
            lo, hi = _run_id(m.group(1), text), _run_id(m.group(2), text)
            if lo > hi:
                raise UsageError(f"invalid selector {text!r}: range {term} runs backwards")
            ranges.append((lo, hi))
        elif m := _LAST.match(term):
            if last is not None:
                raise UsageError(f"invalid selector {text!r}: last given twice")
            last = _run_id(m.group(1) or "0", text)
        elif term.startswith(BENCH_PREFIX):
            benches.append(bench_filter(term[len(BENCH_PREFIX):]))
        elif "=" in term and term.partition("=")[0].strip():
            key, _, value = term.partition("=")
            tags[key.strip()] = value.strip()
        else:
            raise UsageError(f"invalid selector {text!r}: {term!r} is not {TERMS}")
    return Selector(text.strip(), tuple(ids), tuple(ranges), last, tags, tuple(benches))


_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w)$", re.IGNORECASE)
_SECONDS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


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
    return when.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
