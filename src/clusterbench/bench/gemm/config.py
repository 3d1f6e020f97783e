"""The validated configuration of a GEMM run (what ``clusterbench gemm`` parsed)."""

from __future__ import annotations

import dataclasses

from clusterbench.bench import devices as devs
from clusterbench.bench.gemm.main import GemmConfig
from clusterbench.choices import parse_choices
from clusterbench.errors import UsageError
from clusterbench.families.gemm import spec
from clusterbench.units import parse_size


def _dtype(word: str) -> str | None:
    try:
        return spec.canonical(word)
    except KeyError:
        return None


def parse_dtypes(text: str) -> tuple[str, ...]:
    return parse_choices(text, spec.ALL, "dtype", _dtype)


# The shape when none is given: 4096^3 (rocBLAS' and cuBLAS' usual size); on a CPU 1024^3, since
# 4096^3 fp32 took 3.5-4 min on 2 cores (1024^3: seconds, and a CPU's BLAS is at full speed there).
DEFAULT_DIM, CPU_DIM = 4096, 1024


def _dim(value: str | None, default: int, what: str) -> int:
    if value is None:
        return default
    if str(value).strip().startswith("-"):
        raise UsageError(f"invalid {what} {value!r}: must be positive")
    n = parse_size(value, what)
    if n <= 0:
        raise UsageError(f"invalid {what} {value!r}: must be positive")
    return n


def _trans(value: str | None, default: str, what: str) -> str:
    v = (value or default).strip().upper()
    if v not in ("N", "T"):
        raise UsageError(f"invalid {what} {value!r}: expected N or T")
    return v


def gemm_options(m: str | None, n: str | None, k: str | None, batch: str | None, dtype: str | None,
                 trans_a: str | None, trans_b: str | None, alpha: float | None, beta: float | None,
                 preset: str | None, iterations: int, cold_iters: int, samples: int) -> GemmConfig:
    """The checks of ``clusterbench gemm``'s options that need neither this host's devices nor its
    memory (a sweep's test, a qualify step are checked so before any node runs them); the config
    has no devices yet. Explicit flags override the preset's values."""
    p = None
    if preset:
        p = spec.PRESETS.get(preset)
        if p is None:
            raise UsageError(f"unknown preset {preset!r}: expected {', '.join(spec.PRESETS)}")
    if iterations < 1 or samples < 1 or cold_iters < 1:
        raise UsageError("-i/--iterations, --samples and --cold-iters must be at least 1")
    dtypes = parse_dtypes(dtype or (p.dtype if p else "fp32"))
    return GemmConfig(
        m=_dim(m, p.m if p else DEFAULT_DIM, "-m"), n=_dim(n, p.n if p else DEFAULT_DIM, "-n"),
        k=_dim(k, p.k if p else DEFAULT_DIM, "-k"), batch=_dim(batch, p.batch if p else 1, "--batch"),
        dtypes=dtypes, trans_a=_trans(trans_a, p.trans_a if p else "N", "--transA"),
        trans_b=_trans(trans_b, p.trans_b if p else "N", "--transB"),
        alpha=alpha if alpha is not None else (p.alpha if p else 1.0),
        beta=beta if beta is not None else (p.beta if p else 0.0),
        iterations=iterations, cold_iters=cold_iters, samples=samples, strict_size=len(dtypes) == 1)


def gemm_config(m: str | None, n: str | None, k: str | None, batch: str | None, dtype: str | None,
                 trans_a: str | None, trans_b: str | None, alpha: float | None, beta: float | None,
                 preset: str | None, iterations: int, cold_iters: int, samples: int,
                 device: str, devices: str | None, check: bool) -> GemmConfig:
    """Validate ``clusterbench gemm``'s options (explicit flags override the preset's values)."""
    device_type, indices = devs.resolve(device, devices)
    cfg = dataclasses.replace(
        gemm_options(m, n, k, batch, dtype, trans_a, trans_b, alpha, beta, preset, iterations, cold_iters,
                     samples),
        device_type=device_type, devices=tuple(indices), check=check)
    if device_type == "cpu" and not preset and (m, n, k) == (None, None, None):
        cfg = dataclasses.replace(cfg, m=CPU_DIM, n=CPU_DIM, k=CPU_DIM, about=(
            f"CPU: {CPU_DIM}x{CPU_DIM}x{CPU_DIM} by default ({DEFAULT_DIM}^3 on GPUs, minutes on a "
            "few cores); -m -n -k change it"))
    if device_type == "cpu" and len(cfg.dtypes) == 1:
        need = spec.footprint(cfg.m, cfg.n, cfg.k, cfg.batch, cfg.dtypes[0], cfg.beta)
        free = devs.free_memory(devs.rank_device("cpu", [0], 0))
        if need > free:
            raise UsageError(f"{cfg.m}x{cfg.n}x{cfg.k} batch {cfg.batch} {cfg.dtypes[0]} needs {need} "
                             f"bytes, more than the {free} bytes of free host memory")
    return cfg
