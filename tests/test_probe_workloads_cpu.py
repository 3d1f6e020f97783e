"""Probe of train, ddp-comm and infer-tp on CPU ranks: what their tables say for one rank, odd sizes
and tiny values, and model shapes written two ways."""

from __future__ import annotations

import pytest
from work_helpers import cli, json_rows

from clusterbench.bench.workloads.model import PRESETS, resolve_shape
from clusterbench.errors import UsageError
from clusterbench.families.workloads.table import DdpCommTable, InferTpTable, TrainTable
from clusterbench.records import Measurement, Run

INFER = ["--device", "cpu", "--hidden", "16", "--layers", "2", "--batch-sizes", "2", "--iters", "1",
         "--warmup", "0"]
DDP = ["--device", "cpu", "--size", "4K", "--layers", "2", "--steps", "1", "--warmup", "0"]


def test_infer_tp_on_one_rank_does_not_call_itself_tensor_parallel(capsys: pytest.CaptureFixture[str],
                                                                   db: str) -> None:
    code, out, err = cli(capsys, "infer-tp", "--np", "1", *INFER, "--db", db)
    assert code == 0, err
    footer = [line for line in out.splitlines() if "layers of 16x16" in line]
    assert footer and "column-parallel" not in footer[0] and "unsplit (1 rank, no collectives" in footer[0]
    # the mode stays in the rows' params: the 1-rank baseline pairs with the split runs in compare
    code, out, err = cli(capsys, "infer-tp", "--np", "1", *INFER, "--json", "--db", db)
    assert code == 0, err
    assert {m.params["mode"] for m in json_rows(out)} == {"column"}
    code, shown, err = cli(capsys, "results", "show", "last", "--db", db)
    assert code == 0 and "unsplit (1 rank" in shown and "column-parallel" not in shown, err
    two = Measurement("infer_tp", "latency_ms", 1.0, "ms", {"mode": "row", "layers": 2, "hidden": 16,
                                                            "dtype": "fp32", "batch": 2, "stat": "avg"})
    assert InferTpTable().footer(Run("infer_tp", ranks=2), [two])[0].startswith("# row-parallel, 2 layers")


def test_ddp_comm_link_speed_on_one_rank_is_refused(capsys: pytest.CaptureFixture[str], db: str) -> None:
    # One rank has no all_reduce optimum: the run stored the tag and judged nothing, silently.
    code, out, err = cli(capsys, "ddp-comm", "--np", "1", *DDP, "--link-speed", "100Gbps", "--db", db)
    assert code == 2 and "--link-speed needs 2 or more ranks" in err and "Traceback" not in err
    assert out == ""
    code, out, err = cli(capsys, "ddp-comm", "--np", "1", *DDP, "--db", db)
    assert code == 0, err
    assert "# 2 dummy layers, 4,096 bytes of gradients, bucket cap 25 MiB, 1 rank: no gradients exchanged" in out


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


def test_kv_heads_as_many_as_heads_is_the_preset_not_a_custom_model(capsys: pytest.CaptureFixture[str],
                                                                     db: str) -> None:
    code, out, err = cli(capsys, "train", "--np", "1", "--device", "cpu", "--kv-heads", "4", "--batch", "1",
                         "--steps", "1", "--warmup", "0", "--no-comm-share", "--json", "--db", db)
    assert code == 0, err
    assert {m.params["model"] for m in json_rows(out)} == {"tiny"}
    assert resolve_shape("tiny", kv_heads=4) == PRESETS["tiny"]
    assert resolve_shape("1b", kv_heads=8) == PRESETS["1b"]
    assert resolve_shape("tiny", kv_heads=2).kv_heads == 2


def test_negative_kv_heads_says_what_is_wrong() -> None:
    with pytest.raises(UsageError, match="--kv-heads must be at least 0"):
        resolve_shape("tiny", kv_heads=-2)    # -2 does divide 4: "does not divide" was untrue
