"""The per-rank stream benchmark: run the kernels, time each, check the arrays, report.

Each rank owns one device; all ranks run each array size at the same time (a barrier before
each size), and rank 0 reports every device's rows plus the aggregate over devices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterbench.bench import devices as devs
from clusterbench.bench.stream import check as analytic
from clusterbench.errors import UsageError
from clusterbench.families.base import iteration_stats
from clusterbench.families.stream import spec
from clusterbench.families.stream.spec import BANDWIDTH, BENCHMARK, TIME
from clusterbench.ranks.context import RankContext
from clusterbench.records import Measurement


@dataclass(frozen=True)
class StreamConfig:
    sizes: tuple[int, ...] = ()         # array sizes in elements; (): spec.default_array_size
    kernels: tuple[str, ...] = spec.NAMES
    numtimes: int = 100
    dtype: str = "double"
    device_type: str = "cpu"
    devices: tuple[int, ...] = ()      # device indices, one per rank; () = each rank's own
    check: bool = True
    strict_size: bool = True            # a size that does not fit: error (True) or skipped row
    backend: type | None = None         # the class implementing the kernels (None: TorchStream)


def run_size(impl: Any, kernels: list[str], numtimes: int, time_fn: Any, progress: Any,
             step: Any = None) -> tuple[dict[str, list[float]], float | None]:
    """Run ``numtimes`` iterations; return per-kernel times (first iteration dropped) and Dot's sum."""
    calls = {k: getattr(impl, k.lower()) for k in kernels}
    times: dict[str, list[float]] = {k: [] for k in kernels}
    dot_value = None
    for i in range(numtimes):
        for k in kernels:
            if k == "Dot":
                box: list[Any] = []
                t = time_fn(lambda box=box: box.append(calls["Dot"]()))
                dot_value = float(box[0])
            else:
                t = time_fn(calls[k])
            if i > 0 or numtimes == 1:
                times[k].append(t)
        progress()
        if step is not None:
            step()
    return times, dot_value


def _rows(kernel: str, n: int, dtype: str, label: str, ts: list[float],
          llc: int | None = None) -> list[Measurement]:
    elem = spec.DTYPES[dtype]
    base: dict[str, Any] = {"kernel": kernel, "array_size": n, "dtype": dtype, "device": label}
    level = spec.memory_level(n, elem, llc)
    if level is not None:
        base["memory"] = level
    tmin, tmax, tavg = min(ts), max(ts), sum(ts) / len(ts)
    # the spread of the iterations, for the noise check (judge/noise.py)
    spread = {k: v for k, v in iteration_stats(ts).items() if k in ("median", "stddev", "mad", "first")}
    return [
        BANDWIDTH(BENCHMARK, spec.bandwidth_gbs(kernel, n, elem, tmin), dict(base)),
        *(TIME(BENCHMARK, t * 1e6, {**base, "stat": stat})
          for stat, t in (("min", tmin), ("max", tmax), ("avg", tavg), *spread.items())),
    ]


def _sizes(ctx: RankContext, cfg: StreamConfig, label: str, llc: int | None,
           active: bool) -> tuple[int, ...]:
    """The array sizes every rank runs: the config's, else the default for the largest cache of
    the devices (every rank runs the same sizes); rank 0 records each device's cache and says
    which sizes measure it rather than memory."""
    elem = spec.DTYPES[cfg.dtype]
    # the ranks that measure (on CPU, rank 0 alone): label -> its cache
    caches = dict(x for x in devs.all_gather(ctx, (label, llc) if active else None) if x is not None)
    known = [c for c in caches.values() if c]
    sizes = cfg.sizes or (spec.default_array_size(max(known, default=None), elem),)
    if ctx.is_root:
        ctx.meta({"cache_bytes": caches})
        if not known:
            ctx.note("last-level cache size unknown: no array size is labelled cache or main memory", BENCHMARK)
        else:
            least = -(-spec.CACHE_FACTOR * max(known) // elem)
            small = sum(n < least for n in sizes)
            what = ", ".join(f"{c / 2**20:g} MiB on {lb}" for lb, c in caches.items() if c)
            said = (f"{small} of {len(sizes)} size(s) here are smaller (cache or mixed in the memory "
                    "column): they measure the cache, not memory" if small else "")
            ctx.note(f"last-level cache {what}: arrays of {spec.CACHE_FACTOR}x that ({least} elements) "
                     f"or more measure memory" + (f"; {said}" if said else ""), BENCHMARK)
    return sizes


def main(ctx: RankContext, cfg: StreamConfig) -> None:
    dev, label, active = devs.join(ctx, cfg.device_type, list(cfg.devices),
                                   note=f", {cfg.dtype}, {cfg.numtimes} iterations", benchmark=BENCHMARK)
    kernels = spec.ordered(cfg.kernels)
    time_fn = devs.timer(dev)
    if cfg.backend is None:
        from clusterbench.bench.stream.kernels import TorchStream
    backend = cfg.backend or TorchStream
    elem = spec.DTYPES[cfg.dtype]
    llc = devs.last_level_cache(dev) if active else None
    sizes = _sizes(ctx, cfg, label, llc, active)
    # every iteration of every size; its work, the bytes it moves
    moved = sum(spec.kernel(k).arrays for k in kernels) * elem
    plan = ctx.plan(BENCHMARK, "iterations", [moved * n for n in sizes for _ in range(cfg.numtimes)])
    for n in sizes:
        ctx.barrier()  # every device starts each size together
        if not active:
            devs.gather_to_root(ctx, None)
            continue
        need = spec.footprint(n, elem)
        fits = need <= devs.free_memory(dev)
        if not fits:
            msg = (f"array size {n} ({need} bytes for 3 {cfg.dtype} arrays) does not fit "
                   f"in the free memory of {label}")
            if cfg.strict_size:
                raise UsageError(msg)
            plan.step(cfg.numtimes)
        result: dict[str, Any] = {"label": label, "skipped": None if fits else msg, "llc": llc}
        if fits:
            impl = backend(n, cfg.dtype, dev)
            impl.init_arrays()
            times, dot = run_size(impl, kernels, cfg.numtimes, time_fn, ctx.progress, plan.step)
            result["times"] = times
            if cfg.check:
                g = analytic.gold(kernels, cfg.numtimes, n, cfg.dtype)
                result["errors"] = analytic.check(g, impl.mean_abs_errors(g.a, g.b, g.c), dot, cfg.dtype)
            impl.release()
            devs.release_cache(dev)
        gathered = devs.gather_to_root(ctx, result)
        ctx.progress()
        if ctx.is_root and gathered:
            _report(ctx, cfg, kernels, n, [r for r in gathered if r is not None])


def _report(ctx: RankContext, cfg: StreamConfig, kernels: list[str], n: int, results: list[dict]) -> None:
    rows: list[Measurement] = []
    for r in results:
        if r["skipped"]:
            ctx.note(f"skipped: {r['skipped']}", BENCHMARK)
            continue
        for k in kernels:
            rows += _rows(k, n, cfg.dtype, r["label"], r["times"][k], r.get("llc"))
        for e in r.get("errors", []):
            ctx.fail(f"stream check failed on {r['label']} (array size {n}): {e}")
    done = [r for r in results if not r["skipped"]]
    if len(results) > 1 and done:
        elem = spec.DTYPES[cfg.dtype]
        level = spec.memory_level(n, elem, max((r.get("llc") or 0 for r in done), default=0))
        for k in kernels:
            total = sum(spec.bandwidth_gbs(k, n, elem, min(r["times"][k])) for r in done)
            rows.append(BANDWIDTH(BENCHMARK, total, {"kernel": k, "array_size": n, "dtype": cfg.dtype,
                                                     "device": "all", "stat": "aggregate",
                                                     "devices": len(done),
                                                     **({"memory": level} if level else {})}))
    if rows:
        ctx.record(rows)
