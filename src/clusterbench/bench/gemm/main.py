"""The per-rank GEMM benchmark: every selected device times the same shape at once.

Per dtype: ``cold_iters`` untimed calls, then ``samples`` samples of ``iterations`` calls each,
timed as a block; the best and the median sample are reported (the seed's guidance is to take
the highest of several runs). The result is checked once after timing.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from typing import Any

from clusterbench.bench import devices as devs
from clusterbench.errors import UsageError
from clusterbench.families.base import iteration_stats
from clusterbench.families.gemm import spec
from clusterbench.families.gemm.spec import BENCHMARK, TFLOPS, TIME
from clusterbench.ranks.context import RankContext
from clusterbench.records import Measurement


@dataclass(frozen=True)
class GemmConfig:
    m: int
    n: int
    k: int
    batch: int = 1
    dtypes: tuple[str, ...] = ("fp32",)
    trans_a: str = "N"
    trans_b: str = "N"
    alpha: float = 1.0
    beta: float = 0.0
    iterations: int = 10
    cold_iters: int = 2
    samples: int = 5
    device_type: str = "cpu"
    devices: tuple[int, ...] = ()      # device indices, one per rank; () = each rank's own
    check: bool = True
    strict_size: bool = True
    kernels: type | None = None     # the GEMM implementation (None: ops.TorchGemm); tests pass a wrong one
    about: str = ""                 # a note the rank prints (the CPU's smaller default shape)


def device_arch(dev: Any) -> str | None:
    """The GCN architecture of an AMD GPU (``gfx942:sramecc+:xnack-``); None elsewhere."""
    import torch

    if dev.type != "cuda" or not getattr(torch.version, "hip", None):
        return None
    return getattr(torch.cuda.get_device_properties(dev), "gcnArchName", None)


def unsupported(dtype: str, dev: Any) -> str | None:
    """Why ``dtype`` cannot run on ``dev`` (known ahead), or None; the rest is found by trying."""
    import torch

    s = spec.DTYPES[dtype]
    if dev.type != "cuda":
        return f"{s.gpu_only} (this is a CPU run)" if s.gpu_only else None
    hip = bool(getattr(torch.version, "hip", None))
    return spec.unsupported_on(dtype, hip, device_arch(dev), torch.cuda.get_device_capability(dev),
                               str(torch.__version__))


TF32_ENV = "HIPBLASLT_ALLOW_TF32"  # ROCm's torch ignores allow_tf32 unless this is set to 1
_tf32_env_before: list[str | None] = []  # the user's value while a tf32 row has it set to 1


def _set_tf32(dev: Any, on: bool) -> str | None:
    """Switch tf32 matmuls on or off; on ROCm also the environment switch PyTorch reads on every
    matmul. Returns why tf32 could not be switched on (then the row is not tf32), or None."""
    if dev.type != "cuda":
        return None
    import torch

    hip = bool(getattr(torch.version, "hip", None))
    if hip and on and os.environ.get(TF32_ENV) != "1":
        _tf32_env_before.append(os.environ.get(TF32_ENV))
        os.environ[TF32_ENV] = "1"
    torch.backends.cuda.matmul.allow_tf32 = on
    if not on and _tf32_env_before:  # back to what the user had
        before = _tf32_env_before.pop()
        if before is None:
            os.environ.pop(TF32_ENV, None)
        else:
            os.environ[TF32_ENV] = before
    if on and not torch.backends.cuda.matmul.allow_tf32:
        return "torch did not enable tf32 matmuls on this device (an fp32 row would be fp32)"
    return None


def measure_dtype(cfg: GemmConfig, dtype: str, dev: Any, progress: Any, step: Any = None) -> dict[str, Any]:
    """Time one dtype on this rank's device: {'times': [...], 'error': str|None} or {'skipped'}.
    ``step()`` after the cold calls and after each sample (the plan's steps)."""
    try:
        return _measure(cfg, dtype, dev, progress, step or (lambda: None))
    finally:  # the operands are gone once _measure returns: hand their memory back
        _set_tf32(dev, False)
        devs.release_cache(dev)


def _measure(cfg: GemmConfig, dtype: str, dev: Any, progress: Any, step: Any) -> dict[str, Any]:
    from clusterbench.bench.gemm.ops import TorchGemm

    ops_mod = cfg.kernels or TorchGemm
    reason = unsupported(dtype, dev)
    if reason:
        return {"skipped": reason}
    need = spec.footprint(cfg.m, cfg.n, cfg.k, cfg.batch, dtype, cfg.beta)
    if need > devs.free_memory(dev):
        msg = f"{dtype} {cfg.m}x{cfg.n}x{cfg.k} batch {cfg.batch} needs {need} bytes, more than is free"
        if cfg.strict_size:
            raise UsageError(msg)
        return {"skipped": msg}
    reason = _set_tf32(dev, dtype == "tf32")
    if reason:
        return {"skipped": reason}
    trans_a, trans_b = spec.layout(dtype, cfg.trans_a, cfg.trans_b)
    operands = ops_mod.make_operands(cfg.m, cfg.n, cfg.k, cfg.batch, dtype, trans_a, trans_b, cfg.beta,
                                     dev, arch=device_arch(dev))
    call = ops_mod.gemm_call(operands, dtype, cfg.alpha, cfg.beta)
    try:
        call()  # the first call also tells whether this device and build support the dtype/layout
    except (RuntimeError, NotImplementedError, TypeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return {"skipped": f"{dtype} with transA={trans_a} transB={trans_b} is not supported "
                           f"on this device by PyTorch: {first[:160]}"}
    notes = []
    if dev.type == "cuda" and cfg.batch > 1 and spec.DTYPES[dtype].path != "matmul":
        try:  # one Python call per matrix would time dispatch: replay the batch loop as a graph
            call = ops_mod.graphed(call, dev)
        except (RuntimeError, NotImplementedError, TypeError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            notes.append(f"{dtype}: the batch loop could not be captured in a graph, timed call by "
                         f"call ({first[:120]})")
    time_fn = devs.timer(dev)
    for _ in range(max(0, cfg.cold_iters - 1)):
        call()
    progress()
    step()

    def block() -> None:
        for _ in range(cfg.iterations):
            call()

    times = []
    for _ in range(cfg.samples):
        times.append(time_fn(block) / cfg.iterations)
        progress()
        step()
    error = ops_mod.check(operands, dtype, cfg.alpha, cfg.beta) if cfg.check else None
    return {"times": times, "error": error, "layout": (trans_a, trans_b), "notes": notes}


def _rows(cfg: GemmConfig, dtype: str, label: str, times: list[float],
          layout: tuple[str, str]) -> list[Measurement]:
    base = {"m": cfg.m, "n": cfg.n, "k": cfg.k, "batch": cfg.batch, "dtype": dtype,
            "transA": layout[0], "transB": layout[1], "device": label}
    out = []
    for stat, t in (("best", min(times)), ("median", statistics.median(times))):
        out.append(TFLOPS(BENCHMARK, spec.tflops(cfg.m, cfg.n, cfg.k, cfg.batch, t), {**base, "stat": stat}))
        out.append(TIME(BENCHMARK, t * 1e6, {**base, "stat": stat}))
    # the spread of the samples, for the noise check (judge/noise.py)
    for stat, t in iteration_stats(times).items():
        if stat in ("max", "stddev", "mad", "first"):
            out.append(TIME(BENCHMARK, t * 1e6, {**base, "stat": stat}))
    return out


def main(ctx: RankContext, cfg: GemmConfig) -> None:
    dev, label, active = devs.join(ctx, cfg.device_type, list(cfg.devices), benchmark=BENCHMARK, alpha=cfg.alpha,
                                   beta=cfg.beta, iterations=cfg.iterations, samples=cfg.samples)
    if cfg.about:
        ctx.note(cfg.about, BENCHMARK)
    # per dtype: the cold calls, then each sample; the work, the FLOPs each does
    flop = spec.flops(cfg.m, cfg.n, cfg.k, cfg.batch)
    plan = ctx.plan(BENCHMARK, "samples", [flop * w for _ in cfg.dtypes
                                           for w in (cfg.cold_iters, *[cfg.iterations] * cfg.samples)])
    for dtype in cfg.dtypes:
        ctx.barrier()  # every device starts each dtype together
        before = plan.done
        result = {"label": label, **measure_dtype(cfg, dtype, dev, ctx.progress, plan.step)} if active else None
        plan.step(1 + cfg.samples - (plan.done - before))   # a dtype skipped, or cut short
        gathered = [r for r in devs.gather_to_root(ctx, result) or [] if r is not None]
        if not ctx.is_root or not gathered:
            continue
        rows: list[Measurement] = []
        for r in gathered:
            if "skipped" in r:
                ctx.note(f"skipped {dtype} on {r['label']}: {r['skipped']}", BENCHMARK)
                continue
            layout = tuple(r.get("layout") or (cfg.trans_a, cfg.trans_b))
            rows += _rows(cfg, dtype, r["label"], r["times"], layout)
            for text in r.get("notes") or []:
                ctx.note(f"{text} on {r['label']}")
            if r["error"]:
                ctx.fail(f"gemm check failed for {dtype} on {r['label']}: {r['error']}")
        done = [r for r in gathered if "times" in r]
        ran = tuple(done[0].get("layout") or (cfg.trans_a, cfg.trans_b)) if done else None
        if ran and ran != (cfg.trans_a, cfg.trans_b):
            d = spec.DTYPES[dtype]
            ctx.note(f"{dtype} runs transA={ran[0]} transB={ran[1]} (A row-major, B column-major), "
                     f"the layout {'torch._scaled_mm requires' if d.path == 'scaled_mm' else 'torch._int_mm is fast in'}"
                     f"; transA={cfg.trans_a} transB={cfg.trans_b} was asked")
        if spec.DTYPES[dtype].about and done:
            ctx.note(f"{dtype}: {spec.DTYPES[dtype].about}")
        if len(gathered) > 1 and done:
            total = sum(spec.tflops(cfg.m, cfg.n, cfg.k, cfg.batch, min(r["times"])) for r in done)
            rows.append(TFLOPS(BENCHMARK, total, {
                "m": cfg.m, "n": cfg.n, "k": cfg.k, "batch": cfg.batch, "dtype": dtype,
                "transA": ran[0], "transB": ran[1], "device": "all",
                "stat": "aggregate", "devices": len(done)}))
        if rows:
            ctx.record(rows)
