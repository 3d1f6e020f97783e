"""Tests of clusterbench.cli.commands.ddp_comm: ``clusterbench ddp-comm``."""

import pytest
import torch
from work_helpers import cli, json_rows, overall, stored

from clusterbench.bench.workloads.ddp_comm import check_bucket_cap
from clusterbench.errors import UsageError


@pytest.mark.parametrize("cap", ["1e300", "8796093022208"])
def test_ddp_bucket_cap_past_int64_bytes_is_refused(capsys: pytest.CaptureFixture[str], db: str, cap: str) -> None:
    code, out, err = cli(capsys, "ddp-comm", "--np", "2", "--device", "cpu", "--size", "1M", "--steps", "1",
                         "--bucket-cap-mb", cap, "--db", db)
    assert code == 2 and err.count("\n") == 1 and "--bucket-cap-mb" in err and "Traceback" not in err, err
    assert out == "" and stored(db) == []
    check_bucket_cap(8796093022207.0)  # the largest whole MiB DDP takes
    with pytest.raises(UsageError):
        check_bucket_cap(float("nan"))


@pytest.mark.parametrize("args,message", [
    (["--layers", "0"], "--layers must be at least 1"),
    (["--size", "-4M"], "invalid --size"),
    (["--link-speed", "fast"], "invalid rate"),
    (["--size", "1T", "--np", "2"], "does not fit"),
])
def test_bad_input(capsys, db, args, message):
    code, _, err = cli(capsys, "ddp-comm", "--device", "cpu", *args, "--db", db)
    assert code == 2 and message in err and err.count("\n") == 1
    assert stored(db) == []


@pytest.mark.gpu
def test_gpu_nccl_ddp_comm(capsys, db):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA or ROCm GPU")
    code, out, err = cli(capsys, "ddp-comm", "--np", "1", "--device", "cuda", "--size", "64M", "--steps", "2",
                         "--json", "--db", db)
    assert code == 0, err
    assert overall(json_rows(out), "algbw").value > 0
