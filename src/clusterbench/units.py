"""Sizes, rates and counts as users type them: ``8``, ``128K``, ``1M``, ``8G`` (binary, as nccl-tests),
``100Gbps``, and ``whole_number``, the one reader of a count from text or stored params."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal

from clusterbench.errors import UsageError

_BINARY = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# [0-9], not \d: ASCII digits only, as in every count (``whole_number``); ``٣`` or ``９`` is no size
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


# More digits than any size means: a typo or a pasted blob, refused before it becomes a number
# thousands of digits long (and past what int() converts).
_MAX_SIZE_DIGITS = 64


def parse_size(text: str | int, what: str = "size") -> int:
    """Parse a byte or element count with an optional binary suffix K/M/G/T (KB, KiB accepted).

    ``1K`` is 1024 as in nccl-tests. Fractions are allowed when they give a whole number (``1.5K``).
    The arithmetic is exact integers, never floats: ``9007199254740993`` is that number, and
    ``1.0000000000000001K`` is not a whole number of bytes.
    """
    if isinstance(text, int):
        value = text
    else:
        m = _SIZE_RE.match(str(text))
        if not m:
            raise UsageError(f"invalid {what} {text!r}: expected a number with optional K, M, G or T suffix")
        number, suffix = m.groups()
        whole, _, fraction = number.partition(".")
        whole, fraction = whole.lstrip("0"), fraction.rstrip("0")
        if len(whole) > _MAX_SIZE_DIGITS or len(fraction) > _MAX_SIZE_DIGITS:
            raise UsageError(f"invalid {what} {str(text).strip()[:24]!r}...: more than {_MAX_SIZE_DIGITS} digits")
        # number = int(whole + fraction) / 10**len(fraction), so one divmod says whether it is whole
        value, rest = divmod(int(whole + fraction or "0") * _BINARY[suffix.upper()], 10 ** len(fraction))
        if rest:
            raise UsageError(f"invalid {what} {text!r}: not a whole number of units")
    if value < 0:
        raise UsageError(f"invalid {what} {text!r}: must not be negative")
    return value


# The widest whole number a tool writes (nccl-tests prints sizes as a size_t): stored integers
# compare and convert exactly up to it.
MAX_UINT64 = 2**64 - 1

# What "surrounding whitespace" means for a whole number: ASCII only. str.strip() also takes a
# no-break space or an ideographic one, which no tool writes around a count.
_ASCII_SPACE = " \t\n\r\x0b\x0c"

# A whole number written with more digits than this is a pasted blob, refused before int() meets
# Python's limit on converting text (4300 digits: a ValueError of its own).
_MAX_WHOLE_DIGITS = 4000

# Past this many bits an int is shown by its size: str() of 5000 digits raises, like int() of them.
_SHOWN_BITS = 100


def shown_value(value: object) -> str:
    """``value`` as an error line quotes it: at most 32 characters of text, a huge int by its size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _SHOWN_BITS:
        return f"(a number of {value.bit_length()} bits)"
    if isinstance(value, str):
        return f"{value[:32]!r}{'...' if len(value) > 32 else ''}"
    text = repr(value)
    return text if len(text) <= 32 else f"{text[:32]}..."


def whole_number(value: object, *, what: str, minimum: int = 0, maximum: int = 2**53,
                 clamp: bool = False) -> int:
    """``value`` as a whole number from ``minimum`` to ``maximum``, or a one-line ``UsageError``.

    The one rule for counts read from text or stored params: an int as it is (a bool is no count);
    a float only when finite and integral (``8.0`` from a JSON reader); text only when, inside
    surrounding ASCII whitespace, it is ASCII digits alone: no sign, no ``_``, no ``.``, no
    exponent, no ``٣`` or ``²`` (``str.isdigit`` and ``int()`` take those), no inner space.
    ``clamp`` reads a value above ``maximum`` as ``maximum``, for a count past which the answer no
    longer changes; below ``minimum`` is refused either way, and so is text of more than 4000 digits.
    """
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float):
        number = int(value) if math.isfinite(value) and value.is_integer() else None
    elif isinstance(value, str):
        text = value.strip(_ASCII_SPACE)
        if len(text) > _MAX_WHOLE_DIGITS and text.isascii() and text.isdigit():
            raise UsageError(f"invalid {what} {shown_value(value)}: more than {_MAX_WHOLE_DIGITS} digits")
        number = int(text) if text and text.isascii() and text.isdigit() else None
    else:
        number = None
    if number is None:
        raise UsageError(f"invalid {what} {shown_value(value)}: expected a whole number from {minimum} to {maximum}")
    if number > maximum and clamp:
        return maximum
    if not minimum <= number <= maximum:
        raise UsageError(f"invalid {what} {shown_value(value)}: expected a whole number from {minimum} to {maximum}")
    return number


def whole_number_or_none(value: object, *, minimum: int = 0, maximum: int = 2**53,
                         clamp: bool = False) -> int | None:
    """``whole_number``'s reading of ``value``, or None where it refuses it: for a count read from
    stored params or tags, free text where a value that is no count has a fallback."""
    try:
        return whole_number(value, what="value", minimum=minimum, maximum=maximum, clamp=clamp)
    except UsageError:
        return None


def format_size(n: int) -> str:
    """Shortest exact binary form: 1048576 -> '1M', 1536 -> '1536'."""
    for suffix in ("T", "G", "M", "K"):
        unit = _BINARY[suffix]
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


# Past these a threshold written out in full is a wall of digits (1.7e308 has 309 of them, 5e-324
# over 300 zeros): such a value prints in exponent form instead.
_PLAIN_MAX, _PLAIN_MIN = 1e15, 1e-9


# Significant digits of a threshold shown beside a measurement (a baseline's 95% is
# 0.810390207374 to 12 digits; no measurement printed beside it has more than 6)
THRESHOLD_DIGITS = 6


def format_plain(value: float, digits: int = 12) -> str:
    """A number as people write thresholds: thousands separators and no exponent for any value a
    person would type (``4,177,285``, ``94.1``, ``0.00005``); 12 significant digits (or
    ``digits``) hide float noise. Only values past 1e15 or below 1e-9 use an exponent (``1.7e+308``)."""
    v = float(value)
    if abs(v) >= _PLAIN_MAX or 0 < abs(v) < _PLAIN_MIN:
        # a subnormal's 12 digits are all noise (5e-324 is 4.94065645841e-324): the shorter form
        return min(f"{v:.{digits}g}", repr(v), key=len)
    # from the shortest text that reads back as the value (4177.285, not 4177.2849999...), halves up
    number = Decimal(repr(v))
    if number:
        number = number.quantize(Decimal(1).scaleb(number.adjusted() - digits + 1), rounding=ROUND_HALF_UP)
    if number == number.to_integral_value():
        return f"{int(number):,}"
    return format(number.normalize(), ",f")


def format_threshold(value: float) -> str:
    """A threshold beside a measurement: ``format_plain`` to 6 significant digits, but never fewer
    than its whole part has (4,177,285 stays 4,177,285; 0.810390207374 is 0.81039)."""
    v = float(value)
    whole = len(str(int(abs(v)))) if math.isfinite(v) and abs(v) < _PLAIN_MAX else 0
    return format_plain(v, max(THRESHOLD_DIGITS, whole))


# printf's %g precision: the significant digits an exponent form keeps at most.
_G_DIGITS = 6


def fit(text: str, value: float, width: int) -> str:
    """A table cell: ``text`` (``value`` as the column formats it, %10.2f say) when it fits in
    ``width`` characters, else ``value`` in %g form with as many significant digits (up to 6)
    as fit, right-aligned: 1.7e308 in a %6.2f column is ``2e+308``, not 309 digits that push the
    rest of the row out of line (-1.7e308 is ``-2e308``). Only when not even that fits is the cell
    wider than ``width``: never are digits cut off."""
    if len(text) <= width:
        return text
    for digits in range(_G_DIGITS, 0, -1):
        cell = f"{value:.{digits}g}"
        if len(cell) <= width:
            return cell.rjust(width)
    # -2e+308 in 6 characters: the exponent's sign is the one thing that can go (still a float literal)
    return cell.replace("e+", "e").rjust(width)


def fixed(value: float, width: int, decimals: int) -> str:
    """printf's ``%{width}.{decimals}f`` of ``value``, or its %g form where that is too wide (``fit``)."""
    return fit(f"{value:{width}.{decimals}f}", value, width)


# A number in running text (a footer, a report cell) is this long at most before it switches to %g.
_TEXT_WIDTH = 20


def compact(value: float, decimals: int = 2, sign: bool = False) -> str:
    """``value`` with ``decimals`` decimals for running text and report cells (``+`` before a
    positive one with ``sign``), or in %g form with 6 significant digits where that would be
    longer than 20 characters (1.7e308, 1e300)."""
    plus = "+" if sign else ""
    text = f"{value:{plus}.{decimals}f}"
    return text if len(text) <= _TEXT_WIDTH else f"{value:{plus}.{_G_DIGITS}g}"


# Every unit clusterbench reads or converts: unit -> (kind, factor to the kind's base unit).
# Rates are in bytes per second (bits are /8), FLOP rates in FLOP/s, times in seconds. Lower-case
# keys; ``unit_scale`` keeps the one distinction case carries: the b of Gb/s is bits.
_BITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_UNITS: dict[str, tuple[str, float]] = {
    **{f"{p}bps": ("rate", f / 8) for p, f in _BITS.items()},
    **{f"{p}bit/s": ("rate", f / 8) for p, f in _BITS.items()},
    **{f"{p}bit": ("rate", f / 8) for p, f in _BITS.items() if p},
    **{f"{p}b/s": ("rate", f) for p, f in _BITS.items()},
    **{f"{p}ib/s": ("rate", float(1 << (10 * i))) for i, p in enumerate(("", "k", "m", "g", "t")) if p},
    **{f"{p}flop/s": ("flops", f) for p, f in _BITS.items()},
    **{f"{p}flops": ("flops", f) for p, f in _BITS.items() if p},
    # integer operations (an int8 GEMM's TOP/s): the same kind, so a threshold in GOP/s or a stored
    # int8 row in TFLOP/s converts
    **{f"{p}op/s": ("flops", f) for p, f in _BITS.items()},
    **{f"{p}ops": ("flops", f) for p, f in _BITS.items() if p},
    "ns": ("time", 1e-9), "us": ("time", 1e-6), "ms": ("time", 1e-3), "s": ("time", 1.0),
}


def unit_scale(unit: str) -> tuple[str, float] | None:
    """(kind, factor to base) of a unit as users and tools write it, or None if unknown.

    ``GB/s`` and ``GBps`` are bytes, ``Gb/s``, ``Gbps``, ``Gbit/s`` and ``gbit`` are bits; ``TFLOP/s`` and
    ``TFLOPS`` are FLOP rates; ``us``, ``ms`` are times.
    """
    u = unit.strip()
    if u.endswith("b/s") and not u.endswith("B/s") and len(u) <= 4 and u[:-3].lower() in _BITS:
        return _UNITS[f"{u[:-3].lower()}bit/s"]  # Gb/s means gigabits
    if u[-3:-2] == "B" and u[-2:].lower() == "ps" and u[:-3].lower() in _BITS:
        return _UNITS[f"{u[:-3].lower()}b/s"]    # GBps means gigabytes, as GB/s does
    return _UNITS.get(u.lower())


def is_time_unit(unit: str) -> bool:
    scale = unit_scale(unit) if unit else None
    return scale is not None and scale[0] == "time"


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """``value`` in ``from_unit`` expressed in ``to_unit`` (94100 GFLOP/s -> 94.1 TFLOP/s)."""
    if from_unit == to_unit or not from_unit:
        return value
    a, b = unit_scale(from_unit), unit_scale(to_unit)
    if a is None or b is None or a[0] != b[0]:
        raise ValueError(f"cannot convert {from_unit!r} to {to_unit!r}")
    return value * a[1] / b[1]


_RATE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z/]+)\s*$", re.IGNORECASE)


def parse_rate(text: str) -> float:
    """Parse a link or data rate to bytes per second, decimal units.

    ``100Gbps``, ``100gbit``, ``1Gbit/s`` are bits; ``50GB/s`` and ``50GBps`` are bytes. Case
    matters only for the B of ``GB/s`` and ``GBps`` versus the b of ``Gb/s`` and ``Gbps``.
    """
    # an error line quotes at most the start of what it was given (a tag of 10,000 characters)
    shown = f"{text[:32]!r}{'...' if len(text) > 32 else ''}"
    m = _RATE_RE.match(text)
    if not m:
        raise UsageError(f"invalid rate {shown}: expected e.g. 100Gbps, 1gbit or 50GB/s")
    number, unit = float(m.group(1)), m.group(2)
    scale = unit_scale(unit)
    if scale is None or scale[0] != "rate":
        raise UsageError(f"invalid rate {shown}: unknown unit {unit[:32]!r}")
    if number <= 0:
        raise UsageError(f"invalid rate {shown}: must be positive")
    rate = number * scale[1]
    if not math.isfinite(rate):   # 400 digits: inf bytes/s would make every efficiency 0%
        raise UsageError(f"invalid rate {shown}: too large")
    return rate


def id_ranges(ids: Sequence[int]) -> str:
    """``1-3, 7``: run ids as ranges."""
    out: list[str] = []
    for i in sorted(ids):
        if out and i == int(out[-1].rsplit("-", 1)[-1]) + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ", ".join(out)
