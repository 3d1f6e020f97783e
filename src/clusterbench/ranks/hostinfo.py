"""What the driver does on every rank around a benchmark: record each host's inventory, and
sample telemetry on each host while the benchmark runs.

Only local rank 0 of a host collects (one inventory and one sampler per host, however many
ranks it runs); the results travel to rank 0 with one ``gather_object`` each, and rank 0 emits
them: the inventories as run metadata (``run.meta["inventory"][host]``), the samples as a
``Telemetry`` event that the runner stores in the run's telemetry table. Every rank calls these
functions in the same order, because the gathers are collectives.
"""

from __future__ import annotations

from typing import Any

from clusterbench.envinfo import context, inventory
from clusterbench.ranks.context import RankContext
from clusterbench.telemetry.sampler import Sampler, summarize


def _host(ctx: RankContext) -> str:
    return ctx.hosts[ctx.rank] if ctx.hosts else ctx.env.host


def _gather(ctx: RankContext, obj: Any) -> list[Any]:
    import torch.distributed as dist

    if ctx.world_size == 1:
        return [obj]
    out: list[Any] | None = [None] * ctx.world_size if ctx.is_root else None
    dist.gather_object(obj, out, dst=0)
    return out or []


def record_inventory(ctx: RankContext) -> None:
    """Gather each host's inventory to rank 0 and emit it as ``meta["inventory"]``, with the
    CPUs each rank of that host may run on (``ranks``: its affinity as it got it from
    ``taskset``, a launcher's binding or a container's cpuset, asked in the rank itself)."""
    inv = None
    if ctx.env.local_rank == 0:
        try:
            inv = inventory.cached()
        except Exception as e:  # noqa: BLE001 - a broken reader must not cost the benchmark
            inv = {"error": f"{type(e).__name__}: {e}"}
    mine = (_host(ctx), inv, {"rank": ctx.rank, "local_rank": ctx.env.local_rank, "cpus": context.affinity()})
    gathered = _gather(ctx, mine)
    if not ctx.is_root:
        return
    found: dict[str, Any] = {}
    for host, got, _ in gathered:
        if got is not None:
            found[host] = dict(got)   # a copy: the cached inventory is this process's, unchanged
    for host, _, rank in sorted(gathered, key=lambda g: g[2]["rank"]):
        if host in found:
            found[host].setdefault("ranks", []).append(rank)
    ctx.meta({"inventory": found})


def _interval(ctx: RankContext) -> float:
    return ctx.options.telemetry_interval


def start_sampler(ctx: RankContext) -> Sampler | None:
    """Start this host's sampler on its local rank 0; None elsewhere or when disabled (interval 0)."""
    interval = _interval(ctx)
    if interval <= 0 or ctx.env.local_rank != 0:
        return None
    return Sampler(interval, host=_host(ctx)).start()


def finish_sampler(ctx: RankContext, sampler: Sampler | None) -> None:
    """Stop the sampler, gather every host's samples to rank 0 and emit them."""
    if _interval(ctx) <= 0:  # disabled on every rank alike: no gather at all
        return
    samples = sampler.stop() if sampler is not None else None
    errors = sampler.errors if sampler is not None else {}
    cost = sampler.cpu_s if sampler is not None else 0.0
    gathered = _gather(ctx, (samples, errors, cost) if sampler is not None else None)
    if not ctx.is_root:
        return
    # A launcher that sets no local rank makes every rank "local rank 0": keep one sampler per host.
    seen: set[str] = set()
    kept = []
    for g in gathered:
        if g and g[0] and g[0][0].host not in seen:
            seen.add(g[0][0].host)
            kept.append(g)
    gathered = kept
    all_samples = [s for g in gathered for s in g[0]]
    info: dict[str, Any] = {"interval_s": _interval(ctx), "samples": len(all_samples),
                            # CPU seconds the sampler threads used, summed over hosts
                            "sampler_cpu_s": round(sum(g[2] for g in gathered), 6)}
    errs = {f"{_host_of(g)}:{k}": v for g in gathered for k, v in g[1].items()}
    if errs:
        info["errors"] = errs
    if all_samples:
        summary = {k: v for k, v in summarize(all_samples).items()
                   if "throttle" in k or "temperature" in k or "power" in k}
        if summary:
            info["summary"] = summary
        ctx.telemetry(all_samples)
    ctx.meta({"telemetry": info})


def _host_of(g: tuple[list[Any], dict[str, str], float]) -> str:
    return g[0][0].host if g[0] else "?"
