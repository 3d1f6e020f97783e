"""The per-rank collective sweep: ``main(ctx, config)`` runs on every rank.

Per op, dtype and reduction, as nccl-tests' TimeTest/BenchTime: warm up at the largest and the
smallest size, then for each size and placement: (fill when checking) one synchronised op,
barrier, ``iters`` ops issued back-to-back (stream-ordered plain calls on NCCL/RCCL,
``async_op=True`` on gloo: calls.py), one wait and one device
synchronize, time / iters (on gloo each op waited for before the next: its per-op times, the
slowest rank's per iteration, become ``iter_time_us`` statistics for the noise check);
iteration ``i`` works on the buffers shifted by ``i % steps`` rows, as nccl-tests' ``startColl``
does, so a mid-size row is not served from a cache (the 256 MB Infinity
Cache of an MI300X). With ``-G N`` the ``iters`` ops are captured once in a CUDA/HIP graph and the
graph is replayed N times: time / (iters x N), as nccl-tests' ``-G``. The per-rank times are
combined with one all_reduce per ``-a``; then the check re-fills the inputs, runs the op once
(offset 0) and counts wrong elements, summed over ranks. Rank 0 emits each finished row at once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from clusterbench.bench.collectives import calls, data
from clusterbench.bench.collectives.config import CollConfig
from clusterbench.errors import UsageError
from clusterbench.families.base import iteration_stats
from clusterbench.families.collectives.spec import (
    ALGBW,
    AVG_BUSBW,
    BUSBW,
    ITER_TIME,
    OUT_OF_BOUNDS,
    SPECS,
    TIME,
    WRONG,
    algbw,
    busbw,
    element_size,
    per_rank_unit,
    placements,
    row_bytes,
    row_counts,
)
from clusterbench.ranks.context import RankContext
from clusterbench.records import Measurement

AVERAGE_NAMES = {0: "rank0", 1: "avg", 2: "min", 3: "max"}


def time_iters(ctx: RankContext, issues: list[Callable[[], Any]], iters: int,
               per_op: list[float] | None = None, ordered: bool | None = None) -> float:
    """Seconds per op on this rank: ``iters`` ops, iteration ``i`` through ``issues[i %
    len(issues)]`` (the shifted buffers). On NCCL/RCCL they are issued back-to-back onto the
    rank's stream, which runs them one after another, with one wait and one device synchronize,
    as nccl-tests does. gloo runs async ops on several threads at once, which would time two
    ops in flight as one; there each op is waited for before the next is issued, as a stream
    would run them (and as a blocking ``dist.all_reduce`` loop does); there ``per_op`` gets each
    op's seconds. ``ordered``: the engine's (default: NCCL/RCCL's process group is)."""
    ctx.barrier()
    t0 = time.perf_counter()
    run_iters(issues, iters, ordered=ctx.backend == "nccl" if ordered is None else ordered, per_op=per_op)
    ctx.synchronize()
    return (time.perf_counter() - t0) / iters


def run_iters(issues: list[Callable[[], Any]], iters: int, ordered: bool,
              per_op: list[float] | None = None) -> None:
    """The timed loop of ``time_iters`` (see there)."""
    if ordered:
        calls.finish([issues[i % len(issues)]() for i in range(iters)], ordered=True)
        return
    last = time.perf_counter()
    for i in range(iters):
        calls.finish([issues[i % len(issues)]()], ordered=False)
        if per_op is not None:
            now = time.perf_counter()
            per_op.append(now - last)
            last = now


def slowest_per_iteration(ctx: RankContext, seconds: list[float]) -> list[float]:
    """Each iteration's time on the slowest rank (one all_reduce, outside the timed loop)."""
    import torch
    import torch.distributed as dist

    t = torch.tensor(seconds, dtype=torch.float64, device=ctx.device)
    dist.all_reduce(t, dist.ReduceOp.MAX)
    return t.tolist()


def capture(ctx: RankContext, issues: list[Callable[[], Any]], iters: int, engine: Any = None) -> Any:
    """The ``iters`` ops captured in one CUDA/HIP graph (nccl-tests' ``-G``), not yet run; on
    the engine's stream where it has one (its calls are bound to it)."""
    import torch

    graph = torch.cuda.CUDAGraph()
    stream = getattr(engine, "stream", None)
    with torch.cuda.graph(graph, stream=stream):
        pending = [issues[i % len(issues)]() for i in range(iters)]
        calls.finish(pending, ordered=engine.ordered if engine else ctx.backend == "nccl")  # joins the capture
    return graph


def time_graph(ctx: RankContext, issues: list[Callable[[], Any]], iters: int, launches: int,
               engine: Any = None) -> float:
    """Seconds per op: the graph of ``iters`` ops replayed ``launches`` times, one synchronize."""
    graph = capture(ctx, issues, iters, engine)
    ctx.synchronize()
    ctx.barrier()
    t0 = time.perf_counter()
    for _ in range(launches):
        graph.replay()
    ctx.synchronize()
    return (time.perf_counter() - t0) / (iters * launches)


def combine(ctx: RankContext, seconds: float, average: int) -> float:
    """One value for all ranks per nccl-tests' -a: 0 rank 0, 1 mean, 2 min, 3 max."""
    import torch
    import torch.distributed as dist

    t = torch.tensor([seconds], dtype=torch.float64, device=ctx.device)
    if average == 0:
        dist.broadcast(t, 0)
    else:
        op = {1: dist.ReduceOp.SUM, 2: dist.ReduceOp.MIN, 3: dist.ReduceOp.MAX}[average]
        dist.all_reduce(t, op)
        if average == 1:
            t /= ctx.world_size
    return float(t.item())


def _wrong_over_ranks(ctx: RankContext, wrong: int) -> tuple[int, int]:
    """This result's wrong elements summed over ranks (the #wrong column), and how many ranks
    had any: nccl-tests' ``# Out of bounds values`` counts one per such rank (CheckData adds one
    per rank whose own result is wrong; the counts are then summed over ranks)."""
    import torch
    import torch.distributed as dist

    t = torch.tensor([wrong, 1 if wrong else 0], dtype=torch.int64, device=ctx.device)
    dist.all_reduce(t)
    return int(t[0].item()), int(t[1].item())


def _all_ok(ctx: RankContext, ok: bool) -> bool:
    import torch
    import torch.distributed as dist

    t = torch.tensor([1 if ok else 0], dtype=torch.int32, device=ctx.device)
    dist.all_reduce(t, dist.ReduceOp.MIN)
    return bool(t.item())


class Sweep:
    """One op x dtype x reduction on this rank: buffers allocated once at the largest size."""

    def __init__(self, ctx: RankContext, config: CollConfig, op: str, dtype: str, redop: str,
                 engine: Any = None) -> None:
        self.ctx, self.config, self.op, self.dtype, self.redop = ctx, config, op, dtype, redop
        self.engine = engine or calls.TorchEngine(ctx.backend)
        self.spec = SPECS[op]
        self.n = ctx.world_size
        self.root = config.root if self.spec.has_root else -1
        self.send_buf = self.recv_buf = None
        self.per_max = 0
        self.refused: dict[str, str] = {}  # placement -> why the engine cannot run it

    def allocate(self, per_max: int) -> None:
        import torch

        send, recv = calls.buffer_elements(self.op, per_max, self.n)
        self.per_max = per_max
        dt = calls.torch_dtype(self.dtype)
        self.send_buf = torch.zeros(send, dtype=dt, device=self.ctx.device)
        self.recv_buf = torch.zeros(recv, dtype=dt, device=self.ctx.device)

    def bind(self, placement: str, per: int, step: int = 0) -> calls.Bound:
        """The row's call on the buffers shifted by ``step`` row-sized windows."""
        send, recv = calls.buffer_elements(self.op, per, self.n)
        return self.engine.bind(self.op, placement, calls.shifted(self.send_buf, send, step),
                                calls.shifted(self.recv_buf, recv, step), per, self.ctx.rank, self.n,
                                max(self.root, 0), self.redop, self.dtype)

    def shifted_calls(self, placement: str, per: int) -> list[Callable[[], Any]]:
        """One bound call per buffer offset the timed loop visits (bound before timing)."""
        steps = min(self.config.iters, calls.offset_steps(per, self.per_max))
        return [self.bind(placement, per, k).issue for k in range(steps)]

    def fill(self, b: calls.Bound, per: int) -> None:
        """Zero the output, then write this rank's input (nccl-tests' InitData)."""
        rank, n, root = self.ctx.rank, self.n, max(self.root, 0)
        if b.output is not None:
            b.output.zero_()
        inputs = calls.CALLS[self.op].inputs
        data.write(b.input, lambda idx: inputs(self.redop, self.dtype, rank, n, root, per, idx))

    def count_wrong(self, b: calls.Bound, per: int) -> int:
        rank, n, root = self.ctx.rank, self.n, max(self.root, 0)
        if b.output is None:
            return 0
        expected = calls.CALLS[self.op].expected
        return data.count_wrong(b.output, lambda idx: expected(self.redop, self.dtype, rank, n, root, per, idx),
                                self.dtype, self.redop)

    def probe(self) -> list[str]:
        """The placements this engine can run for this dtype and reduction, tried for real
        (one element per rank); every rank agrees. Why one cannot run: ``refused``."""
        usable = []
        self.allocate(1)
        for placement in placements(self.op):
            reason = ""
            try:
                b = self.bind(placement, 1)
                self.fill(b, 1)
                b.run()
                self.ctx.synchronize()
                if self.config.graph:  # the engine must also run it inside a CUDA/HIP graph
                    capture(self.ctx, [b.issue], 1, self.engine).replay()
                    self.ctx.synchronize()
            except Exception as e:  # noqa: BLE001 - the backend's refusal is the reason we report
                lines = str(e).strip().splitlines()
                reason = f"{type(e).__name__}: {lines[0] if lines else ''}"[:200]
            if _all_ok(self.ctx, not reason):
                usable.append(placement)
            else:
                self.refused[placement] = reason or "failed on another rank"
        return usable

    def warm_up(self, places: list[str], pers: list[int]) -> None:
        for per in (max(pers), min(pers)):  # nccl-tests warms up at the largest, then smallest size
            issues = self.shifted_calls(places[0], per)
            pending = [issues[i % len(issues)]() for i in range(self.config.warmup_iters)]
            calls.finish(pending, ordered=self.engine.ordered)
            self.ctx.synchronize()

    def row(self, size: int, per: int, places: list[str], cycle: int) -> tuple[list[Measurement], list[float], int]:
        """Measure one size in every placement; returns its records, busbws and out-of-bounds
        count (per placement, the ranks whose result had wrong elements)."""
        cfg, ctx, n = self.config, self.ctx, self.n
        counts = row_counts(self.op, size, self.dtype, n)
        nbytes = row_bytes(self.op, counts, self.dtype)
        out: list[Measurement] = []
        bws: list[float] = []
        bad = 0
        for placement in places:
            b = self.bind(placement, per)
            if cfg.check:
                self.fill(b, per)
            b.run()
            ctx.synchronize()
            issues = self.shifted_calls(placement, per)
            per_op: list[float] = []
            mine = time_graph(ctx, issues, cfg.iters, cfg.graph, self.engine) if cfg.graph else \
                time_iters(ctx, issues, cfg.iters, per_op, self.engine.ordered)
            seconds = combine(ctx, mine, cfg.average)
            spread = iteration_stats(slowest_per_iteration(ctx, per_op)) if len(per_op) > 1 else {}
            wrong = None
            ranks_wrong = 0
            if cfg.check and (placement == "out" or self.spec.in_place_checked):
                for _ in range(cfg.check):
                    self.fill(b, per)
                    b.run()
                    ctx.synchronize()
                    wrong, ranks_wrong = _wrong_over_ranks(ctx, self.count_wrong(b, per))
                    if wrong:
                        break
            params: dict[str, Any] = {"bytes": nbytes, "count": counts.param, "dtype": self.dtype,
                                      "redop": self.redop, "root": self.root, "placement": placement,
                                      "ranks": n}
            if cfg.cycles > 1:
                params["cycle"] = cycle
            ab = algbw(nbytes, seconds)
            bb = busbw(self.op, ab, n)
            out += [TIME(self.op, seconds * 1e6, params), ALGBW(self.op, ab, params),
                    BUSBW(self.op, bb, params)]
            out += [ITER_TIME(self.op, v * 1e6, {**params, "stat": stat}) for stat, v in spread.items()]
            if wrong is not None:
                out.append(WRONG(self.op, float(wrong), params))
                bad += ranks_wrong
            bws.append(bb)
            ctx.progress()
        return out, bws, bad


def sweep_header(config: CollConfig, engine: dict[str, Any] | None = None) -> dict[str, Any]:
    """What nccl-tests prints in its first line, kept in the run's meta for the table header,
    and the engine that measured the op (``engine``: torch or nccl, and its backend or library)."""
    factor = config.stepfactor > 1
    return {"nthread": 1, "ngpus": 1, "minbytes": config.minbytes, "maxbytes": config.maxbytes,
            "step": config.stepfactor if factor else config.stepbytes,
            "step_kind": "factor" if factor else "bytes", "warmup_iters": config.warmup_iters,
            "iters": config.iters, "agg_iters": 1, "validation": config.check, "graph": config.graph,
            "average": AVERAGE_NAMES[config.average], **(engine or {"engine": config.engine})}


def _identity(ctx: RankContext) -> dict[str, Any]:
    """Pid, device index and PCI bus of every rank, for nccl-tests' "# Rank ... Pid" lines."""
    import torch
    import torch.distributed as dist

    index, bus = -1, ""
    if ctx.device_type == "cuda":
        index = ctx.device.index
        bus_id = getattr(torch.cuda.get_device_properties(index), "pci_bus_id", None)
        bus = f"0x{int(bus_id):02x}" if bus_id is not None else ""
    mine = (os.getpid(), index, bus)
    everyone: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(everyone, mine)
    return {"rank_pids": [e[0] for e in everyone], "rank_device_index": [e[1] for e in everyone],
            "rank_bus_id": [e[2] for e in everyone]}


def buffer_bytes(op: str, per: int, n: int, dtype: str) -> int:
    send, recv = calls.buffer_elements(op, per, n)
    return (send + recv) * element_size(dtype)


def usable(free: int) -> int:
    """Bytes of ``free`` memory a rank gives to its buffers; the headroom covers the check's
    temporaries and the runtime's own allocations."""
    return max(0, int(free * 0.8) - (512 << 20))


def _too_small(op: str, dtype: str) -> str:
    """What a row of ``op`` needs on every rank, in words."""
    unit, elt = per_rank_unit(op, dtype), element_size(dtype)
    return f"one element ({elt} B)" if unit == elt else f"{unit} B"


def refuse_empty(config: CollConfig, world: int) -> None:
    """Before any rank starts: a sweep in which no size holds a row for ``world`` ranks (every
    size below one element, or one 16-byte unit, per rank) measures nothing; say so rather than
    store a run without rows. (Sizes too small beside sizes that fit are skipped with a note.)"""
    sizes = config.sizes()
    if any(row_counts(op, s, dtype, world).param > 0 for op in config.ops for dtype in config.dtypes
           for s in sizes):
        return
    op, dtype = config.ops[0], config.dtypes[0]
    raise UsageError(f"sizes -b {config.minbytes} .. -e {config.maxbytes}: every size of {op} {dtype} holds "
                     f"less than {_too_small(op, dtype)} per rank for {world} ranks: nothing to measure")


def refuse_unallocatable(config: CollConfig, world: int, local: int, available: int) -> None:
    """Before any rank starts: when not one size of the sweep fits in the host memory that
    ``local`` ranks share, there is nothing to measure; say so with the memory there is.
    (Sizes that do not fit beside sizes that do are skipped per rank, with a note.)"""
    memory = usable(available // max(1, local))
    pers = [(op, dtype, row_counts(op, s, dtype, world).param)
            for op in config.ops for dtype in config.dtypes for s in config.sizes()]
    needs = [buffer_bytes(op, per, world, dtype) for op, dtype, per in pers if per > 0]
    if needs and min(needs) > memory:
        raise UsageError(f"sizes -b {config.minbytes} .. -e {config.maxbytes}: the smallest needs {min(needs)} B "
                         f"of buffers per rank, more than the {memory} B each of {local} local ranks can use "
                         f"({available} B of host memory available)")


def _usable_memory(ctx: RankContext) -> int:
    """Bytes a rank may give to its buffers: the least over ranks, so all skip the same sizes
    (nccl-tests likewise lowers maxBytes to fit the device). Headroom covers the check's temporaries."""
    import psutil
    import torch
    import torch.distributed as dist

    if ctx.device_type == "cuda":
        free = torch.cuda.mem_get_info(ctx.device)[0]
    else:
        free = psutil.virtual_memory().available // max(1, ctx.env.local_world_size)
    least = torch.tensor([usable(free)], dtype=torch.int64, device=ctx.device)
    dist.all_reduce(least, dist.ReduceOp.MIN)
    return int(least.item())


def _refusals(op: str, refused: dict[tuple[str, str], dict[str, str]], engine: Any, graph: bool) -> list[str]:
    """One line per reason: the types and reductions the engine cannot run, and where."""
    by_reason: dict[str, list[str]] = {}
    for (dtype, redop), places in refused.items():
        combo = f"{dtype} {redop}" if redop != "none" else dtype
        if len(places) == len(placements(op)) and len(set(places.values())) == 1:  # both, one reason
            by_reason.setdefault(next(iter(places.values())), []).append(combo)
            continue
        for placement, reason in places.items():
            where = "out of place" if placement == "out" else "in place"
            by_reason.setdefault(reason, []).append(f"{combo} {where}")
    inside = " in a graph (-G)" if graph else ""
    # "out of place", not nccl-tests' hyphenated column name: SuperBench's parser takes the
    # last line naming "out-of-place" as the column header, so no note may name it
    return [f"{op}: skipped {', '.join(dict.fromkeys(what))}: {engine.cannot()} cannot run it{inside} ({reason})"
            + ("" if all(len(p) == len(placements(op)) for p in refused.values()) else
               "; a row is measured in both placements or not at all")
            for reason, what in by_reason.items()]


def run_op(ctx: RankContext, config: CollConfig, op: str, engine: Any = None) -> None:
    engine = engine or calls.TorchEngine(ctx.backend)
    spec = SPECS[op]
    n = ctx.world_size
    ctx.meta({f"coll_sweep.{op}": sweep_header(config, engine.describe())})
    # Every note of an op is known before its first row: which types and reductions the engine
    # runs (tried with one element per rank), which sizes are skipped and how the engine measured
    # the op. The tables print them after the op's table (live and in results show), never
    # between its column header and its rows, where nccl-tests' parsers read rows.
    notes: list[str] = []
    combos = [(d, r) for d in config.dtypes for r in (config.redops if spec.reduces else ("none",))]
    sizes = config.sizes()
    memory = _usable_memory(ctx)
    usable: dict[tuple[str, str], list[str]] = {}
    refused: dict[tuple[str, str], dict[str, str]] = {}
    planned: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for dtype, redop in combos:
        probe = Sweep(ctx, config, op, dtype, redop, engine)
        # a row holds both placements, as nccl-tests prints it: a combination the engine cannot
        # run in one of them is skipped whole (said once per reason), never half printed
        places = probe.probe()
        if probe.refused:
            refused[(dtype, redop)] = probe.refused
            places = []
        usable[(dtype, redop)] = places
        pers = [row_counts(op, s, dtype, n).param for s in sizes]
        runnable = [(s, p) for s, p in zip(sizes, pers) if p > 0]
        if len(runnable) < len(sizes):
            too_small = [s for s, p in zip(sizes, pers) if p == 0]
            notes.append(f"{op} {dtype}: size(s) {', '.join(map(str, too_small))} B hold less "
                         f"than {_too_small(op, dtype)} per rank for {n} ranks: skipped")
        fits = [(s, p) for s, p in runnable if buffer_bytes(op, p, n, dtype) <= memory]
        if len(fits) < len(runnable):
            big = [str(s) for s, p in runnable if (s, p) not in fits]
            notes.append(f"{op} {dtype}: size(s) {', '.join(big)} B skipped: their buffers need more "
                         f"than the {memory} B of memory free per rank")
        planned[(dtype, redop)] = fits
    notes += _refusals(op, refused, engine, bool(config.graph))
    caveat = engine.caveat(op)
    if caveat and any(usable.values()):
        notes.append(caveat)
    for text in dict.fromkeys(notes):
        ctx.note(text, op)
    records: list[Measurement] = []
    bws: list[float] = []
    bad = 0
    # every row it will measure; a row's time is about a launch (~64 KiB at link speed) plus its bytes
    plan = ctx.plan(op, "rows", [float(size + (1 << 16)) for combo in combos if usable[combo]
                                 for _ in range(config.cycles) for size, _ in planned[combo]])
    # -N repeats the size loop inside each type and reduction, after one warm-up, as
    # nccl-tests' TimeTest does: the cycles of one combination print together.
    for dtype, redop in combos:
        places, runnable = usable[(dtype, redop)], planned[(dtype, redop)]
        if not places or not runnable:
            continue
        sweep = Sweep(ctx, config, op, dtype, redop, engine)
        sweep.allocate(max(p for _, p in runnable))
        sweep.warm_up(places, [p for _, p in runnable])
        for cycle in range(config.cycles):
            for size, per in runnable:
                ms, row_bws, row_bad = sweep.row(size, per, places, cycle)
                ctx.record(ms)
                ctx.progress()
                plan.step()
                records += ms
                bws += row_bws
                bad += row_bad
    if not records:
        return
    run_params = {"ranks": n}
    ctx.record([AVG_BUSBW(op, sum(bws) / len(bws), run_params), OUT_OF_BOUNDS(op, float(bad), run_params)])
    if bad:
        ctx.fail(f"{op}: {bad} out-of-bounds value(s) (a rank's result with wrong elements, "
                 "#wrong > 0): data corruption")


def open_engine(ctx: RankContext, config: CollConfig) -> Any:
    """The engine ``--engine`` names, ready on this rank."""
    if config.engine == "nccl":
        from clusterbench.bench.collectives import direct

        return direct.open_engine(ctx)
    return calls.TorchEngine(ctx.backend)


def main(ctx: RankContext, config: CollConfig) -> None:
    if config.graph and ctx.device_type != "cuda":
        raise UsageError(f"-G/--cudagraph {config.graph} captures CUDA/HIP graphs and needs GPU ranks")
    if config.root >= ctx.world_size and any(SPECS[op].has_root for op in config.ops):
        raise UsageError(f"--root {config.root} is not a rank: there are {ctx.world_size} ranks")
    ctx.meta(_identity(ctx))
    engine = open_engine(ctx, config)
    try:
        ctx.meta({"coll_engine": engine.describe()})
        with engine.active():
            for op in config.ops:
                run_op(ctx, config, op, engine)
    except BaseException:
        engine.close(abort=True)   # a peer may be gone: a graceful destroy would wait for it
        raise
    engine.close()
