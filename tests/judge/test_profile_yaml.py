"""Tests of clusterbench.judge.profile_yaml: profile YAML as ``load_profile`` reads it."""

from __future__ import annotations

import re

import pytest
from judge_helpers import _crit, _rows

from clusterbench.errors import UsageError
from clusterbench.judge.profile_yaml import load_yaml
from clusterbench.judge.profiles import parse_profile
from clusterbench.judge.select import Row
from clusterbench.judge.validate import evaluate
from clusterbench.records import Measurement, Run


def test_a_big_document_without_aliases_is_not_blamed_on_aliases(monkeypatch):
    """A document of many plain values said "its aliases expand it", though it had none."""
    from clusterbench.judge import profile_yaml

    monkeypatch.setattr(profile_yaml, "MAX_NODES", 50)
    text = "name: t\ncriteria:\n" + "".join(
        f"  - {{name: c{i}, benchmark: all_reduce, metric: busbw, op: '>=', value: 1}}\n" for i in range(20))
    with pytest.raises(UsageError) as e:
        load_yaml(text)
    assert "aliases" not in str(e.value) and "more than 50 values" in str(e.value)
    bomb = "a: &a [1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    with pytest.raises(UsageError, match="aliases expand it past 50 values"):
        load_yaml(bomb)


@pytest.mark.parametrize("kw, says", [
    # a bandwidth, a time or a FLOP rate is never negative: ">= -5 GB/s" passes everything
    (dict(benchmark="all_reduce", metric="busbw", op=">=", value=-5), "value must not be negative"),
    (dict(benchmark="all_reduce", metric="time_us", op="range", min=-1, max=3, unit="ms"), "min must not be negative"),
    (dict(benchmark="gemm", metric="tflops", op=">=", baseline=-3, pct=90), "baseline must not be negative"),
    # baseline x pct past a float: an OverflowError out of the judge, exit 1 "internal error"
    (dict(benchmark="all_reduce", metric="busbw", op=">=", baseline=1e308, pct=1e308), "is no finite number"),
    # a unit on a count: never convertible, judged "error" on every run
    (dict(benchmark="all_reduce", metric="wrong", op="<=", value=0, unit="GB/s"), "all_reduce wrong has no unit"),
    (dict(benchmark="serving", metric="output_token_throughput", op=">=", value=1, unit="GB/s"),
     "serving output_token_throughput is in tok/s"),
    (dict(benchmark="net", metric="lost_percent", op="<=", value=1, unit="ms"), "net lost_percent is in %"),
])
def test_thresholds_that_cannot_mean_anything_are_refused(kw, says):
    with pytest.raises(UsageError, match=re.escape(says)):
        parse_profile(load_yaml(_crit(**kw)), "p.yaml")


def test_the_metrics_own_unit_is_accepted_where_the_unit_table_lacks_it():
    """``unit: tok/s`` on a tok/s metric was refused as an unknown unit."""
    p = parse_profile(load_yaml(_crit(benchmark="serving", metric="output_token_throughput", op=">=",
                                      value=100, unit="tok/s")), "p.yaml")
    rows = [Row(Run(benchmark="serving", id=1), Measurement("serving", "output_token_throughput", 150.0, "tok/s", {}))]
    o = evaluate(p, rows)[0]
    assert (o.status, o.threshold) == ("pass", ">= 100 tok/s")


def test_zero_and_signed_metrics_stay_allowed():
    """A count bound of 0 and a negative bound on a metric without a physical unit still load."""
    parse_profile(load_yaml(_crit(benchmark="all_reduce", metric="wrong", op="<=", value=0)), "p.yaml")
    parse_profile(load_yaml(_crit(benchmark="train", metric="loss", op="range", min=-1, max=3)), "p.yaml")


def test_measurements_in_two_units_are_converted_not_refused():
    """Runs of one metric stored in MB/s and GB/s were an "error"; they convert exactly."""
    p = parse_profile(load_yaml(_crit(benchmark="stream", metric="bandwidth", op=">=", value=3000)), "p.yaml")
    o = evaluate(p, _rows((3100.0, "GB/s"), (2900000.0, "MB/s")))[0]
    assert o.status == "fail" and o.unit == "GB/s" and o.measured == pytest.approx(2900.0)
    assert "1 of 2 below" in o.detail


@pytest.mark.parametrize("bench, means", [("all_reduse", "all_reduce"), ("alreduce", "allreduce"),
                                          ("straem", "stream"), ("ib_write_bwx", "ib_write_bw")])
def test_a_misspelt_benchmark_is_refused_naming_the_known_one(bench, means):
    with pytest.raises(UsageError, match=f"unknown benchmark '{bench}' \\(did you mean {means}\\?\\)"):
        parse_profile(load_yaml(_crit(benchmark=bench, metric="busbw", op=">=", value=1)), "p.yaml")
