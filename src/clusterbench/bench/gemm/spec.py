"""GEMM as data: the FLOP count, the dtypes and their storage, tolerances, and the presets.

TFLOP/s = 2 * m * n * k * batch / time / 1e12 (one multiply and one add per inner-product term;
alpha/beta scaling is not counted, as rocblas-bench does not count it either).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DtypeSpec:
    name: str
    inputs: str      # torch dtype name of A and B
    output: str      # torch dtype name of D
    path: str        # "matmul" (addmm/baddbmm), "int_mm" (int8 -> int32), "scaled_mm" (fp8)
    tol: float       # check tolerance relative to |alpha|*|A||B||x| + |beta||C||x|
    gpu_only: str = ""  # reason when the format exists only on GPUs


DTYPES: dict[str, DtypeSpec] = {d.name: d for d in (
    DtypeSpec("fp64", "float64", "float64", "matmul", 1e-10),
    DtypeSpec("fp32", "float32", "float32", "matmul", 1e-4),
    DtypeSpec("tf32", "float32", "float32", "matmul", 5e-3,
              gpu_only="tf32 is a GPU tensor-core mode (NVIDIA Ampere or newer)"),
    DtypeSpec("fp16", "float16", "float16", "matmul", 5e-3),
    DtypeSpec("bf16", "bfloat16", "bfloat16", "matmul", 2e-2),
    DtypeSpec("int8", "int8", "int32", "int_mm", 1e-12),
    DtypeSpec("fp8_e4m3", "float8_e4m3fn", "bfloat16", "scaled_mm", 2e-2),
    DtypeSpec("fp8_e5m2", "float8_e5m2", "bfloat16", "scaled_mm", 2e-2),
)}
ALL = tuple(DTYPES)
ALIASES = {"float": "fp32", "double": "fp64", "half": "fp16", "s": "fp32", "d": "fp64", "h": "fp16",
           "float32": "fp32", "float64": "fp64", "float16": "fp16", "bfloat16": "bf16",
           "fp8": "fp8_e4m3", "i8": "int8", "i8_r": "int8"}


def canonical(dtype: str) -> str:
    d = dtype.strip().lower()
    d = ALIASES.get(d, d)
    if d not in DTYPES:
        raise KeyError(dtype)
    return d


def flops(m: int, n: int, k: int, batch: int = 1) -> int:
    return 2 * m * n * k * batch


def tflops(m: int, n: int, k: int, batch: int, seconds: float) -> float:
    return flops(m, n, k, batch) / seconds / 1e12


def element_size(torch_dtype_name: str) -> int:
    return {"float64": 8, "float32": 4, "int32": 4, "float16": 2, "bfloat16": 2}.get(torch_dtype_name, 1)


def footprint(m: int, n: int, k: int, batch: int, dtype: str, beta: float) -> int:
    """Bytes of A, B, D (and C when beta != 0)."""
    d = DTYPES[dtype]
    ab = batch * (m * k + k * n) * element_size(d.inputs)
    out = batch * m * n * element_size(d.output)
    return ab + out * (2 if beta != 0 else 1)


@dataclass(frozen=True)
class Preset:
    name: str
    m: int
    n: int
    k: int
    batch: int
    dtype: str
    trans_a: str
    trans_b: str
    alpha: float
    beta: float
    about: str


# The three rocblas-bench commands of the AMD MI300X system-validation chapter (Table 5).
PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("rocblas-fp32-4k", 4000, 4000, 4000, 1, "fp32", "N", "T", 1.0, 0.0,
           "rocblas-bench -f gemm -r s -m 4000 -n 4000 -k 4000 --transposeA N --transposeB T"),
    Preset("rocblas-half-batched", 1024, 2048, 512, 5, "fp16", "N", "T", 1.1, 1.0,
           "rocblas-bench -f gemm_strided_batched_ex -m 1024 -n 2048 -k 512 --a_type h --b_type h "
           "--c_type s --compute_type s --alpha 1.1 --beta 1 --batch_count 5 (N/T); the chapter's "
           "table calls it BF16, the command uses h (fp16): --dtype bf16 runs the other reading"),
    Preset("rocblas-int8-batched", 1024, 2048, 512, 5, "int8", "N", "T", 1.0, 0.0,
           "rocblas-bench -f gemm_strided_batched_ex -m 1024 -n 2048 -k 512 --a_type i8_r "
           "--c_type i32_r --compute_type i32_r --batch_count 5 (N/T)"),
)}
