"""Tests of clusterbench.judge.degraded: degraded hosts and devices."""

from __future__ import annotations

import pytest
from judged_rows import PARAMS

from clusterbench.judge.degraded import find_degraded
from clusterbench.judge.select import Row
from clusterbench.records import Measurement, Run


def test_degraded_converts_units_per_host() -> None:
    """One host that records MB/s is not 1000 times faster or slower than the rest."""
    rows = [Row(Run("coll", id=i + 1, hosts=[h]), Measurement("all_reduce", "busbw", v, u, {**PARAMS, "host": h}))
            for i, (h, v, u) in enumerate([("a", 100.0, "GB/s"), ("b", 101.0, "GB/s"),
                                           ("c", 99.0, "GB/s"), ("d", 100_500.0, "MB/s")])]
    assert find_degraded(rows) == []
    rows[3] = Row(rows[3].run, Measurement("all_reduce", "busbw", 50_000.0, "MB/s", {**PARAMS, "host": "d"}))
    (d,) = find_degraded(rows)
    assert d.outlier.key == "d" and d.outlier.value == pytest.approx(50.0) and d.unit == "GB/s"


@pytest.mark.parametrize("values", [{"a": 100.0}, {"a": 100.0, "b": 50.0}, {"a": 80.0, "b": 80.0, "c": 80.0}])
def test_degraded_needs_a_majority(values: dict[str, float]) -> None:
    """With two nodes there is no majority to say which is slow; equal nodes are never degraded."""
    rows = [Row(Run("coll", id=i + 1, hosts=[h]), Measurement("all_reduce", "busbw", v, "GB/s", {**PARAMS, "host": h}))
            for i, (h, v) in enumerate(values.items())]
    assert find_degraded(rows) == []


def test_degraded_latency_flags_the_slow_host_only() -> None:
    def row(i: int, h: str, v: float) -> Row:
        return Row(Run("coll", id=i, hosts=[h]), Measurement("all_reduce", "time_us", v, "us", {**PARAMS, "host": h}))
    rows = [row(1, "a", 10.0), row(2, "b", 10.1), row(3, "c", 9.9), row(4, "d", 20.0), row(5, "e", 5.0)]
    assert [d.outlier.key for d in find_degraded(rows)] == ["d"]


def test_the_scan_says_when_it_could_judge_nothing() -> None:
    """Fewer than three hosts: the search is skipped, and says so, never "none found"."""
    from clusterbench.judge.degraded import MIN_IDENTITIES, scan_degraded

    def rows(values: dict[str, float]) -> list[Row]:
        return [Row(Run("coll", id=i + 1, hosts=[h]), Measurement("all_reduce", "busbw", v, "GB/s", {**PARAMS, "host": h}))
                for i, (h, v) in enumerate(values.items())]
    two = scan_degraded(rows({"a": 100.0, "b": 50.0}))
    assert two.skipped and two.found == [] and two.most == 2
    assert f"{MIN_IDENTITIES} or more hosts or devices (at most 2 here)" in two.skip_reason()
    three = scan_degraded(rows({"a": 100.0, "b": 101.0, "c": 99.0}))
    assert not three.skipped and three.judged == 1 and three.found == []
