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
