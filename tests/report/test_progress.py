"""Tests of clusterbench.report.progress: a run's progress on stderr."""

from __future__ import annotations

from clusterbench.records import Planned
from clusterbench.report.progress import (
    Progress,
    RowProgress,
    duration_text,
    eta_seconds,
)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class Printer:
    def __init__(self) -> None:
        self.events: list = []

    def on_event(self, event: object) -> None:
        self.events.append(event)


class Shown(Progress):
    """What the status line would show (no terminal: nothing is drawn)."""

    def __init__(self) -> None:
        super().__init__(False)
        self.details: list[str] = []
        self.description = ""

    def update(self, description: str | None = None, advance: int = 0, detail: str | None = None) -> None:
        self.description = description if description is not None else self.description
        if detail is not None:
            self.details.append(f"{self.description}: {detail}")


def _run(steps: list[tuple[float, int]], total: int = 100) -> tuple[list[str], list[str], Printer]:
    said: list[str] = []
    clock, printer, shown = Clock(), Printer(), Shown()
    rows = RowProgress(printer, shown, say=said.append, clock=clock)
    for t, done in steps:
        clock.t = 100.0 + t
        rows.on_event(Planned("stream", done, total, "iterations", float(done), float(total)))
    return said, shown.details, printer


def test_a_run_of_more_than_a_minute_says_so_once_early():
    # the first step warms up (20 s): the estimate is from the steps after it, 2 s each
    said, details, printer = _run([(0, 0), (20.0, 1), (22.0, 2), (24.0, 3), (180.0, 80)])
    assert said == ["clusterbench: stream: 100 iterations, about 3.6 min in all (estimated from the first 2)"]
    assert details[1] == "stream: 1/100 iterations" and details[2] == "stream: 2/100 iterations, ETA 3.3 min"
    assert details[-1].endswith("80/100 iterations, ETA 41 s")   # (180 - 20) / 79 s per step, 20 left
    assert len(printer.events) == 5      # every event still reaches the printer


def test_a_short_run_says_nothing_and_a_late_estimate_is_not_said():
    said, _, _ = _run([(0, 0), (0.1, 1), (0.2, 2), (5.0, 100)])
    assert said == []
    # a slow first step alone says nothing: it warms up
    said, _, _ = _run([(0, 0), (30.0, 1), (30.1, 2), (31.0, 100)])
    assert said == []
    # past the first quarter, a longer estimate comes too late to be worth a line
    said, _, _ = _run([(0, 0), (0.1, 1), (0.2, 2), (90.0, 50)])
    assert said == []


def test_quiet_says_nothing():
    clock = Clock()
    rows = RowProgress(Printer(), Shown(), say=None, clock=clock)
    rows.on_event(Planned("gemm", 0, 6, "samples", 0.0, 6.0))
    clock.t += 60
    rows.on_event(Planned("gemm", 1, 6, "samples", 1.0, 6.0))
    clock.t += 60
    rows.on_event(Planned("gemm", 2, 6, "samples", 2.0, 6.0))   # no say: nothing to call


def test_eta_and_durations():
    assert eta_seconds(10.0, 1.0, 4.0) == 30.0 and eta_seconds(10.0, 0.0, 4.0) is None
    assert [duration_text(s) for s in (45, 90, 180, 200, 1800, 7560)] == ["45 s", "1.5 min", "3 min", "3.3 min",
                                                                           "30 min", "2.1 h"]
