"""Tests of clusterbench.judge.hardware: what a profile is for and what a row was measured on."""

from __future__ import annotations

import pytest

from clusterbench.errors import UsageError
from clusterbench.judge.hardware import Hardware, applies, measured_on, node_problem, parse_hardware
from clusterbench.records import Measurement, Run

MI300X = Hardware(devices=("(AMD )?(Instinct )?MI300X( VF)?",))
ANY_CPU = Hardware(cpus=(".*",))


def _stream(device: str, **run: object) -> tuple[Run, Measurement]:
    return Run("stream", **run), Measurement("stream", "bandwidth", 20.0, "GB/s", {"kernel": "Copy", "device": device})


def test_a_native_cpu_row_is_on_the_cpu_and_no_gpu_profile_judges_it():
    run, m = _stream("cpu", devices=["AMD EPYC"], meta={"device_type": "cpu", "device_names": {"cpu": "AMD EPYC"}})
    assert measured_on(run, m) == ("cpu", ["AMD EPYC"])
    assert not applies(MI300X, run, m) and applies(ANY_CPU, run, m)
    # a collective over CPU ranks: no device param, the run's device type and names say it
    coll = Measurement("all_reduce", "busbw", 1.0, "GB/s", {"bytes": 8})
    crun = Run("coll", devices=["AMD EPYC", "AMD EPYC"], meta={"device_type": "cpu"})
    assert measured_on(crun, coll) == ("cpu", ["AMD EPYC"]) and not applies(MI300X, crun, coll)


def test_gpu_rows_by_their_label_the_aggregate_by_every_device():
    meta = {"device_type": "cuda", "device_names": {"cuda:0": "AMD Instinct MI300X", "cuda:1": "NVIDIA H100 80GB HBM3"}}
    run, m = _stream("cuda:1", meta=meta)
    assert measured_on(run, m) == ("gpu", ["NVIDIA H100 80GB HBM3"]) and not applies(MI300X, run, m)
    run, m = _stream("cuda:0", meta=meta)
    assert applies(MI300X, run, m)
    run, m = _stream("all", meta=meta)
    assert applies(MI300X, run, m)          # one of its devices is an MI300X
    # a GPU profile never judges a CPU of that name, a CPU profile never a GPU
    assert not ANY_CPU.matches("gpu", "AMD Instinct MI300X") and not MI300X.matches("cpu", "AMD Instinct MI300X")


def test_an_imported_log_that_names_no_device_is_judged():
    run, m = _stream("0", devices=["device 0", "device 1"])
    assert measured_on(run, m) == (None, []) and applies(MI300X, run, m)
    run, m = _stream("1", devices=["AMD Instinct MI300X", "AMD Instinct MI300X"])
    assert measured_on(run, m) == (None, ["AMD Instinct MI300X"]) and applies(MI300X, run, m)
    gemm = Measurement("gemm", "tflops", 97.0, "TFLOP/s", {"dtype": "fp32"})
    assert applies(MI300X, Run("gemm"), gemm)   # rocblas-bench names none


@pytest.mark.parametrize("value, says", [
    ([], "must be a mapping"),
    ({"gpus": ["H100"]}, "unknown key(s) gpus"),
    ({"devices": []}, "hardware.devices must be a list of name patterns"),
    ({"devices": ["(H100"]}, "'(H100' is no regular expression"),
    ({"cpus": [3]}, "hardware.cpus must be a list"),
])
def test_a_bad_hardware_key_is_one_line(value, says):
    with pytest.raises(UsageError, match="^p: ") as e:
        parse_hardware(value, "p")
    assert says in str(e.value)


def test_hardware_round_trips_and_reads_as_a_list():
    hw = parse_hardware({"devices": "(NVIDIA )?H200", "cpus": [".*EPYC.*"]}, "p")
    assert hw == Hardware(("(NVIDIA )?H200",), (".*EPYC.*",)) and parse_hardware(hw.to_dict(), "p") == hw
    assert parse_hardware(None, "p") is None
    assert hw.matches("gpu", "NVIDIA  H200") and not hw.matches("gpu", "NVIDIA H200 NVL")


def test_node_problems():
    h100 = Hardware(devices=("(NVIDIA )?H100 80GB HBM3",))
    assert node_problem(h100, ["NVIDIA H100 80GB HBM3"] * 8, "Intel Xeon") == (None, None)
    refused, doubt = node_problem(h100, [], "AMD EPYC")
    assert refused and "no GPU" in refused and doubt is None
    refused, doubt = node_problem(h100, ["NVIDIA A100-SXM4-80GB"], None)
    assert refused is None and doubt.startswith("this node's GPUs (NVIDIA A100-SXM4-80GB) match none")
    assert node_problem(Hardware(cpus=(".*",)), [], "AMD EPYC") == (None, None)
