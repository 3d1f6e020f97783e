"""Tests of clusterbench.judge.validate: judge runs against a profile."""

from __future__ import annotations

from judge_helpers import _crit, _rows

from clusterbench.judge.profile_yaml import load_yaml
from clusterbench.judge.profiles import Criterion, Profile, parse_profile
from clusterbench.judge.select import Row
from clusterbench.judge.validate import ERROR, SKIPPED, evaluate
from clusterbench.records import Measurement, Run


def test_measurements_in_units_that_do_not_convert_are_an_error_with_the_threshold():
    p = parse_profile(load_yaml(_crit(benchmark="stream", metric="bandwidth", op=">=", value=3000)), "p.yaml")
    o = evaluate(p, _rows((3100.0, "GB/s"), (2.0, "us")))[0]
    assert o.status == ERROR and "mix units" in o.detail and o.threshold == ">= 3,000 GB/s"


def test_a_benchmark_no_family_knows_is_skipped_saying_so():
    """Measurements imported from JSON lines may carry any benchmark: far from every known name
    it loads, and matching nothing it says why."""
    p = parse_profile(load_yaml(_crit(benchmark="my_probe", metric="score", op=">=", value=1)), "p.yaml")
    o = evaluate(p, _rows((1.0, "GB/s")))[0]
    assert o.status == SKIPPED and "no my_probe/score measurement" in o.detail


def test_a_misspelt_param_is_an_error_not_a_silent_skip():
    """``placment: in`` matched no row and was "skipped": with every other criterion passing,
    exit 0, though the check never ran."""
    p = parse_profile(load_yaml(_crit(benchmark="stream", metric="bandwidth", params={"kernal": "Triad"},
                                      op=">=", value=1)), "p.yaml")
    o = evaluate(p, _rows((3100.0, "GB/s")))[0]
    assert o.status == ERROR and o.detail == ("no stream/bandwidth measurement with kernal=Triad: "
                                          "none has a param 'kernal' (did you mean kernel?)")


def test_a_param_only_other_runs_have_is_still_skipped():
    """Validating a run that lacks a param (a native a2a run against the config tests) is no typo."""
    p = parse_profile(load_yaml(_crit(benchmark="stream", metric="bandwidth", params={"test_index": 3},
                                      op=">=", value=1)), "p.yaml")
    o = evaluate(p, _rows((3100.0, "GB/s")))[0]
    assert o.status == SKIPPED and o.detail.endswith("none has a param 'test_index'")


def test_a_misspelt_outliers_by_is_an_error_not_a_silent_skip():
    """``by: devcie`` found 0 values to compare and was "skipped", like a run of too few GPUs."""
    p = parse_profile(load_yaml(_crit(benchmark="stream", metric="bandwidth", outliers="none", by="devcie")), "p.yaml")
    rows = [Row(Run(benchmark="stream", id=1), Measurement("stream", "bandwidth", 3000.0 + d, "GB/s",
                                                           {"kernel": "Triad", "device": str(d)})) for d in range(8)]
    o = evaluate(p, rows)[0]
    assert o.status == ERROR and "no stream/bandwidth measurement has a param 'devcie' (did you mean device?)" in o.detail
    p = parse_profile(load_yaml(_crit(benchmark="stream", metric="bandwidth", outliers="none", by="tag:node")), "p.yaml")
    assert evaluate(p, rows)[0].status == SKIPPED


def test_a_mixed_selection_judges_the_profiles_hardware_and_says_what_it_left_out():
    from clusterbench.judge.hardware import Hardware

    crit = Criterion(name="triad", benchmark="stream", metric="bandwidth", params={"kernel": "Triad"},
                     op=">=", value=2000.0, unit="GB/s")
    profile = Profile("h100", (crit,), hardware=Hardware(devices=("NVIDIA H100 80GB HBM3",)))

    def row(rid: int, name: str, device_type: str, value: float) -> Row:
        label = "cpu" if device_type == "cpu" else "cuda:0"
        return Row(Run("stream", id=rid, devices=[name], meta={"device_type": device_type, "device_names": {label: name}}),
                   Measurement("stream", "bandwidth", value, "GB/s", {"kernel": "Triad", "device": label}))

    (o,) = evaluate(profile, [row(1, "NVIDIA H100 80GB HBM3", "cuda", 3000.0), row(2, "AMD EPYC", "cpu", 20.0)])
    assert o.status == "pass" and o.runs == [1] and o.detail == "1 on other hardware not judged"
    (o,) = evaluate(profile, [row(2, "AMD EPYC", "cpu", 20.0)])
    assert (o.status, o.reason) == ("skipped", "hardware") and "run 2 on AMD EPYC (cpu)" in o.detail
