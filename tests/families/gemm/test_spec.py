"""Tests of clusterbench.families.gemm.spec: gEMM as data."""

from __future__ import annotations

import pytest

from clusterbench.families.gemm import spec


def test_flops_and_seed_figures():
    assert spec.flops(4000, 4000, 4000) == 128_000_000_000
    # The seed's rocblas-bench sgemm line: 97190.6 Gflops at 1317 us.
    assert spec.tflops(4000, 4000, 4000, 1, 1317e-6) == pytest.approx(97.19, rel=1e-3)
    # Strided batched half: 159783 Gflops at 67.2 us for 1024x2048x512, batch 5.
    assert spec.tflops(1024, 2048, 512, 5, 67.2e-6) == pytest.approx(159.78, rel=1e-3)


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
