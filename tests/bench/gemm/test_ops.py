"""Tests of clusterbench.bench.gemm.ops: operands and the timed call for one GEMM shape and dtype, plus the result check."""

from __future__ import annotations

import pytest
import torch

from clusterbench.bench.gemm import ops
from clusterbench.families.gemm import spec


@pytest.mark.parametrize("dtype", [d.name for d in spec.DTYPES.values() if not d.gpu_only])
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
