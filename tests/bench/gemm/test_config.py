"""Tests of clusterbench.bench.gemm.config: the validated configuration of a GEMM run (what ``clusterbench gemm`` parsed)."""

from __future__ import annotations

import pytest

from clusterbench.bench.gemm.config import gemm_config as build_config
from clusterbench.bench.gemm.config import parse_dtypes
from clusterbench.errors import UsageError
from clusterbench.families.gemm import spec


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


def test_a_cpu_gets_a_shape_that_takes_seconds_unless_one_is_asked():
    """4096^3 fp32 took 3.5-4 minutes on 2 cores, printing nothing."""
    def cfg(m=None, n=None, k=None, preset=None, device="cpu"):
        return build_config(m, n, k, None, None, None, None, None, None, preset, 10, 2, 5, device, None, True)

    default = cfg()
    assert (default.m, default.n, default.k) == (1024, 1024, 1024) and "1024x1024x1024 by default" in default.about
    asked = cfg(m="4096")
    assert (asked.m, asked.n, asked.k, asked.about) == (4096, 4096, 4096, "")
    preset = cfg(preset="rocblas-fp32-4k")
    assert (preset.m, preset.about) == (4000, "")
