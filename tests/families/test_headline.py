"""Tests of clusterbench.families.headline: which records of a run are its headline series."""

from __future__ import annotations

from clusterbench.families import FAMILIES
from clusterbench.families.headline import headline_metric, headline_records

GiB = 1 << 30


def _busbw(size: int, placement: str = "out", value: float = 1.0) -> tuple:
    return ("all_reduce", "busbw", value, "GB/s", {"bytes": size, "dtype": "float", "placement": placement})


def test_collectives_keep_the_run_s_largest_size_per_op_and_placement():
    records = [_busbw(s, p) for s in (1 << 20, GiB, 8 * GiB) for p in ("out", "in")]
    records += [("all_reduce", "algbw", 1.0, "GB/s", {"bytes": 8 * GiB}),
                ("all_gather", "busbw", 2.0, "GB/s", {"bytes": GiB, "placement": "in"})]
    got = headline_records(records)
    assert [(r[0], r[4]["bytes"], r[4].get("placement")) for r in got] == [
        ("all_reduce", 8 * GiB, "out"), ("all_reduce", 8 * GiB, "in"), ("all_gather", GiB, "in")]


def test_stream_keeps_triad_per_device_and_a_run_without_triad_keeps_every_kernel():
    def bw(kernel, device):
        return ("stream", "bandwidth", 1.0, "GB/s", {"kernel": kernel, "array_size": 1 << 28, "device": device})

    five = [bw(k, d) for d in ("0", "1") for k in ("Copy", "Mul", "Add", "Triad", "Dot")]
    assert [(r[4]["kernel"], r[4]["device"]) for r in headline_records(five)] == [("Triad", "0"), ("Triad", "1")]
    copy_only = [bw("Copy", "0"), bw("Mul", "0")]
    assert headline_records(copy_only) == copy_only


def test_gemm_keeps_one_precision_and_the_best_sample():
    def tf(dtype, stat):
        return ("gemm", "tflops", 1.0, "TFLOP/s", {"dtype": dtype, "device": "0", "stat": stat})

    records = [tf(d, s) for d in ("fp32", "bf16", "fp8_e4m3") for s in ("best", "median")]
    assert [(r[4]["dtype"], r[4]["stat"]) for r in headline_records(records)] == [("bf16", "best")]


def test_per_step_and_matrix_rows_are_not_headline():
    train = [("train", "tokens_per_s", 1.0, "tokens/s", {"step": i}) for i in range(3)]
    train.append(("train", "tokens_per_s", 2.0, "tokens/s", {"stat": "avg", "steps": 3}))
    assert headline_records(train) == train[3:]
    cells = [("transfer", "bandwidth", 1.0, "GB/s", {"test": "a2a", "src": "G0", "dst": f"G{i}", "stat": "pair"})
             for i in range(8)]
    total = ("transfer", "bandwidth", 9.0, "GB/s", {"test": "a2a", "stat": "aggregate"})
    assert headline_records([*cells, total]) == [total]


def test_unknown_benchmarks_and_other_metrics_are_not_headline():
    assert headline_records([("mystery", "busbw", 1.0, "GB/s", {}), ("all_reduce", "time_us", 1.0, "us", {})]) == []
    assert headline_metric("all_reduce") == "busbw" and headline_metric("mystery") is None


def test_every_rule_names_params_its_family_records():
    for f in FAMILIES:
        rule = f.headline_rows
        named = {*rule.largest, *(p for p, _ in rule.prefer), *(p for p, _ in rule.only), *rule.without}
        assert not named or f.headline is not None, f.name
        for param, values in (*rule.prefer, *rule.only):
            assert values and all(isinstance(v, str) for v in values), (f.name, param)
