"""Option types for numbers with bounds that NaN, infinity, a 400-digit count or another
script's digits cannot slip through, and the bounds of the counts options take.

click's FloatRange compares with < and >, which are false for NaN: ``--threshold nan`` would pass
and then silently disable the check it sets. click's int type reads text with ``int()``, which
takes ``٣`` (Arabic-Indic), ``９`` (full width), ``1_000`` and any number of digits: a count
read that way ran until killed (``-n`` of 400 digits) or went into a generated script. ``Count``
reads it with ``units.whole_number``, the one rule for counts, and refuses a value past its
bound in one line before anything starts; click shows the bound in the option's help.
"""

from __future__ import annotations

import math
from typing import Any

import click

from clusterbench.errors import UsageError
from clusterbench.units import shown_value, whole_number


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


# The bounds of counts (docs/reliability.md, "Counts are bounded"): far past what a run needs,
# short of what would run for days or fill a generated script with a number no tool takes.
MAX_ITERATIONS = 1_000_000     # timed or warm-up iterations, steps, samples, check iterations
MAX_CYCLES = 10_000            # coll -N: whole sweeps in one run
MAX_REPEAT = 10_000            # --repeat: runs of one command
MAX_ROUNDS = 1_000             # sweep --rounds
MAX_NODES = 100_000            # nodes of a launch, a sweep's groups, validate/report --nodes
MAX_PROCS_PER_NODE = 1_024     # ranks one node runs
MAX_GPUS_PER_NODE = 256        # devices one node holds
MAX_INT32 = 2**31 - 1          # model sizes and other values PyTorch keeps in a C int
MAX_INT64 = 2**63 - 1          # what the stores' integers hold
_ANY_SIZE = 10**4000           # (whole_number refuses text of more digits itself)


class Count(click.IntRange):
    """A whole number from ``low`` to ``high`` (``units.whole_number``: ASCII digits only, no
    sign, no ``_``, no other script's digits), or a one-line usage error naming the option."""

    name = "integer"

    def __init__(self, low: int = 0, high: int | None = MAX_INT64) -> None:
        """``high`` None: ASCII digits of any size (up to whole_number's 4000), for a count whose
        command checks its range itself, in its own words (``net --rdma-qps``: perftest's)."""
        super().__init__(low, high)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        low = int(self.min or 0)
        high = _ANY_SIZE if self.max is None else int(self.max)
        try:
            return whole_number(value, what="count", minimum=low, maximum=high)
        except UsageError:
            digits = isinstance(value, str) and not value.isascii()
            bound = f"from {low:,} to {high:,}" if self.max is not None else f"of at least {low:,}"
            self.fail(f"{shown_value(value)} is not a whole number {bound}" + (" (ASCII digits only)" if digits else ""),
                      param, ctx)


PORT = Count(1, 65535)
