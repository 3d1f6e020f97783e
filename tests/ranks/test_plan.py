"""Tests of clusterbench.ranks.plan: a benchmark's steps told to the command as it goes."""

from __future__ import annotations

from clusterbench.ranks.plan import PERIOD_S, Plan
from clusterbench.records import Planned


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_a_plan_says_its_start_its_first_steps_its_last_and_at_most_one_in_between_per_period():
    sent: list[Planned] = []
    clock = Clock()
    plan = Plan(sent.append, "stream", "iterations", [2.0] * 10, clock)
    assert sent == [Planned("stream", 0, 10, "iterations", 0.0, 20.0)]
    plan.step()
    plan.step()                       # the first two at once: the command estimates from them
    clock.t += PERIOD_S / 2
    plan.step()                       # too soon
    clock.t += PERIOD_S
    plan.step()
    assert [(p.done, p.work_done) for p in sent] == [(0, 0.0), (1, 2.0), (2, 4.0), (4, 8.0)]
    plan.step(100)                    # skipped steps count, never past the end
    assert sent[-1] == Planned("stream", 10, 10, "iterations", 20.0, 20.0)
    plan.step()
    assert len(sent) == 6 and sent[-1].done == 10


def test_steps_of_unequal_work():
    sent: list[Planned] = []
    plan = Plan(sent.append, "infer_tp", "forward passes", [128, 256, 512], Clock())
    plan.step(2)
    assert (sent[-1].done, sent[-1].work_done, sent[-1].work_total) == (2, 384.0, 896.0)
