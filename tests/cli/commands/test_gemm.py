"""Tests of clusterbench.cli.commands.gemm: ``clusterbench gemm``."""

from __future__ import annotations

import json
import signal

import pytest
import torch
from bench_cli import cli
from judge_helpers import _one
from judge_helpers import cli as cli_qualify_preflight
from probe_profiles import (
    SMALL_STREAM,
    STREAM_FLOOR,
    _profile,
    _replace_callback,
)

from clusterbench.judge.select import Row, load_runs, rows_of
from clusterbench.ranks.signals import Interrupted
from clusterbench.store import Store


@pytest.fixture(scope="module")
def rows(seeded) -> list[Row]:
    with Store.open(seeded) as s:
        return rows_of(load_runs(s, ["seed=mi300x"]))


@pytest.mark.parametrize("args,words", [
    (["-m", "0"], "invalid -m '0'"),
    (["-n", "-3"], "invalid -n '-3'"),
    (["--dtype", "fp4"], "unknown dtype 'fp4'"),
    (["--transA", "X"], "expected N or T"),
    (["--preset", "nope"], "unknown preset 'nope'"),
    (["-m", "1M", "-n", "1M", "-k", "1M"], "more than the"),
    (["--devices", "2"], "out of range"),
])
def test_bad_input(capsys, db, args, words):
    code, out, err = cli(capsys, "gemm", *args, "--db", db)
    assert code == 2 and err.count("\n") == 1 and err.startswith("clusterbench: error: "), err
    assert words in err and "Traceback" not in out + err


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_gpu_dtypes_run_or_skip_with_reason(capsys, db):
    code, out, err = cli(capsys, "gemm", "-m", "256", "-n", "256", "-k", "256", "--dtype", "all",
                         "--devices", "0", "--json", "--db", db)
    assert code == 0, err
    dtypes = {d["params"]["dtype"] for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"}
    assert {"fp32", "fp16", "bf16"} <= dtypes


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_fp8_and_batched_int8_run_on_a_capable_gpu(capsys, db):
    """On an H100/MI300X: both fp8 rows run (not 'not supported'), and the batched int8 preset's
    loop is replayed from a graph (no 'could not be captured' note)."""
    cc = torch.cuda.get_device_capability(0)
    hip = bool(getattr(torch.version, "hip", None))
    code, out, err = cli(capsys, "gemm", "-m", "1024", "-n", "1024", "-k", "1024", "--dtype", "fp8_e4m3,fp8_e5m2",
                         "--devices", "0", "--json", "--db", db)
    assert code == 0, err
    ran = {d["params"]["dtype"] for d in map(json.loads, out.splitlines())
           if d["kind"] == "measurement" and d["metric"] == "tflops"}
    if hip or cc >= (8, 9):
        assert ran == {"fp8_e4m3", "fp8_e5m2"}, out
    code, out, err = cli(capsys, "gemm", "--preset", "rocblas-int8-batched", "--devices", "0", "--db", db)
    assert code == 0, err
    assert "could not be captured" not in out and "int8" in out


def test_an_interrupt_outside_a_steps_run_stops_the_suite(capsys, db, tmp_path, monkeypatch):
    """A signal that reaches a step before its run handles signals (parsing, opening the store)
    became click's Abort, which qualify took for a failed step ("internal error: Abort") and went
    on with the suite."""
    def interrupted(**_kwargs):
        raise Interrupted(signal.SIGTERM)

    _replace_callback(monkeypatch, "gemm", interrupted)
    profile = _profile(tmp_path, [{"name": "g", "command": ["gemm", "--device", "cpu"]},
                                  {"name": "s", "command": SMALL_STREAM}], [STREAM_FLOOR])
    rc, _, err = cli_qualify_preflight(capsys, "qualify", "--profile", profile, "--db", db, "--no-preflight",
                     "-o", tmp_path / "q.html")
    assert rc == 143, err
    assert "step 2/2" not in err and "internal error" not in err, err
    with Store.open(db) as s:
        assert s.list_runs() == []


@pytest.mark.parametrize("dtype", ["fp32", "float", "s", "float32", "FP32"])
def test_gemm_dtype_aliases(rows, dtype):
    o = _one(rows, benchmark="gemm", metric="tflops", params={"m": "4000", "dtype": dtype}, op=">=", value=97.19)
    assert (o.status, o.matched) == ("pass", 1)
