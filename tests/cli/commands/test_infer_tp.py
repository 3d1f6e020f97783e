"""Tests of clusterbench.cli.commands.infer_tp: ``clusterbench infer-tp``."""

import pytest
import torch
from work_helpers import _check, cli, json_rows, stored


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
