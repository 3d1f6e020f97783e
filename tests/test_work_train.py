"""``clusterbench train``: FSDP2 on 2 gloo ranks really trains, figures are consistent, bad input."""

import math

import pytest
import torch
from work_helpers import cli, json_rows, overall, stored

from clusterbench.bench.workloads.model import PRESETS
from clusterbench.bench.workloads.train import _union_us, shard_ranks
from clusterbench.bench.workloads.train import check_model_fits as check_fits
from clusterbench.errors import UsageError

BATCH = 8


def test_two_ranks_full_shard_learns_and_stores(capsys, db):
    code, out, err = cli(capsys, "train", "--np", "2", "--device", "cpu", "--steps", "8", "--warmup", "2",
                         "--batch", str(BATCH), "--json", "--db", db, "--tag", "setup=test")
    assert code == 0, err
    rows = json_rows(out)
    loss = {m.params["step"]: m.value for m in rows if m.metric == "loss"}
    assert sorted(loss) == list(range(8))
    # The synthetic rule is learnable: the loss falls well below its start (ln 128 = 4.85 is chance).
    assert loss[7] < 0.6 * loss[0] and loss[7] < math.log(PRESETS["tiny"].vocab)
    seq = PRESETS["tiny"].seq
    for step in range(8):
        ms = {m.metric: m for m in rows if m.params.get("step") == step}
        assert ms["samples_per_s"].value * ms["step_time_ms"].value / 1e3 == pytest.approx(BATCH)
        assert ms["tokens_per_s"].value == pytest.approx(ms["samples_per_s"].value * seq)
        assert ms["loss"].params["strategy"] == "full" and ms["loss"].params["ranks"] == 2
    sps, stm = overall(rows, "samples_per_s"), overall(rows, "step_time_ms")
    assert sps.value * stm.value / 1e3 == pytest.approx(BATCH)
    assert sps.params["steps"] == 6
    timed = [m.value for m in rows if m.metric == "step_time_ms" and m.params.get("step", -1) >= 2]
    assert stm.value == pytest.approx(sum(timed) / len(timed))
    assert 0.0 < overall(rows, "comm_share").value <= 1.0
    assert overall(rows, "peak_memory_bytes", stat="max").value > 2**20
    assert not [m for m in rows if m.metric == "mfu"]  # no peak for a CPU: skipped, with a note
    [(run, ms)] = stored(db)
    assert run.status == "complete" and run.tags["setup"] == "test" and run.ranks == 2
    assert len(ms) == len(rows)
    assert any("mfu" in n["text"] and n["benchmark"] == "train" for n in run.meta["notes"])
    assert run.meta["train"]["shard_size"] == 2

    code, out, _ = cli(capsys, "results", "show", str(run.id), "--db", db)
    assert code == 0 and "samples/s" in out and "# overall samples_per_s (avg)" in out
    assert len([line for line in out.splitlines() if line.startswith("       7 ")]) == 1


@pytest.mark.parametrize("args,message", [
    (["--layers", "0"], "--layers must be at least 1"),
    (["--batch", "7", "--np", "2"], "--batch 7 is not divisible by the 2 ranks"),
    (["--dtype", "bf16", "--device", "cpu"], "--dtype bf16 needs a GPU"),
    (["--strategy", "hybrid", "--shard-size", "3", "--np", "2"], "--shard-size 3 does not divide"),
])
def test_bad_input_is_one_line_exit_2(capsys, db, args, message):
    code, out, err = cli(capsys, "train", "--device", "cpu", *args, "--db", db)
    assert code == 2 and err.strip().count("\n") == 0
    assert err.startswith("clusterbench: error: ") and message in err
    assert stored(db) == []


def test_model_that_does_not_fit_fails_before_the_first_step(capsys, db):
    code, out, err = cli(capsys, "train", "--preset", "8b", "--np", "2", "--device", "cpu", "--db", db)
    assert code == 2 and err.count("\n") == 1, err
    assert "model does not fit: 8.03B parameters" in err and "Traceback" not in err
    assert out == "" and stored(db) == []


def test_cuda_without_gpu_is_a_clean_error(capsys, db):
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    code, _, err = cli(capsys, "train", "--device", "cuda", "--db", db)
    assert code == 2 and "no CUDA or ROCm GPU" in err


def test_fit_and_shard_arithmetic():
    assert shard_ranks("full", 16, None, 8) == 16
    assert shard_ranks("hybrid", 16, None, 8) == 8
    with pytest.raises(UsageError):
        shard_ranks("hybrid", 16, 3, 8)
    # 8B on 8 GPUs of 80 GB: 16 B x 8.03e9 / 8 = 16 GB per rank fits; on one GPU it does not.
    check_fits(PRESETS["8b"], 8, 80 * 10**9, 1, "device memory")
    with pytest.raises(UsageError, match="does not fit"):
        check_fits(PRESETS["8b"], 1, 80 * 10**9, 1, "device memory")


def test_comm_interval_union():
    assert _union_us([(0, 10), (5, 15), (20, 25)]) == 20
    assert _union_us([(0, 10), (2, 3)]) == 10
    assert _union_us([]) == 0


@pytest.mark.gpu
def test_gpu_bf16_training_reports_mfu(capsys, db):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA or ROCm GPU")
    code, out, err = cli(capsys, "train", "--np", "1", "--device", "cuda", "--steps", "4", "--json", "--db", db)
    assert code == 0, err
    rows = json_rows(out)
    assert {m.params["dtype"] for m in rows} == {"bf16"} or not torch.cuda.is_bf16_supported()
    assert overall(rows, "peak_memory_bytes", stat="max").params["memory"] == "device_allocated"
