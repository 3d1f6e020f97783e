"""System tests (changepoint's work split): ``may_change`` with half its series in a forked child
gives the answers of one process, also where the child dies."""

from __future__ import annotations

import os

import numpy as np
import pytest

from clusterbench.judge import changepoint as cp
from clusterbench.judge import forked

pytestmark = pytest.mark.system


def _series(count: int = 400, n: int = 40) -> list[list[float]]:
    rng = np.random.default_rng(8)
    out = []
    for k in range(count):
        x = 100 + rng.normal(0, 1, n)
        if k % 9 == 0:
            x[n // 3:] -= 5
        out.append(list(np.round(x, 1)))   # ties too
    return out


def test_half_the_series_in_a_child_give_the_same_answers(monkeypatch):
    series = _series()
    one = cp.may_change(series)
    children = []
    real = forked.in_child

    def counted(fn, *args):
        children.append(1)
        return real(fn, *args)

    monkeypatch.setattr(cp, "SPLIT_WORK", 1)
    monkeypatch.setattr(cp, "usable_cores", lambda: 2)
    monkeypatch.setattr(cp, "in_child", counted)
    assert cp.may_change(series) == one and children
    assert one.count(True) >= 400 // 9


def test_a_child_that_dies_leaves_its_half_to_the_caller():
    parent = os.getpid()

    def dies_in_a_child(x):
        if os.getpid() != parent:
            os._exit(3)
        return x * 2

    assert forked.in_child(dies_in_a_child, 21)() == 42


def test_a_child_that_raises_leaves_its_half_to_the_caller():
    parent = os.getpid()

    def raises_in_a_child(x):
        if os.getpid() != parent:
            raise ValueError("in the child")
        return x + 1

    assert forked.in_child(raises_in_a_child, 1)() == 2
    assert forked.in_child(lambda a, b: a * b, 6, 7)() == 42
