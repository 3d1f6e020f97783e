"""Option types for numbers with bounds that NaN and infinity cannot slip through.

click's FloatRange compares with < and >, which are false for NaN: ``--threshold nan`` would pass
and then silently disable the check it sets.
"""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteFloat(click.ParamType):
    """A finite float within ``low``..``high`` (either end left out with ``*_open``)."""

    name = "float"

    def __init__(self, low: float | None = None, low_open: bool = False, high: float | None = None,
                 high_open: bool = False) -> None:
        self.low, self.low_open, self.high, self.high_open = low, low_open, high, high_open

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            x = float(value)
        except (TypeError, ValueError, OverflowError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(x):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.low is not None and (x <= self.low if self.low_open else x < self.low):
            self.fail(f"{value!r} must be {'more than' if self.low_open else 'at least'} {self.low:g}", param, ctx)
        if self.high is not None and (x >= self.high if self.high_open else x > self.high):
            self.fail(f"{value!r} must be {'less than' if self.high_open else 'at most'} {self.high:g}", param, ctx)
        return x


ANY = FiniteFloat()
POSITIVE = FiniteFloat(0.0, low_open=True)
NON_NEGATIVE = FiniteFloat(0.0)
PORT = click.IntRange(1, 65535)
