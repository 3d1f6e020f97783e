"""Tests of clusterbench.judge.forked: where no child can be forked (as in a unit test, which
starts no process) the work is done by the caller, with its result (the real child is in
tests/system/test_changepoint_split.py)."""

from __future__ import annotations

import os

from clusterbench.judge import forked


def test_a_refused_fork_leaves_the_work_to_the_caller(monkeypatch):
    calls = []

    def refused():
        raise OSError(11, "Resource temporarily unavailable")

    def work(a, b):
        calls.append(os.getpid())
        return a * b

    monkeypatch.setattr(os, "fork", refused)
    result = forked.in_child(work, 6, 7)
    assert calls == []   # not computed until asked for
    assert result() == 42 and calls == [os.getpid()]


def test_no_pipe_leaves_the_work_to_the_caller(monkeypatch):
    def no_pipe():
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(os, "pipe", no_pipe)
    assert forked.in_child(sum, [1, 2, 3])() == 6
