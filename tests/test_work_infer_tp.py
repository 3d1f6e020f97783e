"""``clusterbench infer-tp``: column- and row-parallel toy inference on gloo, 1 rank vs 2."""

import pytest
from work_helpers import cli, json_rows, stored

from clusterbench.bench.workloads.infer_tp import SEED_BATCHES, InferTpConfig, memory_need, validate
from clusterbench.cli.commands.infer_tp import parse_batches
from clusterbench.errors import UsageError


def _check(rows, batches):
    for b in batches:
        ms = {(m.metric, m.params["stat"]): m for m in rows if m.params["batch"] == b}
        lat, sps = ms[("latency_ms", "avg")], ms[("samples_per_s", "avg")]
        assert sps.value * lat.value / 1e3 == pytest.approx(b)
        assert ms[("latency_ms", "min")].value <= lat.value


@pytest.mark.parametrize("mode", ["column", "row"])
def test_two_ranks_run_check_and_store(capsys, db, mode):
    code, out, err = cli(capsys, "infer-tp", "--np", "2", "--device", "cpu", "--mode", mode, "--hidden", "128",
                         "--layers", "2", "--batch-sizes", "16..64", "--iters", "3", "--warmup", "1",
                         "--json", "--db", db, "--tag", "setup=partitions")
    assert code == 0, err
    rows = json_rows(out)
    _check(rows, [16, 32, 64])
    assert {m.params["mode"] for m in rows} == {mode}
    [(run, ms)] = stored(db)
    assert run.status == "complete" and run.ranks == 2 and len(ms) == len(rows) == 9


def test_one_rank_whole_device_pairs_with_partitions_in_compare(capsys, db):
    for np, setup in (("1", "whole"), ("2", "split")):
        for _ in range(2):
            code, _, err = cli(capsys, "infer-tp", "--np", np, "--device", "cpu", "--hidden", "64", "--layers", "1",
                               "--batch-sizes", "32", "--iters", "2", "--warmup", "0", "--db", db,
                               "--tag", f"setup={setup}")
            assert code == 0, err
    code, out, err = cli(capsys, "compare", "setup=whole", "setup=split", "--metric", "samples_per_s",
                         "--json", "--db", db)
    assert code == 0, err
    assert out.count("samples_per_s") == 1  # the two setups' rows pair up (no "ranks" param)


def test_table_output(capsys, db):
    code, out, _ = cli(capsys, "infer-tp", "--np", "1", "--device", "cpu", "--hidden", "32", "--layers", "1",
                       "--batch-sizes", "8,16", "--iters", "2", "--db", db)
    assert code == 0 and "latency_ms" in out and "column-parallel" in out
    assert len([line for line in out.splitlines() if line.strip().startswith(("8 ", "16 "))]) == 2


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
    (["--layers", "0"], "--layers must be at least 1"),
    (["--dtype", "bf16"], "needs a GPU"),
    (["--hidden", "65536", "--np", "2", "--batch-sizes", "8"], "does not fit"),
])
def test_bad_input(capsys, db, args, message):
    code, _, err = cli(capsys, "infer-tp", "--device", "cpu", *args, "--db", db)
    assert code == 2 and message in err and err.count("\n") == 1
    assert stored(db) == []
