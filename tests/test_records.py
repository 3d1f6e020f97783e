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


def test_a_measurement_read_back_from_the_store_is_a_measurement():
    """Made without __init__, it equals, hashes as, pickles as and is as frozen as one made
    with it; a NaN is still refused."""
    import dataclasses
    import pickle

    from clusterbench.records import stored_measurement

    made = Measurement("all_reduce", "busbw", 1.5, "GB/s", {"bytes": 8})
    read = stored_measurement("all_reduce", "busbw", 1.5, "GB/s", {"bytes": 8})
    assert type(read) is Measurement and read == made and repr(read) == repr(made)
    assert dataclasses.asdict(read) == dataclasses.asdict(made) and pickle.loads(pickle.dumps(read)) == made
    assert read.to_json(run=2) == made.to_json(run=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.value = 2.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="NaN"):
        stored_measurement("a", "b", float("nan"), "", {})
