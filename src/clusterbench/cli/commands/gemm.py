"""``clusterbench gemm``: GEMM throughput per dtype on every selected device."""

from __future__ import annotations

import click

from clusterbench.bench import devices as devs
from clusterbench.bench.gemm import spec
from clusterbench.bench.gemm.main import GemmConfig
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.commands.stream import node_options, resolve_node_devices
from clusterbench.cli.options import repeat_option, store_options
from clusterbench.dist.context import DistOptions
from clusterbench.dist.driver import Job
from clusterbench.errors import UsageError
from clusterbench.units import parse_size


def parse_dtypes(text: str) -> tuple[str, ...]:
    if text.strip().lower() == "all":
        return spec.ALL
    out: list[str] = []
    for part in text.split(","):
        try:
            d = spec.canonical(part)
        except KeyError:
            raise UsageError(f"unknown dtype {part.strip()!r} for gemm: expected "
                             f"{', '.join(spec.ALL)} or all") from None
        if d not in out:
            out.append(d)
    return tuple(out)


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


def build_config(m: str | None, n: str | None, k: str | None, batch: str | None, dtype: str | None,
                 trans_a: str | None, trans_b: str | None, alpha: float | None, beta: float | None,
                 preset: str | None, iterations: int, cold_iters: int, samples: int,
                 device_type: str, indices: list[int], check: bool) -> GemmConfig:
    """Explicit flags override the preset's values."""
    p = None
    if preset:
        p = spec.PRESETS.get(preset)
        if p is None:
            raise UsageError(f"unknown preset {preset!r}: expected {', '.join(spec.PRESETS)}")
    if iterations < 1 or samples < 1 or cold_iters < 1:
        raise UsageError("-i/--iterations, --samples and --cold-iters must be at least 1")
    dtypes = parse_dtypes(dtype or (p.dtype if p else "fp32"))
    cfg = GemmConfig(
        m=_dim(m, p.m if p else 4096, "-m"), n=_dim(n, p.n if p else 4096, "-n"),
        k=_dim(k, p.k if p else 4096, "-k"), batch=_dim(batch, p.batch if p else 1, "--batch"),
        dtypes=dtypes, trans_a=_trans(trans_a, p.trans_a if p else "N", "--transA"),
        trans_b=_trans(trans_b, p.trans_b if p else "N", "--transB"),
        alpha=alpha if alpha is not None else (p.alpha if p else 1.0),
        beta=beta if beta is not None else (p.beta if p else 0.0),
        iterations=iterations, cold_iters=cold_iters, samples=samples, device_type=device_type,
        devices=tuple(indices), check=check, strict_size=len(dtypes) == 1)
    if device_type == "cpu" and len(dtypes) == 1:
        need = spec.footprint(cfg.m, cfg.n, cfg.k, cfg.batch, dtypes[0], cfg.beta)
        free = devs.free_memory(devs.rank_device("cpu", [0], 0))
        if need > free:
            raise UsageError(f"{cfg.m}x{cfg.n}x{cfg.k} batch {cfg.batch} {dtypes[0]} needs {need} "
                             f"bytes, more than the {free} bytes of free host memory")
    return cfg


@click.command("gemm")
@click.option("-m", "m", default=None, help="Rows of op(A) and D (default 4096).")
@click.option("-n", "n", default=None, help="Columns of op(B) and D (default 4096).")
@click.option("-k", "k", default=None, help="Inner dimension (default 4096).")
@click.option("--batch", default=None, help="Batch count: strided batched GEMM when > 1 (default 1).")
@click.option("--transA", "trans_a", default=None, help="N or T (default N).")
@click.option("--transB", "trans_b", default=None, help="N or T (default N).")
@click.option("--alpha", type=float, default=None, help="D = alpha*op(A)op(B) + beta*C (default 1).")
@click.option("--beta", type=float, default=None, help="Default 0.")
@click.option("--dtype", default=None,
              help="fp64, fp32, tf32, fp16, bf16, int8, fp8_e4m3, fp8_e5m2, a comma list, or all (default fp32).")
@click.option("--preset", default=None, help=f"One of: {', '.join(spec.PRESETS)} (flags override it).")
@click.option("-i", "--iterations", type=int, default=10, show_default=True, help="Calls per timed sample.")
@click.option("--cold-iters", type=int, default=2, show_default=True, help="Untimed calls first.")
@click.option("--samples", type=int, default=5, show_default=True,
              help="Timed samples; best and median are reported.")
@click.option("--no-check", "no_check", is_flag=True, help="Skip the result check.")
@node_options
@repeat_option
@store_options
def gemm(m: str | None, n: str | None, k: str | None, batch: str | None, trans_a: str | None,
         trans_b: str | None, alpha: float | None, beta: float | None, dtype: str | None,
         preset: str | None, iterations: int, cold_iters: int, samples: int, no_check: bool,
         device: str, devices: str | None, timeout: float, repeat: int, as_json: bool,
         db: str | None, tags: tuple[str, ...]) -> None:
    """GEMM throughput (TFLOP/s = 2*m*n*k*batch/time), best and median of several samples."""
    device_type, indices = resolve_node_devices(device, devices)
    cfg = build_config(m, n, k, batch, dtype, trans_a, trans_b, alpha, beta, preset, iterations,
                       cold_iters, samples, device_type, indices, not no_check)
    job = Job("clusterbench.bench.gemm.main:main", cfg,
              DistOptions(device=device_type, timeout=timeout), np=len(indices))
    meta = {"preset": preset} if preset else None
    raise SystemExit(run_benchmark_command(job, "gemm", as_json=as_json, db=db, tags=tags,
                                           repeat=repeat, meta=meta))


commands = [gemm]
