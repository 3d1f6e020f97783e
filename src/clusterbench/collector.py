"""The cyclic garbage collector paused while many objects that form no cycle are made.

Reading a fleet's night makes 400,000 measurements, their params and rows; none refers back to
another. Each young collection that such a block triggers moves survivors up, and the older
collections then walk the whole growing heap again and again: a report of 1,000 runs spent a
second of its loading in the collector. Paused, nothing is lost: a cycle made meanwhile is
collected after the block, by the first collection that runs then.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block, back on after it where it was on."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
