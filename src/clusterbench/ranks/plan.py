"""A benchmark's plan: the steps it will take and how much work each is, told to the command as
it goes (``Planned`` events), so that a terminal shows ``k/N`` and an ETA and a run that will take
more than a minute says so early (``report/progress.py``).

Work is in any unit the steps' time is proportional to (bytes a stream iteration moves, a GEMM
sample's FLOPs, a batch's samples): the ETA extrapolates the time per unit of work done so far.
Events are throttled: the first two steps, then at most one every ``PERIOD_S``, and the last.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from clusterbench.records import Event, Planned

PERIOD_S = 0.25


class Plan:
    def __init__(self, emit: Callable[[Event], None], benchmark: str, what: str, works: Sequence[float],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.emit, self.benchmark, self.what = emit, benchmark, what
        self.works = [max(0.0, float(w)) for w in works]
        self.total_work = sum(self.works)
        self.done = 0
        self.work_done = 0.0
        self.clock = clock
        self._last = clock()
        self._send()

    def _send(self) -> None:
        self._last = self.clock()
        self.emit(Planned(self.benchmark, self.done, len(self.works), self.what, self.work_done,
                          self.total_work))

    def step(self, count: int = 1) -> None:
        """``count`` more steps are done (measured, or skipped: a size that does not fit)."""
        end = min(len(self.works), self.done + max(0, count))
        self.work_done += sum(self.works[self.done:end])
        self.done = end
        # the first two at once: the command estimates from the second (the first warms up)
        if self.done <= 2 or self.done == len(self.works) or self.clock() - self._last >= PERIOD_S:
            self._send()
