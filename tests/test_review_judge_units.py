"""Validate and compare agree on which units mix: a value stored without a unit is no GB/s."""

from __future__ import annotations

from clusterbench.judge.compare import INSUFFICIENT, common_unit, compare
from clusterbench.judge.profiles import Criterion, Profile
from clusterbench.judge.select import Row
from clusterbench.judge.validate import ERROR, PASS, evaluate
from clusterbench.records import Measurement, Run

PARAMS = {"bytes": 1 << 20}


def _row(run_id: int, value: float, unit: str) -> Row:
    return Row(Run("coll", id=run_id), Measurement("all_reduce", "busbw", value, unit, dict(PARAMS)))


def _criterion(value: float = 1.0) -> Criterion:
    return Criterion(name="busbw", benchmark="all_reduce", metric="busbw", params=dict(PARAMS),
                     op=">=", value=value, unit="GB/s")


def test_a_value_without_a_unit_beside_gb_s_is_an_error_not_a_pass() -> None:
    (o,) = evaluate(Profile("p", [_criterion()]), [_row(1, 40.0, "GB/s"), _row(2, 5.0, "")])
    assert o.status == ERROR and "do not convert" in o.detail
    # compare says the same of the same rows
    (c,) = compare([_row(1, 40.0, "GB/s"), _row(2, 41.0, "GB/s")], [_row(3, 5.0, ""), _row(4, 6.0, "")])
    assert c.status == INSUFFICIENT and "do not convert" in c.verdict


def test_validate_still_converts_units_that_convert() -> None:
    (o,) = evaluate(Profile("p", [_criterion(0.1)]), [_row(1, 40.0, "GB/s"), _row(2, 500.0, "MB/s")])
    assert o.status == PASS and o.measured == 0.5 and o.unit == "GB/s"   # the worst, in the metric's unit


def test_common_unit_prefers_the_metric_unit_and_falls_back_to_the_first_row() -> None:
    rows = [_row(1, 500.0, "MB/s"), _row(2, 2.0, "GB/s")]
    assert common_unit(rows, "GB/s") == ("GB/s", [0.5, 2.0])
    assert common_unit(rows) == ("MB/s", [500.0, 2000.0])
    assert common_unit(rows, "us") == ("MB/s", [500.0, 2000.0])   # not to a time: the first row's
    assert common_unit([_row(1, 1.0, "GB/s"), _row(2, 1.0, "")], "GB/s") is None
