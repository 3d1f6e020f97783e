"""Sizes and rates as users type them: ``8``, ``128K``, ``1M``, ``8G`` (binary, as nccl-tests), ``100Gbps``."""

from __future__ import annotations

import re

from clusterbench.errors import UsageError

_BINARY = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str | int, what: str = "size") -> int:
    """Parse a byte or element count with an optional binary suffix K/M/G/T (KB, KiB accepted).

    ``1K`` is 1024 as in nccl-tests. Fractions are allowed when they give a whole number (``1.5K``).
    """
    if isinstance(text, int):
        value = text
    else:
        m = _SIZE_RE.match(str(text))
        if not m:
            raise UsageError(f"invalid {what} {text!r}: expected a number with optional K, M, G or T suffix")
        number, suffix = m.groups()
        exact = float(number) * _BINARY[suffix.upper()]
        if exact != int(exact):
            raise UsageError(f"invalid {what} {text!r}: not a whole number of units")
        value = int(exact)
    if value < 0:
        raise UsageError(f"invalid {what} {text!r}: must not be negative")
    return value


def format_size(n: int) -> str:
    """Shortest exact binary form: 1048576 -> '1M', 1536 -> '1536'."""
    for suffix in ("T", "G", "M", "K"):
        unit = _BINARY[suffix]
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


_RATE_UNITS = {
    "bps": 1 / 8, "kbps": 1e3 / 8, "mbps": 1e6 / 8, "gbps": 1e9 / 8, "tbps": 1e12 / 8,
    "bit/s": 1 / 8, "kbit/s": 1e3 / 8, "mbit/s": 1e6 / 8, "gbit/s": 1e9 / 8, "tbit/s": 1e12 / 8,
    "kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8, "tbit": 1e12 / 8,
    "b/s": 1, "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "tb/s": 1e12,
}
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z/]+)\s*$", re.IGNORECASE)


def parse_rate(text: str) -> float:
    """Parse a link or data rate to bytes per second, decimal units.

    ``100Gbps``, ``100gbit``, ``1Gbit/s`` are bits; ``50GB/s`` is bytes. Case matters only
    for the B of ``GB/s`` versus the b of ``Gb/s``.
    """
    m = _RATE_RE.match(text)
    if not m:
        raise UsageError(f"invalid rate {text!r}: expected e.g. 100Gbps, 1gbit or 50GB/s")
    number, unit = float(m.group(1)), m.group(2)
    if unit.endswith("b/s") and not unit.endswith("B/s") and len(unit) <= 4:
        unit = unit[:-3] + "bit/s"  # Gb/s means gigabits
    factor = _RATE_UNITS.get(unit.lower())
    if factor is None:
        raise UsageError(f"invalid rate {text!r}: unknown unit {unit!r}")
    if number <= 0:
        raise UsageError(f"invalid rate {text!r}: must be positive")
    return number * factor
