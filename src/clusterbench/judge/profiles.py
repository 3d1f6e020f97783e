"""Validation profiles: declarative YAML criteria, loaded with a strict schema (never evaluated).

A profile::

    name: my-cluster
    description: what it checks
    criteria:
      - name: all_reduce 8 GiB in-place busbw
        source: vendor guide, Table 4
        benchmark: all_reduce
        metric: busbw
        params: {placement: in, bytes: 8589934592}
        op: ">="            # >=, >, <=, <, range
        value: 304          # or baseline: 316.5 with pct: 95 (>= 95% of the baseline)
        unit: GB/s          # unit of the threshold; converted to the measurement's unit
        aggregate: all      # all (every match must pass), min, max, mean, median
      - name: no slow host
        benchmark: all_reduce
        metric: busbw
        params: {placement: in}
        outliers: none      # degraded-node criterion (modified z-score, see judge.outliers)
        by: host            # a param name, "run", or "tag:KEY"
    hardware:               # optional: what it is for (judge/hardware.py); others are skipped
      devices: ['(NVIDIA )?H100 80GB HBM3']
    vendor: nvidia          # optional: the GPUs a launcher's pods need (``launch k8s``)
    suite:                  # optional: what ``clusterbench qualify`` runs before judging
      - name: memory bandwidth
        command: [stream, -s, 256M, -n, 50]   # a benchmark command as an argument list

Any unknown key, unknown operator, missing field, unit the unit table does not know (or of
another kind than the metric's: a time for a bandwidth) or param that is not a size where one is
expected (``bytes: 8G`` is 8589934592, as on the command line) is a UsageError naming the
criterion and its line in the file; so are a negative bandwidth, time or FLOP-rate threshold
(``>= -5 GB/s`` passes anything), a unit on a metric that has none, and a benchmark spelt nearly
as a known one (``all_reduse``).
"""

from __future__ import annotations

import difflib
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from clusterbench.choices import GPU_VENDORS
from clusterbench.errors import UsageError
from clusterbench.families import FAMILIES, by_command, family_of, metric_of
from clusterbench.families.base import Family
from clusterbench.families.collectives.spec import DTYPE_ALIASES as COLL_DTYPE_ALIASES
from clusterbench.families.gemm.spec import ALIASES as GEMM_DTYPE_ALIASES
from clusterbench.judge.hardware import Hardware, parse_hardware
from clusterbench.printable import printable
from clusterbench.textfile import read_user_text
from clusterbench.units import convert, format_plain, format_threshold, parse_size, unit_scale

OPERATORS = (">=", ">", "<=", "<", "range")
AGGREGATES = ("all", "min", "max", "mean", "median")
_PROFILE_KEYS = {"name", "description", "source", "notes", "criteria", "suite", "hardware",
                 "vendor"}
_STEP_KEYS = {"name", "command"}
# Options qualify sets on every step itself: where runs are stored and how output is printed.
RESERVED_STEP_OPTIONS = ("--db", "--db-passfile", "--json", "--repeat")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Params that hold sizes or counts: written as on the command line (8G, 1M: binary, as nccl-tests).
SIZE_PARAMS = frozenset({"bytes", "count", "array_size", "m", "n", "k", "batch"})
# Each family stores one spelling of a dtype (gemm fp32, collectives and stream float): a criterion
# written with another (float for a GEMM, fp32 for an all_reduce) would match nothing.
DTYPE_ALIASES = {"gemm": GEMM_DTYPE_ALIASES, "collectives": COLL_DTYPE_ALIASES, "stream": COLL_DTYPE_ALIASES}
# Keys of an outliers criterion that a bound criterion has no use for: its op says which way is
# better, and it compares with a threshold, not with the other hosts.
_OUTLIER_ONLY = ("by", "threshold", "min_rel_dev", "higher_is_better")

@dataclass(frozen=True)
class Criterion:
    name: str
    benchmark: str
    metric: str
    params: dict[str, Any] = field(default_factory=dict)
    # params written as null: a matching measurement must not have them (a bidirectional pair's
    # total has no ``leg``; without this its criterion would also judge each leg)
    absent: tuple[str, ...] = ()
    source: str = ""
    note: str = ""
    op: str = ">="
    value: float | None = None
    low: float | None = None  # range bounds
    high: float | None = None
    baseline: float | None = None
    pct: float | None = None
    unit: str = ""
    aggregate: str = "all"
    outliers: bool = False
    by: str = "host"
    threshold: float = 3.5
    min_rel_dev: float = 0.05
    higher_is_better: bool | None = None

    def bound(self) -> float | None:
        """The single threshold of a >=, >, <=, < criterion (baseline * pct / 100 if given)."""
        if self.value is not None:
            return self.value
        if self.baseline is not None and self.pct is not None:
            # exact, then rounded once: 100% of a baseline is the baseline itself (x * 100 / 100
            # can be an ulp above it and fail the very run it came from), and 95% of 1e308 is
            # not inf
            return float(Fraction(self.baseline) * Fraction(self.pct) / 100)
        return None

    def describe(self, unit: str = "") -> str:
        """The threshold as the profile states it, in the criterion's own unit (else ``unit``,
        the measurements'), without exponents: ``>= 4,177,285 MB/s``."""
        return self._text(self.unit or unit, format_plain)

    def describe_in(self, unit: str) -> str:
        """The threshold in ``unit``, the measurements' own, to 6 significant digits: a bound
        beside a measurement reads in its unit (``>= 4,177.29 GB/s`` for 4,177,285 MB/s, not
        GB/s measured against MB/s) and without float noise (``0.81039``, not ``0.810390207374``).
        As stated where the units do not convert."""
        try:
            convert(1.0, self.unit, unit)
        except ValueError:
            return self.describe(unit)
        return self._text(unit, lambda x: format_threshold(convert(x, self.unit, unit)))

    def _text(self, unit: str, shown: Callable[[float], str]) -> str:
        u = f" {unit}" if unit else ""

        def num(x: float | None) -> str:
            return shown(x or 0)

        if self.outliers:
            return f"no outlier by {self.by} (|modified z| > {self.threshold:g})"
        if self.op == "range":
            return f"{num(self.low)}..{num(self.high)}{u}"
        if self.baseline is not None:
            return (f"{self.op} {format_plain(self.pct or 0)}% of {num(self.baseline)}{u} "
                    f"= {num(self.bound())}{u}")
        return f"{self.op} {num(self.value)}{u}"


@dataclass(frozen=True)
class SuiteStep:
    """One benchmark of a profile's suite: a clusterbench command as an argument list."""

    name: str
    command: tuple[str, ...]


@dataclass(frozen=True)
class Profile:
    name: str
    criteria: tuple[Criterion, ...]
    description: str = ""
    source: str = ""
    path: str = ""
    suite: tuple[SuiteStep, ...] = ()
    notes: str = ""
    # the devices (or CPUs) its thresholds hold for; None: any (judge/hardware.py)
    hardware: Hardware | None = None
    # the GPU vendor (GPU_VENDORS) a launcher's pods need: not derived from hardware, whose
    # patterns match names, not vendors (a CPU profile has hardware and no vendor)
    vendor: str | None = None


def _number(where: str, key: str, v: Any) -> float:
    try:
        x = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan
    except OverflowError:   # an integer of hundreds of digits
        x = math.nan
    if not math.isfinite(x):
        shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:37] + "..."
        raise UsageError(f"{where}: {key} must be a number, got {shown}")
    return x


def _text(where: str, key: str, v: Any, required: bool = False) -> str:
    if v is None and not required:
        return ""
    if not isinstance(v, str) or (required and not v.strip()):
        raise UsageError(f"{where}: {key} must be a non-empty string, got {v!r}")
    return v


class _Where:
    """Names a criterion in messages: its position, name and line in the YAML file."""

    def __init__(self, i: int, d: Any) -> None:
        self.d = d
        self.name = f"criterion {i + 1}" + (f" ({d['name']!r})" if isinstance(d, dict)
                                            and isinstance(d.get("name"), str) else "")
        self.line = getattr(d, "line", None)

    def at(self, key: str | None = None) -> str:
        line = getattr(self.d, "key_lines", {}).get(key, self.line) if key else self.line
        return f"{self.name}, line {line}" if line else self.name

    def __str__(self) -> str:
        return self.at()


def _physical(benchmark: str, metric: str, unit: str) -> str:
    """The unit that makes a threshold a bandwidth, a time or a FLOP rate (never negative), or ""."""
    known = metric_of(benchmark, metric)
    for u in (unit, known.unit if known is not None else ""):
        if u and unit_scale(u) is not None:
            return u
    return ""


def _benchmark(w: _Where, name: str) -> str:
    """The benchmark as stored (another spelling, ``allreduce``, is ``all_reduce``). One no family
    knows may come from imported JSON lines and is kept, unless it is spelt nearly as a known one
    (``all_reduse``): that criterion could never match and would only ever be skipped."""
    name = next((f.aliases[name] for f in FAMILIES if name in f.aliases), name)
    if family_of(name) is None:
        known = sorted({b for f in FAMILIES for b in (*f.benchmarks, *f.aliases)})
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        if near:
            raise UsageError(f"{w.at('benchmark')}: unknown benchmark {name!r} (did you mean {near[0]}?)")
    return name


def _param(w: _Where, key: str, value: Any, family: Family | None, top: bool = True) -> Any:
    """A param value as measurements hold it: sizes written as on the command line become numbers,
    a dtype the family's spelling. A list means any of its values; a mapping, a list in a list or
    an empty list could match no measurement and is refused."""
    if isinstance(value, list) and top:
        if not value:
            raise UsageError(f"{w.at('params')}: params.{key} is an empty list, which matches nothing")
        return [_param(w, key, v, family, False) for v in value]
    if isinstance(value, (dict, list)):
        raise UsageError(f"{w.at('params')}: params.{key} must be a value or a list of values, got {value!r}")
    if key == "dtype" and isinstance(value, str) and family is not None and family.name in DTYPE_ALIASES:
        low = value.strip().lower()   # these families store dtypes in lower case
        return DTYPE_ALIASES[family.name].get(low, low)
    if key in SIZE_PARAMS and isinstance(value, int) and not isinstance(value, bool) and value < 0:
        raise UsageError(f"{w.at('params')}: params.{key} must not be negative, got {value}")
    if key not in SIZE_PARAMS or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, str):
        try:
            return parse_size(value, f"params.{key}")
        except UsageError as e:
            raise UsageError(f"{w.at('params')}: {e}") from None
    raise UsageError(f"{w.at('params')}: params.{key} must be a size such as 8589934592 or 8G, got {value!r}")


# -- a criterion, field by field --------------------------------------------------------------
# A reader takes (where, the key, its value, the fields read so far by Criterion attribute) and
# returns the value the Criterion holds, or raises a one-line UsageError naming the key.
_Read = Callable[[_Where, str, Any, dict[str, Any]], Any]
_Limit = Callable[[_Where, str, Any], None]
_LEFT_OUT = object()


@dataclass(frozen=True)
class _Field:
    """One key of a criterion. ``default``: what a missing key reads as (none: a missing key is
    left out and the Criterion's own default stands); ``attr``: the Criterion attribute it fills,
    when not the key's name; ``limit``: a check of the value read, once every field of its table
    is read (so a value of the wrong type is named before a number out of range)."""

    key: str
    read: _Read
    default: Any = _LEFT_OUT
    attr: str = ""
    limit: _Limit | None = None


def _string(required: bool = False) -> _Read:
    return lambda w, key, v, got: _text(w.at(key), key, v, required)


def _a_number(w: _Where, key: str, v: Any, got: dict[str, Any]) -> float:
    return _number(w.at(key), key, v)


def _one_of(choices: tuple[str, ...]) -> _Read:
    def read(w: _Where, key: str, v: Any, got: dict[str, Any]) -> Any:
        if v not in choices:
            raise UsageError(f"{w.at(key)}: {key} must be one of {', '.join(choices)}, got {v!r}")
        return v
    return read


def _read_benchmark(w: _Where, key: str, v: Any, got: dict[str, Any]) -> str:
    return _benchmark(w, _text(w.at(key), key, v, True))


def _read_metric(w: _Where, key: str, v: Any, got: dict[str, Any]) -> str:
    family = family_of(got["benchmark"])
    if family is not None and family.metric(str(v)) is None:   # a typo would never match
        known = ", ".join(m.name for m in family.metrics)
        raise UsageError(f"{w.at(key)}: {w.d['benchmark']} has no metric {v!r} (it has: {known})")
    return _text(w.at(key), key, v, True)


def _read_params(w: _Where, key: str, v: Any, got: dict[str, Any]) -> dict[str, Any]:
    if v is None:   # no params (or "params:" with nothing after it): every measurement
        return {}
    if not isinstance(v, dict):   # 0, "" or [] are no mapping: never "no params"
        raise UsageError(f"{w.at(key)}: params must be a mapping")
    for k in v:   # ~: 1 or 3: 1 is no param any measurement has
        if not isinstance(k, str) or not k:
            raise UsageError(f"{w.at(key)}: a param name must be a non-empty string, got {k!r}")
    family = family_of(got["benchmark"])
    return {k: _param(w, k, x, family) for k, x in v.items() if x is not None}


def _read_absent(w: _Where, key: str, v: Any, got: dict[str, Any]) -> tuple[str, ...]:
    """The params written as null (the mapping itself was checked by ``_read_params``)."""
    return tuple(k for k, x in (v or {}).items() if x is None)


def _read_flag(w: _Where, key: str, v: Any, got: dict[str, Any]) -> bool | None:
    if v is not None and not isinstance(v, bool):
        raise UsageError(f"{w.at(key)}: {key} must be true or false")
    return v


def _read_outliers(w: _Where, key: str, v: Any, got: dict[str, Any]) -> bool:
    """``outliers: none`` makes the criterion an outliers criterion: only its keys apply."""
    if v != "none":
        raise UsageError(f"{w.at(key)}: outliers must be 'none', got {v!r}")
    extra = sorted(set(map(str, w.d)) - _OUTLIER_KEYS)
    if extra:
        raise UsageError(f"{w.at(extra[0])}: key(s) {', '.join(extra)} do not apply to an outliers criterion")
    return True


def _read_unit(w: _Where, key: str, v: Any, got: dict[str, Any]) -> str:
    """The threshold's unit: one the metric's own converts to (checked here, so that a profile
    that loads can be judged), or the metric's own unit as written where the unit table does not
    know it (``tok/s``)."""
    unit = _text(w.at(key), key, v)
    if not unit:
        return ""
    known = metric_of(got["benchmark"], got["metric"])
    if known is not None and unit == known.unit:
        return unit
    scale = unit_scale(unit)
    if scale is None:
        raise UsageError(f"{w.at(key)}: unknown unit {unit!r} (e.g. GB/s, MB/s, Gbps, Gbit/s, "
                         "TFLOP/s, GFLOPS, us, ms)")
    if known is None:
        return unit
    what = f"{w.d.get('benchmark')} {w.d.get('metric')}"
    if not known.unit:   # a count or a ratio: no unit converts to it
        raise UsageError(f"{w.at(key)}: unit {unit!r} given, but {what} has no unit")
    theirs = unit_scale(known.unit)
    if theirs is None:
        raise UsageError(f"{w.at(key)}: unit {unit!r} given, but {what} is in {known.unit}")
    if theirs[0] != scale[0]:
        raise UsageError(f"{w.at(key)}: unit {unit!r} is a {scale[0]}, but {what} is in {known.unit}")
    return unit


def _positive(w: _Where, key: str, x: float) -> None:
    if x <= 0:   # a threshold |z| > 0 or less: every value off the median would be an outlier
        raise UsageError(f"{w.at(key)}: {key} must be positive, got {x:g}")


def _not_negative(w: _Where, key: str, x: float) -> None:
    if x < 0:
        raise UsageError(f"{w.at(key)}: {key} must not be negative, got {x:g}")


def _positive_pct(w: _Where, key: str, x: float) -> None:
    if x <= 0:
        raise UsageError(f"{w.at(key)}: pct must be positive")


_REQUIRED = ("name", "benchmark", "metric")
# Every criterion, in the order its keys are read: what it judges and where it comes from.
_COMMON = (
    _Field("benchmark", _read_benchmark),
    _Field("metric", _read_metric),
    _Field("params", _read_params, default=None),
    _Field("params", _read_absent, default=None, attr="absent"),
    _Field("name", _string(required=True)),
    _Field("source", _string()),
    _Field("note", _string()),
    _Field("higher_is_better", _read_flag),
)
# A degraded-node criterion (``outliers: none``): the hosts (or runs, or tag values) compared.
_OUTLIER = (
    _Field("outliers", _read_outliers),
    _Field("by", _string(required=True), default="host"),
    _Field("threshold", _a_number, default=3.5, limit=_positive),
    _Field("min_rel_dev", _a_number, default=0.05, limit=_not_negative),
)
# A bound: how it compares and in what unit, then its threshold, in the keys its op takes
# (``_refuse_keys_the_op_does_not_take``).
_BOUND = (
    _Field("op", _one_of(OPERATORS), default=None),
    _Field("aggregate", _one_of(AGGREGATES), default="all"),
    _Field("unit", _read_unit, default=None),
)
_THRESHOLD = (
    _Field("value", _a_number),
    _Field("min", _a_number, attr="low"),
    _Field("max", _a_number, attr="high"),
    _Field("baseline", _a_number),
    _Field("pct", _a_number, limit=_positive_pct),
)
_CRITERION_KEYS = {f.key for f in (*_COMMON, *_OUTLIER, *_BOUND, *_THRESHOLD)}
_OUTLIER_KEYS = {f.key for f in (*_COMMON, *_OUTLIER)}


def _read(w: _Where, fields: tuple[_Field, ...], got: dict[str, Any]) -> None:
    """Read ``fields`` of the criterion ``w`` names into ``got``, in table order, then check
    their limits."""
    read = []
    for f in fields:
        if f.key in w.d:
            value = w.d[f.key]
        elif f.default is not _LEFT_OUT:
            value = f.default
        else:
            continue
        got[f.attr or f.key] = f.read(w, f.key, value, got)
        read.append(f)
    for f in read:
        if f.limit is not None:
            f.limit(w, f.key, got[f.attr or f.key])


def _refuse_keys_the_op_does_not_take(w: _Where, op: str) -> None:
    d = w.d
    if op == "range":
        if "min" not in d or "max" not in d or any(k in d for k in ("value", "baseline", "pct")):
            raise UsageError(f"{w.at('op')}: op range needs min and max (and no value/baseline)")
        return
    if "min" in d or "max" in d:
        raise UsageError(f"{w.at('min' if 'min' in d else 'max')}: min/max are only for op range")
    if "value" in d:
        if "baseline" in d or "pct" in d:
            raise UsageError(f"{w.at('value')}: give either value or baseline with pct, not both")
    elif "baseline" not in d or "pct" not in d:
        raise UsageError(f"{w.at('op')}: op {op} needs value, or baseline and pct")


def _criterion(i: int, d: Any) -> Criterion:
    w = _Where(i, d)
    if not isinstance(d, dict):
        raise UsageError(f"{w}: expected a mapping, got {type(d).__name__}")
    unknown = sorted(set(map(str, d)) - _CRITERION_KEYS)
    if unknown:
        raise UsageError(f"{w.at(unknown[0])}: unknown key(s) {', '.join(unknown)}")
    for key in _REQUIRED:
        if key not in d:
            raise UsageError(f"{w}: missing required key {key!r}")
    got: dict[str, Any] = {}
    _read(w, _COMMON, got)
    if "outliers" in d:
        _read(w, _OUTLIER, got)
        return Criterion(**got)
    extra = [k for k in _OUTLIER_ONLY if k in d]
    if extra:
        raise UsageError(f"{w.at(extra[0])}: key(s) {', '.join(extra)} apply only to an outliers criterion "
                         "(a bound's op says which way is better)")
    _read(w, _BOUND, got)
    _refuse_keys_the_op_does_not_take(w, got["op"])
    _read(w, _THRESHOLD, got)
    if got["op"] == "range" and got["low"] > got["high"]:
        raise UsageError(f"{w.at('min')}: min is greater than max")
    physical = _physical(got["benchmark"], got["metric"], got["unit"])
    for attr, key in (("value", "value"), ("low", "min"), ("high", "max"), ("baseline", "baseline")):
        if physical and got.get(attr) is not None and got[attr] < 0:   # ">= -5 GB/s" passes anything
            raise UsageError(f"{w.at(key)}: {key} must not be negative, got {format_plain(got[attr])} "
                             f"(a {physical} value never is)")
    crit = Criterion(**got)
    try:
        crit.bound()
    except OverflowError:   # 1e308 x 1e308 %: no float holds the bound
        raise UsageError(f"{w.at('pct')}: {format_plain(crit.pct or 0)}% of {format_plain(crit.baseline or 0)} "
                         "is no finite number") from None
    return crit


def _step(i: int, d: Any) -> SuiteStep:
    where = f"suite step {i + 1}"
    if not isinstance(d, dict):
        raise UsageError(f"{where}: expected a mapping with name and command, got {type(d).__name__}")
    if isinstance(d.get("name"), str):
        where = f"suite step {i + 1} ({d['name']!r})"
    unknown = sorted(set(map(str, d)) - _STEP_KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {', '.join(unknown)}")
    cmd = d.get("command")
    if not isinstance(cmd, list) or not cmd or not all(isinstance(w, (str, int, float)) and
                                                       not isinstance(w, bool) for w in cmd):
        raise UsageError(f"{where}: command must be a non-empty list of words, e.g. [stream, -n, 50]")
    words = tuple(str(w) for w in cmd)
    for w in words:
        if _CONTROL.search(w):
            raise UsageError(f"{where}: command word {w!r} holds a control character")
    if by_command(words[0]) is None:
        raise UsageError(f"{where}: {words[0]!r} is not a benchmark command (coll, stream, gemm, "
                         "transfer, net, train, ...)")
    for w in words:
        if w.split("=", 1)[0] in RESERVED_STEP_OPTIONS:
            raise UsageError(f"{where}: {w.split('=', 1)[0]} is set by qualify itself")
    name = _text(where, "name", d.get("name") or " ".join(words), True)
    return SuiteStep(name, words)


def parse_suite(data: Any, origin: str) -> tuple[SuiteStep, ...]:
    if data is None:
        return ()
    if not isinstance(data, list) or not data:
        raise UsageError(f"profile {origin}: suite must be a non-empty list of steps")
    try:
        steps = tuple(_step(i, d) for i, d in enumerate(data))
    except UsageError as e:
        raise UsageError(f"profile {origin}: {e}") from None
    _refuse_duplicates([s.name for s in steps], "suite step", origin, data)
    return steps


def _refuse_duplicates(names: list[str], what: str, origin: str, items: list[Any]) -> None:
    """Names must be unique: a report, JUnit and --on-fail tell criteria apart by name. The
    message names the second one's position and line."""
    for i, n in enumerate(names):
        if n in names[:i]:
            line = getattr(items[i], "line", None)
            at = f", line {line}" if line else ""
            raise UsageError(f"profile {origin}: duplicate {what} name {n!r}: {what} {i + 1}{at} "
                             f"(also {what} {names.index(n) + 1})")


def parse_profile(data: Any, origin: str = "<profile>") -> Profile:
    if not isinstance(data, dict):
        raise UsageError(f"profile {origin}: expected a mapping with name and criteria, "
                         f"got a {type(data).__name__}")
    unknown = sorted(set(map(str, data)) - _PROFILE_KEYS)
    if unknown:
        raise UsageError(f"profile {origin}: unknown key(s) {', '.join(unknown)}")
    crits = data.get("criteria")
    if not isinstance(crits, list) or not crits:
        raise UsageError(f"profile {origin}: no criteria")
    try:
        criteria = tuple(_criterion(i, c) for i, c in enumerate(crits))
    except UsageError as e:
        raise UsageError(f"profile {origin}: {e}") from None
    _refuse_duplicates([c.name for c in criteria], "criterion", origin, crits)
    # str() of a list or a mapping would make a name nobody wrote: a wrong type is an error
    lines = getattr(data, "key_lines", {})
    text = {k: _text(f"profile {origin}, line {lines.get(k, '?')}", k, data.get(k))
            for k in ("name", "description", "source", "notes")}
    vendor = data.get("vendor")
    if vendor is not None and vendor not in GPU_VENDORS:
        raise UsageError(f"profile {origin}, line {lines.get('vendor', '?')}: vendor {vendor!r}: expected "
                         f"{' or '.join(GPU_VENDORS)}")
    return Profile(name=text["name"] or Path(origin).stem, criteria=criteria,
                   description=text["description"], source=text["source"], notes=text["notes"],
                   path=origin, suite=parse_suite(data.get("suite"), origin), vendor=vendor,
                   hardware=parse_hardware(data.get("hardware"),
                                           f"profile {origin}, line {lines.get('hardware', '?')}"))


# Built-in profiles ship as package data next to the code.
BUILTIN_DIR = Path(__file__).resolve().parent.parent / "data" / "profiles"


def builtin_profiles() -> list[str]:
    if not BUILTIN_DIR.is_dir():
        return []
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml"))


# A profile is a few hundred lines (the MI300X one is 8 KB); PyYAML reads about 100 KB a second,
# so a file far larger would hold the command for minutes before failing on its content. 1 MiB
# is thousands of criteria.
MAX_PROFILE_BYTES = 1 << 20
# A built-in profile is named, never reached by a path: "../x" must not leave BUILTIN_DIR.
_BUILTIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def load_profile(name_or_path: str) -> Profile:
    """Load a built-in profile by name (``amd-mi300x-oem``) or a YAML file by path."""
    if not name_or_path:
        raise UsageError("the profile name is empty (give a built-in name or a .yaml file)")
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if path.is_dir():
            raise UsageError(f"profile file {name_or_path} is a directory")
        if not path.exists():
            raise UsageError(f"profile file {name_or_path} does not exist")
        if not path.is_file():   # a FIFO or a device: reading it could block or never end
            raise UsageError(f"profile file {name_or_path} is not a regular file")
        try:
            size = path.stat().st_size
        except OSError as e:
            raise UsageError(f"cannot read profile {name_or_path}: {e.strerror or e}") from None
        if size > MAX_PROFILE_BYTES:
            raise UsageError(f"profile file {name_or_path} is larger than {MAX_PROFILE_BYTES} bytes "
                             f"({size}): no profile is that big")
        text = read_user_text(name_or_path, "profile")
        origin = str(path)
    else:
        res = BUILTIN_DIR / f"{name_or_path}.yaml"
        if not _BUILTIN_NAME.fullmatch(name_or_path) or ".." in name_or_path or not res.is_file():
            known = ", ".join(builtin_profiles()) or "none"
            raise UsageError(f"unknown profile {name_or_path!r} (built-in: {known}; or give a .yaml file)")
        text = res.read_text(encoding="utf-8")
        origin = name_or_path
    # here: most commands never load a profile, and yaml is 10 ms of start-up
    import yaml

    from clusterbench.judge.profile_yaml import load_yaml

    try:
        data = load_yaml(text)
    except yaml.YAMLError as e:
        raise UsageError(f"profile {origin}: invalid YAML{_yaml_where(e, text)}") from None
    except UsageError as e:
        raise UsageError(f"profile {origin}: {e}") from None
    except RecursionError:
        raise UsageError(f"profile {origin}: nested more than {sys.getrecursionlimit()} levels deep") from None
    if data is None:
        raise UsageError(f"profile {origin} is empty: expected a mapping with name and criteria")
    return parse_profile(data, origin)


def _yaml_where(e: Exception, text: str) -> str:
    """`` at line L, column C: what is wrong`` as PyYAML says it (one line, control characters
    escaped), for a message that lets an editor jump to the spot."""
    import yaml

    if isinstance(e, yaml.reader.ReaderError):   # a character YAML does not allow (NUL, ESC)
        return f" at line {text.count(chr(10), 0, e.position) + 1}: character {e.character!r} is not allowed"
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    what = getattr(e, "problem", None) or getattr(e, "context", None)
    return at + (f": {printable(' '.join(str(what).split()))}" if what else "")


def dump_profile(profile: Profile) -> str:
    """YAML text of a profile (used by ``baseline create``); loads back with ``load_profile``."""
    out: dict[str, Any] = {"name": profile.name}
    if profile.description:
        out["description"] = profile.description
    if profile.source:
        out["source"] = profile.source
    if profile.notes:
        out["notes"] = profile.notes
    if profile.hardware is not None:
        out["hardware"] = profile.hardware.to_dict()
    if profile.vendor:
        out["vendor"] = profile.vendor
    if profile.suite:
        out["suite"] = [{"name": st.name, "command": list(st.command)} for st in profile.suite]
    crits = []
    for c in profile.criteria:
        d: dict[str, Any] = {"name": c.name}
        if c.source:
            d["source"] = c.source
        if c.note:
            d["note"] = c.note
        d.update(benchmark=c.benchmark, metric=c.metric)
        if c.params or c.absent:
            d["params"] = {**c.params, **dict.fromkeys(c.absent)}
        if c.outliers:
            d.update(outliers="none", by=c.by, threshold=c.threshold, min_rel_dev=c.min_rel_dev)
        elif c.op == "range":
            d.update(op="range", min=c.low, max=c.high)
        elif c.baseline is not None:
            d.update(op=c.op, baseline=c.baseline, pct=c.pct)
        else:
            d.update(op=c.op, value=c.value)
        if c.unit and not c.outliers:
            d["unit"] = c.unit
        if c.aggregate != "all" and not c.outliers:
            d["aggregate"] = c.aggregate
        if c.higher_is_better is not None:
            d["higher_is_better"] = c.higher_is_better
        crits.append(d)
    out["criteria"] = crits
    import yaml

    return yaml.safe_dump(out, sort_keys=False, width=100)
