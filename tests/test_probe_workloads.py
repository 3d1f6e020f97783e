"""Probe of train, ddp-comm and infer-tp against independent computations: FLOPs per token from the
module's own matmul weights, the activation bound against what autograd really saves, DDP's real
bucket bytes, the overall figures from the timed steps only, and odd inputs refused with exit 2."""

import json
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from work_helpers import cli, json_rows, overall, stored

from clusterbench.bench.workloads import ddp_comm as ddp_mod
from clusterbench.bench.workloads import train as train_mod
from clusterbench.bench.workloads.ddp_comm import (
    BYTES_PER_PARAM,
    build_dummy,
    check_bucket_cap,
    layer_elements,
)
from clusterbench.bench.workloads.infer_tp import parse_batches
from clusterbench.bench.workloads.model import (
    PRESETS,
    ModelShape,
    activation_bytes,
    build_model,
    param_count,
    train_flops_per_token,
)
from clusterbench.errors import UsageError
from clusterbench.families.workloads.table import DdpCommTable
from clusterbench.ranks.context import RankOptions
from clusterbench.records import Measurement, Run


def _matmul_weights(shape: ModelShape) -> int:
    from torch import nn

    with torch.device("meta"):
        model = build_model(shape)
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))


@pytest.mark.parametrize("shape", [PRESETS["tiny"], PRESETS["1b"], ModelShape(3, 48, 6, 5, 11, 20, kv_heads=2)])
def test_flops_per_token_counts_the_matmul_weights_and_full_attention(shape: ModelShape) -> None:
    with torch.device("meta"):
        n = sum(p.numel() for p in build_model(shape).parameters())
    assert param_count(shape) == n
    # 6 per matmul weight, plus Q.K^T and A.V over the full T x T matrix: 2 x 2 T h forward, x3.
    want = 6 * _matmul_weights(shape) + 3 * 4 * shape.seq * shape.hidden * shape.layers
    # The norms' weights are no matmul's; the definition keeps them in N (as torchtitan does).
    norms = (2 * shape.layers + 1) * shape.hidden
    assert train_flops_per_token(shape) == pytest.approx(want + 6 * norms)


def test_the_1b_preset_overstatement_of_6n_is_the_documented_9_percent() -> None:
    shape = PRESETS["1b"]
    assert 6 * param_count(shape) / train_flops_per_token(shape) == pytest.approx(1.09, abs=0.005)


def test_activation_bound_is_below_what_autograd_saves() -> None:
    shape = ModelShape(layers=2, hidden=32, heads=4, seq=8, vocab=50, ffn=64)
    batch = 3
    model = build_model(shape)
    weights = {p.data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.data_ptr() not in weights:
            saved[t.data_ptr()] = max(saved.get(t.data_ptr(), 0), t.numel() * t.element_size())
        return t

    x = torch.randint(0, shape.vocab, (batch, shape.seq))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        logits = model(x)
        torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), x.flatten())
    bound = activation_bytes(shape, batch, 4)
    assert bound == batch * shape.seq * (shape.layers * shape.hidden * 4 + 4 * shape.vocab)
    assert 0 < bound <= sum(saved.values())


def _train_config(monkeypatch: pytest.MonkeyPatch, shape: ModelShape, **kw: object) -> train_mod.TrainConfig:
    monkeypatch.setattr(train_mod, "cpu_memory_available", lambda: 8 * 2**30)
    args: dict[str, object] = {"preset": "tiny", "batch": 4, "steps": 3, "warmup": 1, "strategy": "full",
                               "shard_size": None, "dtype": "auto", "lr": 1e-3, "comm_share": True, "np": 2,
                               "options": RankOptions(device="cpu")}
    return train_mod.train_config(shape, **{**args, **kw})  # type: ignore[arg-type]


def test_huge_sequence_or_batch_is_refused_before_any_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    tiny = PRESETS["tiny"]
    _train_config(monkeypatch, tiny)  # the tiny model fits 8 GiB
    # The weights are 1.5 MiB; 2 ranks x 2 sequences of 10^7 tokens x 1 KiB of activations each are not.
    long = ModelShape(**{**tiny.to_dict(), "seq": 10**7})
    with pytest.raises(UsageError, match="GiB of activations"):
        _train_config(monkeypatch, long)
    with pytest.raises(UsageError, match="GiB of activations"):
        _train_config(monkeypatch, tiny, batch=2 * 10**7)


def test_shard_size_without_hybrid_is_refused(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, out, err = cli(capsys, "train", "--np", "2", "--device", "cpu", "--shard-size", "2", "--steps", "2",
                         "--warmup", "1", "--no-comm-share", "--db", db)
    assert code == 2 and err.count("\n") == 1 and "--shard-size is for --strategy hybrid" in err, err
    assert out == "" and stored(db) == []


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


# No postponed annotations in this file: DDP compares the hook's annotations with the real types.
def _record_bucket(seen: list[int], bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    seen.append(bucket.buffer().numel() * bucket.buffer().element_size())
    done: torch.futures.Future[torch.Tensor] = torch.futures.Future()
    done.set_result(bucket.buffer())
    return done


def test_ddp_bytes_are_the_bytes_of_its_real_buckets(tmp_path: Path) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        for layers, size, cap in ((4, 10 * 2**20 + 3, 1.0), (3, 1000, 25.0)):
            elements = layer_elements(layers, size)
            ddp = DDP(build_dummy(layers, elements, torch.device("cpu")), bucket_cap_mb=cap,
                      gradient_as_bucket_view=True)
            seen: list[int] = []
            ddp.register_comm_hook(seen, _record_bucket)
            for _ in range(2):   # the second step runs on the rebuilt buckets
                seen.clear()
                ddp(torch.ones(1)).backward()
            assert sum(seen) == elements * layers * BYTES_PER_PARAM
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("cap", ["1e300", "8796093022208"])
def test_ddp_bucket_cap_past_int64_bytes_is_refused(capsys: pytest.CaptureFixture[str], db: str, cap: str) -> None:
    code, out, err = cli(capsys, "ddp-comm", "--np", "2", "--device", "cpu", "--size", "1M", "--steps", "1",
                         "--bucket-cap-mb", cap, "--db", db)
    assert code == 2 and err.count("\n") == 1 and "--bucket-cap-mb" in err and "Traceback" not in err, err
    assert out == "" and stored(db) == []
    check_bucket_cap(8796093022207.0)  # the largest whole MiB DDP takes
    with pytest.raises(UsageError):
        check_bucket_cap(float("nan"))


def test_ddp_many_tiny_layers_are_refused_before_any_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ddp_mod, "cpu_memory_available", lambda: 8 * 2**30)
    args = {"bucket_cap_mb": 25.0, "steps": 1, "warmup": 0, "np": 2, "options": RankOptions(device="cpu")}
    ddp_mod.ddp_comm_config(layers=16, size="64M", **args)  # type: ignore[arg-type]
    # 64 MiB of gradients fit; 2**24 parameter tensors of one element on each of 2 ranks do not.
    with pytest.raises(UsageError, match="--layers 16777216 is too many"):
        ddp_mod.ddp_comm_config(layers=2**24, size="64M", **args)  # type: ignore[arg-type]


def test_ddp_footer_names_a_size_under_one_mib() -> None:
    m = Measurement("ddp_comm", "algbw", 1.0, "GB/s", {"layers": 1, "bytes": 996, "bucket_cap_mb": 25.0})
    assert DdpCommTable().footer(Run("ddp_comm"), [m]) == [
        "# 1 dummy layers, 996 bytes of gradients, bucket cap 25 MiB"]
    big = Measurement("ddp_comm", "algbw", 1.0, "GB/s", {"layers": 16, "bytes": 536 << 20, "bucket_cap_mb": 25.0})
    assert "536 MiB of gradients" in DdpCommTable().footer(Run("ddp_comm"), [big])[0]


def _live_matches_results_show(capsys: pytest.CaptureFixture[str], db: str, live: str) -> None:
    code, shown, err = cli(capsys, "results", "show", "last", "--db", db)
    assert code == 0, err
    # results show adds the run's id, times, command and tags above the table; live adds "stored"
    assert [line for line in live.splitlines() if not line.startswith("# run ")] == [
        line for line in shown.splitlines() if not line.startswith(("# run ", "# source: ", "# tags: "))]


def test_train_mfu_note_prints_where_results_show_prints_it(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, out, err = cli(capsys, "train", "--np", "2", "--device", "cpu", "--steps", "2", "--warmup", "1",
                         "--batch", "2", "--no-comm-share", "--db", db)
    assert code == 0, err
    assert "# mfu: no fp32 peak" in out
    _live_matches_results_show(capsys, db, out)


def test_infer_tp_measures_a_repeated_batch_size_once(capsys: pytest.CaptureFixture[str], db: str) -> None:
    assert parse_batches("8,8,1K,1024") == (8, 1024)
    code, out, err = cli(capsys, "infer-tp", "--np", "2", "--device", "cpu", "--hidden", "32", "--layers", "2",
                         "--batch-sizes", "4,4,2", "--iters", "2", "--warmup", "0", "--db", db)
    assert code == 0, err
    _live_matches_results_show(capsys, db, out)
    [(_run, rows)] = stored(db)
    keys = [(m.metric, m.params["batch"], m.params["stat"]) for m in rows]
    assert len(keys) == len(set(keys)) == 6
    for b in (4, 2):
        avg = {m.metric: m.value for m in rows if m.params["batch"] == b and m.params["stat"] == "avg"}
        assert avg["samples_per_s"] * avg["latency_ms"] / 1e3 == pytest.approx(b)
