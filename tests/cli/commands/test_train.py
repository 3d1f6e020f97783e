"""Tests of clusterbench.cli.commands.train: ``clusterbench train``."""

import pytest
import torch
from work_helpers import cli, stored


def test_shard_size_without_hybrid_is_refused(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, out, err = cli(capsys, "train", "--np", "2", "--device", "cpu", "--shard-size", "2", "--steps", "2",
                         "--warmup", "1", "--no-comm-share", "--db", db)
    assert code == 2 and err.count("\n") == 1 and "--shard-size is for --strategy hybrid" in err, err
    assert out == "" and stored(db) == []


@pytest.mark.parametrize("argv", [["train", "--batch", "99999999999999999999999"],
                                  ["infer-tp", "--batch-sizes", "1,99999999999999999999999"]])
def test_a_batch_no_device_holds_is_refused_before_any_rank_starts(argv, tmp_path):
    from judge_helpers import run_cli

    code, out, err = run_cli(*argv, "--db", tmp_path / "r.db")
    assert code == 2 and err.count("\n") == 1 and "past any tensor" in err, (code, err)
    if (tmp_path / "r.db").exists():
        from clusterbench.store import Store

        with Store.open(tmp_path / "r.db") as store:
            assert store.list_runs() == []


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
