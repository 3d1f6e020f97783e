"""``clusterbench infer-tp``: column- and row-parallel toy inference on gloo, 1 rank vs 2."""

import pytest
import torch
from work_helpers import cli, json_rows, stored

from clusterbench.bench.workloads.infer_tp import (
    SEED_BATCHES,
    InferTpConfig,
    memory_need,
    parse_batches,
    validate,
)
from clusterbench.errors import UsageError


def _check(rows, batches):
    for b in batches:
        ms = {(m.metric, m.params["stat"]): m for m in rows if m.params["batch"] == b}
        lat, sps = ms[("latency_ms", "avg")], ms[("samples_per_s", "avg")]
        assert sps.value * lat.value / 1e3 == pytest.approx(b)
        assert ms[("latency_ms", "min")].value <= lat.value


def test_two_ranks_column_vs_one_whole_device_compare(capsys, db):
    common = ["--device", "cpu", "--hidden", "128", "--layers", "2", "--batch-sizes", "16..64", "--iters", "3",
              "--warmup", "1", "--json", "--db", db]
    code, out, err = cli(capsys, "infer-tp", "--np", "2", *common, "--tag", "setup=split")
    assert code == 0, err
    rows = json_rows(out)
    _check(rows, [16, 32, 64])
    assert {m.params["mode"] for m in rows} == {"column"}
    code, out, err = cli(capsys, "infer-tp", "--np", "1", *common, "--tag", "setup=whole")
    assert code == 0, err
    _check(json_rows(out), [16, 32, 64])
    runs = stored(db)
    assert [(r.ranks, r.status, len(ms)) for r, ms in runs] == [(2, "complete", 9), (1, "complete", 9)]
    # The seed's comparison, 1 whole device vs N partitions: rows pair up (no "ranks" param).
    code, out, err = cli(capsys, "compare", "setup=whole", "setup=split", "--metric", "samples_per_s",
                         "--json", "--db", db)
    assert code == 0, err
    assert out.count("samples_per_s") == 3
    code, out, _ = cli(capsys, "results", "show", str(runs[0][0].id), "--db", db)
    assert code == 0 and "latency_ms" in out and "column-parallel" in out and "2 rank(s)" in out
    assert len([line for line in out.splitlines() if line.strip().startswith(("16 ", "32 ", "64 "))]) == 3


def test_row_parallel_all_reduce(capsys, db):
    code, out, err = cli(capsys, "infer-tp", "--np", "2", "--device", "cpu", "--mode", "row", "--hidden", "64",
                         "--layers", "3", "--batch-sizes", "8,24", "--iters", "2", "--warmup", "0", "--json",
                         "--db", db)
    assert code == 0, err
    rows = json_rows(out)
    _check(rows, [8, 24])
    assert {m.params["mode"] for m in rows} == {"row"}


def test_batch_lists():
    assert parse_batches("128..32768") == SEED_BATCHES
    assert parse_batches("1,3, 5") == (1, 3, 5)
    for bad in ("", "64..32", "0..4"):
        with pytest.raises(UsageError):
            parse_batches(bad)


def test_validation_and_memory():
    with pytest.raises(UsageError, match="not divisible"):
        validate(InferTpConfig(hidden=100), 8)
    with pytest.raises(UsageError, match="--layers"):
        validate(InferTpConfig(layers=0), 1)
    validate(InferTpConfig(), 8)
    # 4 layers of 4096^2 bf16 = 128 MiB full + 16 MiB shard + 4 x 32768 x 4096 x 2 = 1 GiB activations
    assert memory_need(InferTpConfig(), 8, 2) == 128 * 2**20 + 16 * 2**20 + 2**30


@pytest.mark.parametrize("args,message", [
    (["--hidden", "63", "--np", "2"], "not divisible by the 2 ranks"),
    (["--layers", "0"], "Invalid value for '--layers': 0 is not in the range x>=1"),
    (["--hidden", "-4"], "Invalid value for '--hidden'"),
    (["--dtype", "bf16"], "needs a GPU"),
    (["--hidden", "65536", "--np", "2", "--batch-sizes", "8"], "does not fit"),
])
def test_bad_input(capsys, db, args, message):
    code, _, err = cli(capsys, "infer-tp", "--device", "cpu", *args, "--db", db)
    assert code == 2 and message in err and err.count("\n") == 1
    assert stored(db) == []


@pytest.mark.gpu
def test_gpu_bf16_column_parallel(capsys, db):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA or ROCm GPU")
    code, out, err = cli(capsys, "infer-tp", "--np", "1", "--device", "cuda", "--dtype", "bf16", "--hidden",
                         "1024", "--batch-sizes", "128..512", "--iters", "3", "--json", "--db", db)
    assert code == 0, err
    rows = json_rows(out)
    _check(rows, [128, 256, 512])
    assert {m.params["dtype"] for m in rows} == {"bf16"}
