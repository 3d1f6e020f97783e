"""Tests of clusterbench.families.workloads.table: terminal tables for the workloads."""

from work_helpers import SHAPE

from clusterbench.families.workloads.table import DdpCommTable, InferTpTable, TrainTable
from clusterbench.records import Measurement, Run


def test_ddp_comm_footer_says_mib():
    ms = [Measurement("ddp_comm", "algbw", 1.0, "GB/s", {"bytes": 536 << 20, "layers": 16, "bucket_cap_mb": 25.0,
                                                         "stat": "avg"})]
    assert DdpCommTable().footer(Run("ddp_comm"), ms) == [
        "# 16 dummy layers, 536 MiB of gradients, bucket cap 25 MiB"]
    ms[0].params["bucket_cap_mb"] = 0.5
    assert DdpCommTable().footer(Run("ddp_comm"), ms)[0].endswith("bucket cap 0.5 MiB")


def test_train_footer_says_layers_and_sequence_length():
    ms = [Measurement("train", "samples_per_s", 300.0, "samples/s", {**SHAPE, "stat": "avg"})]
    meta = {"train": {**SHAPE, "params": 140000, "shard_size": 2}}
    want = ("# model custom: 0.14M parameters, 3 layers, hidden 64, strategy full (shard size 2), fp32, "
            "global batch 8 sequences, sequence length 16 tokens")
    assert TrainTable().footer(Run("train", meta=meta), ms) == [want]
    # a run stored without its meta (imported from a tool's log) still says the shape its rows carry
    assert TrainTable().footer(Run("train"), ms) == [
        "# model custom: 3 layers, hidden 64, strategy full, fp32, global batch 8 sequences, "
        "sequence length 16 tokens"]


def test_ddp_footer_names_a_size_under_one_mib() -> None:
    m = Measurement("ddp_comm", "algbw", 1.0, "GB/s", {"layers": 1, "bytes": 996, "bucket_cap_mb": 25.0})
    assert DdpCommTable().footer(Run("ddp_comm"), [m]) == [
        "# 1 dummy layers, 996 bytes of gradients, bucket cap 25 MiB"]
    big = Measurement("ddp_comm", "algbw", 1.0, "GB/s", {"layers": 16, "bytes": 536 << 20, "bucket_cap_mb": 25.0})
    assert "536 MiB of gradients" in DdpCommTable().footer(Run("ddp_comm"), [big])[0]


def test_ddp_comm_footer_says_a_size_that_is_not_whole_mib_exactly() -> None:
    def footer(size: int) -> str:
        m = Measurement("ddp_comm", "algbw", 1.0, "GB/s", {"layers": 4, "bytes": size, "bucket_cap_mb": 25.0})
        return DdpCommTable().footer(Run("ddp_comm", ranks=2), [m])[0]

    assert "2 MiB" not in footer(3 << 19)          # --size 1.5M read "2 MiB of gradients"
    assert "1,572,864 bytes (1.5 MiB) of gradients" in footer(3 << 19)
    assert "# 4 dummy layers, 536 MiB of gradients, bucket cap 25 MiB" == footer(536 << 20)


def test_small_nonzero_values_never_read_as_zero_in_the_tables() -> None:
    p = {"layers": 4, "bytes": 16, "bucket_cap_mb": 25.0, "step": 0}
    rows = DdpCommTable().rows([Measurement("ddp_comm", "step_time_ms", 12.5, "ms", p),
                                Measurement("ddp_comm", "algbw", 1.27e-6, "GB/s", p)])
    assert rows[0].split()[-1] == "1.27e-06"
    loss = TrainTable().rows([Measurement("train", "loss", 3e-5, "", {"step": 7})])
    assert loss[0].split()[1] == "3e-05"
    lat = InferTpTable().rows([Measurement("infer_tp", "latency_ms", 4e-4, "ms", {"batch": 1, "stat": "avg"})])
    assert lat[0].split()[1] == "0.0004"


def test_train_footer_counts_a_tiny_model_in_parameters() -> None:
    m = Measurement("train", "samples_per_s", 1.0, "samples/s", {"stat": "avg", "layers": 1, "seq": 1})
    meta = {"train": {"model": "custom", "params": 78, "shard_size": 1, "layers": 1, "hidden": 2}}
    footer = TrainTable().footer(Run("train", meta=meta), [m])[0]
    assert "78 parameters" in footer and "e-05M" not in footer
    big = {"train": {**meta["train"], "params": 98624}}
    assert "0.0986M parameters" in TrainTable().footer(Run("train", meta=big), [m])[0]
