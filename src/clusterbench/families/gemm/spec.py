"""GEMM as data: the FLOP count, the dtypes and their storage, tolerances, the presets, and the
metrics native runs and imported rocblas/hipblaslt logs record. Pure, no torch.

TFLOP/s = 2 * m * n * k * batch / time / 1e12 (one multiply and one add per inner-product term;
alpha/beta scaling is not counted, as rocblas-bench does not count it either); an int8 GEMM's
operations are integer ones, in TOP/s.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterbench.families.base import Metric


@dataclass(frozen=True)
class DtypeSpec:
    name: str
    inputs: str      # torch dtype name of A (and of B, unless inputs_b says otherwise)
    output: str      # torch dtype name of D
    path: str        # "matmul" (addmm/baddbmm), "int_mm" (int8 -> int32), "scaled_mm" (fp8)
    tol: float       # check tolerance relative to |alpha|*|A||B||x| + |beta||C||x|
    gpu_only: str = ""  # reason when the format exists only on GPUs
    inputs_b: str = ""  # torch dtype name of B when it differs from A's
    layout: tuple[str, str] | None = None  # (transA, transB) the path needs; None: any
    about: str = ""     # what the row runs, when the name alone does not say


# torch._scaled_mm takes A row-major and B column-major only (transA=N, transB=T here); _int_mm
# is about 5x faster with B column-major than row-major: both run that layout, whatever was asked.
FAST_LAYOUT = ("N", "T")

DTYPES: dict[str, DtypeSpec] = {d.name: d for d in (
    DtypeSpec("fp64", "float64", "float64", "matmul", 1e-10),
    DtypeSpec("fp32", "float32", "float32", "matmul", 1e-4),
    DtypeSpec("tf32", "float32", "float32", "matmul", 5e-3,
              gpu_only="tf32 is a GPU tensor-core mode (NVIDIA Ampere or newer, AMD gfx94x)"),
    DtypeSpec("fp16", "float16", "float16", "matmul", 5e-3),
    DtypeSpec("bf16", "bfloat16", "bfloat16", "matmul", 2e-2),
    DtypeSpec("int8", "int8", "int32", "int_mm", 1e-12, layout=FAST_LAYOUT),
    DtypeSpec("fp8_e4m3", "float8_e4m3fn", "bfloat16", "scaled_mm", 2e-2, layout=FAST_LAYOUT),
    # torch rejects e5m2 x e5m2: the row runs e4m3 x e5m2, the training-gradient case
    DtypeSpec("fp8_e5m2", "float8_e4m3fn", "bfloat16", "scaled_mm", 2e-2, inputs_b="float8_e5m2",
              layout=FAST_LAYOUT, about="A in e4m3, B in e5m2"),
)}

# MI300-class GPUs (gfx940/941/942) have only the FNUZ fp8 formats; gfx950 and later, and NVIDIA,
# the OCP ones (float8_e4m3fn, float8_e5m2).
FNUZ_ARCHS = ("gfx940", "gfx941", "gfx942")
FNUZ = {"float8_e4m3fn": "float8_e4m3fnuz", "float8_e5m2": "float8_e5m2fnuz"}
# AMD architectures with fp8 matrix cores (CDNA3, CDNA4, RDNA4); others (gfx90a MI200, gfx908) have none.
FP8_ARCH_PREFIXES = ("gfx94", "gfx95", "gfx12")
# xf32 ("tf32") exists on CDNA3 only: gfx90a has none and gfx950 dropped it.
TF32_ARCHS = FNUZ_ARCHS


def arch_base(gcn_arch: str | None) -> str:
    """``gfx942:sramecc+:xnack-`` -> ``gfx942``."""
    return (gcn_arch or "").split(":", 1)[0].strip().lower()


def input_dtypes(dtype: str, arch: str | None = None) -> tuple[str, str]:
    """Torch dtype names of A and B for ``dtype`` on a device of GCN architecture ``arch``
    (None: NVIDIA or CPU): the FNUZ fp8 formats on gfx94x."""
    d = DTYPES[dtype]
    a, b = d.inputs, d.inputs_b or d.inputs
    if arch_base(arch) in FNUZ_ARCHS:
        a, b = FNUZ.get(a, a), FNUZ.get(b, b)
    return a, b


def layout(dtype: str, trans_a: str, trans_b: str) -> tuple[str, str]:
    """The (transA, transB) a dtype runs with: its path's required layout, else the one asked for."""
    return DTYPES[dtype].layout or (trans_a, trans_b)


def _version(text: str) -> tuple[int, int]:
    nums = [int(x) for x in text.split("+")[0].split(".")[:2] if x.isdigit()]
    return (nums + [0, 0])[0], (nums + [0, 0])[1]


def unsupported_on(dtype: str, hip: bool, arch: str | None, capability: tuple[int, int],
                   torch_version: str) -> str | None:
    """Why ``dtype`` cannot run on this GPU (known ahead), or None; the rest is found by trying."""
    major, minor = capability
    base = arch_base(arch)
    if dtype == "tf32":
        if not hip and major < 8:
            return f"tf32 needs compute capability 8.0 or newer, this GPU has {major}.{minor}"
        if hip and base not in TF32_ARCHS:
            return f"{base or 'this GPU'} has no tf32 (xf32) matrix cores (gfx940-942 only): an fp32 row would be fp32"
        if hip and _version(torch_version) < (2, 7):
            return f"torch {torch_version} does not enable tf32 on ROCm (2.7 or newer does, with HIPBLASLT_ALLOW_TF32=1)"
    if dtype.startswith("fp8"):
        if not hip and (major, minor) < (8, 9):
            return f"fp8 scaled matmul needs compute capability 8.9 or newer, this GPU has {major}.{minor}"
        if hip and not base.startswith(FP8_ARCH_PREFIXES):
            return f"{base or 'this GPU'} has no fp8 matrix cores (gfx94x, gfx95x and gfx12 do)"
    return None


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
    ab = batch * (m * k * element_size(d.inputs) + k * n * element_size(d.inputs_b or d.inputs))
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


# -- metrics ------------------------------------------------------------------------------------
BENCHMARK = "gemm"
# int8 rows count integer operations: TOP/s (the same 1e12 scale, so a stored int8 row in TFLOP/s,
# as clusterbench wrote them before, reads as TOP/s and compares with new ones)
TFLOPS = Metric("tflops", "TFLOP/s", headline=True, peak="dense_tflops", integer_unit="TOP/s",
                about="2*m*n*k*batch / time (TOP/s for int8)")
TIME = Metric("time_us", "us", higher_is_better=False, spread="stat",
              about="time per call, with stat best/median (and max/stddev/mad/first over the samples)")
BANDWIDTH = Metric("bandwidth", "GB/s", about="bytes of A, B, C, D / time (hipblaslt-bench's GB/s)")
METRICS = (TFLOPS, TIME, BANDWIDTH)
