"""Tests of clusterbench.judge.tool_checks."""

from __future__ import annotations

import pytest

from clusterbench.judge.tool_checks import tool_outcomes
from clusterbench.judge.validate import SKIPPED
from clusterbench.records import Measurement, Run


@pytest.mark.parametrize("ranks", ["x", float("nan"), 8.5, True, -3, [8]])
def test_tool_check_with_a_rank_count_that_is_no_count_is_skipped(ranks):
    """Params come from JSON lines as written: ``"ranks": "x"`` was a ValueError out of validate,
    and ``true`` was one rank, a tolerance of 0 and a failure."""
    run = Run(benchmark="import", id=1)
    ms = [Measurement("all_reduce", "max_error", 1e-6, "", {"dtype": "float", "ranks": ranks, "bytes": 8})]
    (o,) = tool_outcomes([(run, ms)])
    assert o.status == SKIPPED and "rank count" in o.detail


def test_tool_check_falls_back_to_the_runs_rank_count():
    run = Run(benchmark="import", id=1, ranks=8)
    ms = [Measurement("all_reduce", "max_error", 1e-6, "", {"dtype": "float", "ranks": "x", "bytes": 8})]
    (o,) = tool_outcomes([(run, ms)])
    assert o.status == "pass" and o.threshold == "<= 7e-05"
