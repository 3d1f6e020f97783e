"""System tests (train): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

import json
import math

import pytest
import torch
from work_helpers import _live_matches_results_show, cli, json_rows, overall, stored

from clusterbench.bench.workloads.model import PRESETS, build_model, resolve_shape

BATCH = 8


def test_train_overall_is_the_timed_steps_and_every_output_agrees(capsys: pytest.CaptureFixture[str],
                                                                   db: str) -> None:
    batch, steps, warmup = 4, 4, 2
    code, out, err = cli(capsys, "train", "--np", "2", "--device", "cpu", "--steps", str(steps), "--warmup",
                         str(warmup), "--batch", str(batch), "--no-comm-share", "--json", "--db", db)
    assert code == 0, err
    rows = json_rows(out)
    seq = PRESETS["tiny"].seq
    timed = [m.value / 1e3 for m in rows if m.metric == "step_time_ms" and m.params.get("step", -1) >= warmup]
    assert len(timed) == steps - warmup
    assert overall(rows, "samples_per_s").value == pytest.approx(batch * len(timed) / sum(timed))
    assert overall(rows, "tokens_per_s").value == pytest.approx(batch * seq * len(timed) / sum(timed))
    assert overall(rows, "step_time_ms").value == pytest.approx(sum(timed) / len(timed) * 1e3)
    [(run, ms)] = stored(db)
    with torch.device("meta"):
        assert run.meta["train"]["params"] == sum(p.numel() for p in build_model(PRESETS["tiny"]).parameters())
    assert [(m.metric, m.value, m.params) for m in ms] == [(m.metric, m.value, m.params) for m in rows]

    code, shown, _ = cli(capsys, "results", "show", str(run.id), "--db", db, "--json")
    assert code == 0
    again = [json.loads(line) for line in shown.splitlines() if '"measurement"' in line]
    assert [(d["metric"], d["value"], d["params"]) for d in again] == [(m.metric, m.value, m.params) for m in rows]
    code, table, _ = cli(capsys, "results", "show", str(run.id), "--db", db)
    line = f"# overall samples_per_s (avg): {overall(rows, 'samples_per_s').value:.6g} samples/s"
    assert code == 0 and line in table


def test_train_mfu_note_prints_where_results_show_prints_it(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, out, err = cli(capsys, "train", "--np", "2", "--device", "cpu", "--steps", "2", "--warmup", "1",
                         "--batch", "2", "--no-comm-share", "--db", db)
    assert code == 0, err
    assert "# mfu: no fp32 peak" in out
    _live_matches_results_show(capsys, db, out)


def test_kv_heads_as_many_as_heads_is_the_preset_not_a_custom_model(capsys: pytest.CaptureFixture[str],
                                                                     db: str) -> None:
    code, out, err = cli(capsys, "train", "--np", "1", "--device", "cpu", "--kv-heads", "4", "--batch", "1",
                         "--steps", "1", "--warmup", "0", "--no-comm-share", "--json", "--db", db)
    assert code == 0, err
    assert {m.params["model"] for m in json_rows(out)} == {"tiny"}
    assert resolve_shape("tiny", kv_heads=4) == PRESETS["tiny"]
    assert resolve_shape("1b", kv_heads=8) == PRESETS["1b"]
    assert resolve_shape("tiny", kv_heads=2).kv_heads == 2


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


@pytest.mark.gpu
def test_gpu_bf16_training_reports_mfu(capsys, db):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA or ROCm GPU")
    code, out, err = cli(capsys, "train", "--np", "1", "--device", "cuda", "--steps", "4", "--json", "--db", db)
    assert code == 0, err
    rows = json_rows(out)
    assert {m.params["dtype"] for m in rows} == {"bf16"} or not torch.cuda.is_bf16_supported()
    assert overall(rows, "peak_memory_bytes", stat="max").params["memory"] == "device_allocated"
