"""Tests of clusterbench.records: the measurement contract."""

import json

import pytest

from clusterbench.records import INCOMPLETE, Measurement, Run


def test_json_contract():
    m = Measurement("all_reduce", "busbw", 1.5, "GB/s", {"bytes": 8})
    d = json.loads(m.to_json(run=3))
    assert d == {"run": 3, "benchmark": "all_reduce", "metric": "busbw", "value": 1.5, "unit": "GB/s",
                 "params": {"bytes": 8}}
    with pytest.raises(ValueError):
        Measurement("a", "b", float("nan"), "")
    assert Run(benchmark="x", status=INCOMPLETE).to_dict()["status"] == "incomplete"
