"""gemm: FLOP count, dtypes and presets, the Freivalds check (and a wrong kernel caught),
the CLI on CPU with skips for GPU-only formats."""

from __future__ import annotations

import json

import node_doubles
import pytest
import torch

from clusterbench.bench.gemm import main as gemm_main
from clusterbench.bench.gemm import ops
from clusterbench.bench.gemm.config import gemm_config as build_config
from clusterbench.bench.gemm.config import parse_dtypes
from clusterbench.bench.gemm.main import GemmConfig
from clusterbench.cli import main
from clusterbench.errors import UsageError
from clusterbench.families.gemm import spec
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Failure


def cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_flops_and_seed_figures():
    assert spec.flops(4000, 4000, 4000) == 128_000_000_000
    # The seed's rocblas-bench sgemm line: 97190.6 Gflops at 1317 us.
    assert spec.tflops(4000, 4000, 4000, 1, 1317e-6) == pytest.approx(97.19, rel=1e-3)
    # Strided batched half: 159783 Gflops at 67.2 us for 1024x2048x512, batch 5.
    assert spec.tflops(1024, 2048, 512, 5, 67.2e-6) == pytest.approx(159.78, rel=1e-3)


def test_presets_reproduce_the_seed_commands():
    p = spec.PRESETS
    assert (p["rocblas-fp32-4k"].m, p["rocblas-fp32-4k"].trans_b, p["rocblas-fp32-4k"].dtype) == (4000, "T", "fp32")
    half = p["rocblas-half-batched"]
    assert (half.m, half.n, half.k, half.batch, half.alpha, half.beta, half.dtype) == (1024, 2048, 512, 5, 1.1, 1.0, "fp16")
    assert p["rocblas-int8-batched"].dtype == "int8" and p["rocblas-int8-batched"].batch == 5
    cfg = build_config(None, None, None, None, "bf16", None, None, None, None, "rocblas-half-batched",
                       10, 2, 5, "cpu", None, True)
    assert (cfg.m, cfg.batch, cfg.dtypes, cfg.trans_a, cfg.trans_b) == (1024, 5, ("bf16",), "N", "T")


def test_dtype_names():
    assert parse_dtypes("all") == spec.ALL
    assert parse_dtypes("float,half,bfloat16,i8_r") == ("fp32", "fp16", "bf16", "int8")
    with pytest.raises(UsageError):
        parse_dtypes("fp4")


@pytest.mark.parametrize("dtype", ["fp64", "fp32", "fp16", "bf16", "int8", "fp8_e4m3"])
@pytest.mark.parametrize("ta,tb", [("N", "N"), ("N", "T"), ("T", "N")])
def test_real_gemm_passes_the_check(dtype, ta, tb):
    o = ops.make_operands(48, 40, 64, 2, dtype, ta, tb, 1.0 if dtype != "int8" else 0.0, "cpu")
    ops.gemm_call(o, dtype, 1.5 if dtype != "int8" else 1.0, 1.0 if dtype != "int8" else 0.0)()
    assert ops.check(o, dtype, 1.5 if dtype != "int8" else 1.0, 1.0 if dtype != "int8" else 0.0) is None


def test_check_catches_a_wrong_result_and_a_wrong_alpha():
    o = ops.make_operands(64, 64, 64, 1, "fp32", "N", "T", 0.0, "cpu")
    ops.gemm_call(o, "fp32", 1.0, 0.0)()
    assert ops.check(o, "fp32", 1.0, 0.0) is None
    o.d[0, 3, 7] += 0.5
    assert "exceed the fp32 tolerance" in ops.check(o, "fp32", 1.0, 0.0)
    ops.gemm_call(o, "fp32", 1.0, 0.0)()
    assert ops.check(o, "fp32", 1.1, 0.0) is not None


def test_wrong_kernel_fails_the_run():
    events = []
    cfg = GemmConfig(m=32, n=32, k=32, dtypes=("fp32",), iterations=2, samples=2,
                     kernels=node_doubles.WrongGemm)
    execute(Job(gemm_main.main, cfg, RankOptions(device="cpu"), np=1), events.append)
    fails = [e.reason for e in events if isinstance(e, Failure)]
    assert fails and fails[0].startswith("gemm check failed for fp32 on cpu")


def test_cli_cpu_all_dtypes_json(capsys, db):
    code, out, err = cli(capsys, "gemm", "-m", "64", "-n", "48", "-k", "32", "--batch", "2", "--transB", "T",
                         "--dtype", "fp32,tf32,bf16,int8", "-i", "2", "--samples", "3", "--json", "--db", db)
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    tf = [r for r in rows if r["metric"] == "tflops"]
    assert {r["params"]["dtype"] for r in tf} == {"fp32", "bf16", "int8"}  # tf32 skipped on CPU
    for r in tf:
        p = r["params"]
        assert r["unit"] == "TFLOP/s" and r["value"] > 0 and p["stat"] in ("best", "median")
        assert (p["m"], p["n"], p["k"], p["batch"], p["transA"], p["transB"], p["device"]) == \
            (64, 48, 32, 2, "N", "T", "cpu")
    best = {r["params"]["dtype"]: r["value"] for r in tf if r["params"]["stat"] == "best"}
    med = {r["params"]["dtype"]: r["value"] for r in tf if r["params"]["stat"] == "median"}
    assert all(best[d] >= med[d] for d in best)
    assert {r["unit"] for r in rows if r["metric"] == "time_us"} == {"us"}


def test_cli_table_shows_skip_reason(capsys, db):
    code, out, err = cli(capsys, "gemm", "-m", "32", "-n", "32", "-k", "32", "--dtype", "tf32,fp64",
                         "-i", "1", "--samples", "1", "--db", db)
    assert code == 0, err
    assert "skipped tf32 on cpu: tf32 is a GPU tensor-core mode" in out
    assert any(ln.split()[5:7] == ["fp64", "N"] for ln in out.splitlines() if not ln.startswith("#"))


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


# -- what runs on which GPU (decided on CPU with the facts a GPU would report) -----------------------

@pytest.mark.parametrize("dtype,hip,arch,cc,version,why", [
    ("tf32", False, None, (7, 0), "2.6.0", "compute capability 8.0"),
    ("tf32", False, None, (9, 0), "2.6.0", None),
    ("tf32", True, "gfx90a:sramecc+:xnack-", (9, 0), "2.7.0", "gfx90a has no tf32"),
    ("tf32", True, "gfx950", (9, 5), "2.9.0", "gfx950 has no tf32"),
    ("tf32", True, "gfx942:sramecc+:xnack-", (9, 4), "2.6.0+rocm6.2", "does not enable tf32 on ROCm"),
    ("tf32", True, "gfx942:sramecc+:xnack-", (9, 4), "2.7.1+rocm6.3", None),
    ("fp8_e4m3", False, None, (8, 0), "2.6.0", "8.9 or newer"),
    ("fp8_e5m2", False, None, (9, 0), "2.6.0", None),
    ("fp8_e4m3", True, "gfx90a", (9, 0), "2.6.0", "gfx90a has no fp8"),
    ("fp8_e4m3", True, "gfx942", (9, 4), "2.6.0", None),
    ("fp8_e5m2", True, "gfx950", (9, 5), "2.6.0", None),
    ("bf16", True, "gfx90a", (9, 0), "2.6.0", None),
])
def test_unsupported_on(dtype, hip, arch, cc, version, why):
    got = spec.unsupported_on(dtype, hip, arch, cc, version)
    assert (got is None) if why is None else (why in got), got


def test_fp8_formats_follow_the_architecture():
    assert spec.input_dtypes("fp8_e4m3") == ("float8_e4m3fn", "float8_e4m3fn")
    assert spec.input_dtypes("fp8_e5m2") == ("float8_e4m3fn", "float8_e5m2")   # e5m2 x e5m2 is rejected
    assert spec.input_dtypes("fp8_e5m2", "gfx942:sramecc+:xnack-") == ("float8_e4m3fnuz", "float8_e5m2fnuz")
    assert spec.input_dtypes("fp8_e4m3", "gfx950") == ("float8_e4m3fn", "float8_e4m3fn")
    assert spec.input_dtypes("bf16", "gfx942") == ("bfloat16", "bfloat16")


@pytest.mark.parametrize("arch", [None, "gfx942:sramecc+:xnack-"])
def test_fp8_operands_are_row_major_a_column_major_b(arch):
    assert spec.layout("fp8_e5m2", "N", "N") == spec.layout("int8", "T", "N") == ("N", "T")
    assert spec.layout("fp32", "T", "N") == ("T", "N")
    o = ops.make_operands(32, 48, 64, 2, "fp8_e5m2", *spec.layout("fp8_e5m2", "N", "N"), 0.0, "cpu", arch=arch)
    assert o.a[0].stride() == (64, 1) and o.b[0].stride() == (1, 64)   # what torch._scaled_mm takes
    fnuz = arch is not None
    assert (o.a.dtype, o.b.dtype) == ((torch.float8_e4m3fnuz, torch.float8_e5m2fnuz) if fnuz
                                      else (torch.float8_e4m3fn, torch.float8_e5m2))
    ops.gemm_call(o, "fp8_e5m2", 1.0, 0.0)()
    assert ops.check(o, "fp8_e5m2", 1.0, 0.0) is None


def test_unsupported_reads_the_gcn_arch(monkeypatch):
    from clusterbench.bench.gemm import main as gemm_main

    props = type("P", (), {"gcnArchName": "gfx90a:sramecc+:xnack-"})()
    monkeypatch.setattr(torch.version, "hip", "6.2.41134", raising=False)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda dev: props)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda dev: (9, 0))
    dev = torch.device("cuda", 0)
    assert gemm_main.device_arch(dev) == "gfx90a:sramecc+:xnack-"
    assert "gfx90a has no tf32" in gemm_main.unsupported("tf32", dev)
    assert "gfx90a has no fp8" in gemm_main.unsupported("fp8_e4m3", dev)
    assert gemm_main.unsupported("fp16", dev) is None


def test_tf32_on_rocm_sets_hipblaslt_switch_and_checks_it_took(monkeypatch):
    import os

    from clusterbench.bench.gemm import main as gemm_main

    monkeypatch.setattr(torch.version, "hip", "6.3.42131", raising=False)
    monkeypatch.delenv(gemm_main.TF32_ENV, raising=False)
    dev = torch.device("cuda", 0)

    class Matmul:
        def __init__(self, honours: bool):
            self.honours, self._on = honours, False

        @property
        def allow_tf32(self):
            return self._on

        @allow_tf32.setter
        def allow_tf32(self, on):
            # ROCm's torch: the flag is ignored unless HIPBLASLT_ALLOW_TF32=1 is set
            self._on = on and self.honours and os.environ.get(gemm_main.TF32_ENV) == "1"

    monkeypatch.setattr(torch.backends.cuda, "matmul", Matmul(honours=True))
    assert gemm_main._set_tf32(dev, True) is None and os.environ[gemm_main.TF32_ENV] == "1"
    assert gemm_main._set_tf32(dev, False) is None and gemm_main.TF32_ENV not in os.environ
    monkeypatch.setattr(torch.backends.cuda, "matmul", Matmul(honours=False))   # an older torch
    assert "did not enable tf32" in gemm_main._set_tf32(dev, True)
    gemm_main._set_tf32(dev, False)
    monkeypatch.setenv(gemm_main.TF32_ENV, "0")                                   # the user's own value
    monkeypatch.setattr(torch.backends.cuda, "matmul", Matmul(honours=True))
    assert gemm_main._set_tf32(dev, True) is None and os.environ[gemm_main.TF32_ENV] == "1"
    gemm_main._set_tf32(dev, False)
    assert os.environ[gemm_main.TF32_ENV] == "0"


def test_int8_asked_row_major_runs_column_major_b_with_a_note(capsys, db):
    code, out, err = cli(capsys, "gemm", "-m", "64", "-n", "32", "-k", "32", "--dtype", "int8,fp32",
                         "-i", "1", "--samples", "1", "--db", db)
    assert code == 0, err
    assert "int8 runs transA=N transB=T (A row-major, B column-major)" in out
    rows = [ln.split() for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]
    layouts = {r[5]: (r[6], r[7]) for r in rows if len(r) > 7}
    assert layouts["int8"] == ("N", "T") and layouts["fp32"] == ("N", "N")


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
