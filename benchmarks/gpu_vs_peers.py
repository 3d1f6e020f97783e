"""clusterbench on one GPU against peers doing the same work, side by side in one run.

Sections (``--only`` picks some), each printing its rows as it goes, then one table of every
ratio against its target:

- stream: Copy and Triad on 2^25..2^28 doubles. ``clusterbench stream`` against a bare torch
  loop of the same op and a CuPy ElementwiseKernel, each timed per call with device events,
  bandwidth from the minimum time (BabelStream's rule); the % of the datasheet HBM peak is shown.
- gemm: bf16 / fp16 / tf32 / fp8_e4m3 at 8192^3. ``clusterbench gemm`` against a bare
  ``torch.mm`` (``torch._scaled_mm`` for fp8) loop and CuPy's matmul (cuBLAS; CuPy has no bf16
  or fp8 dtype), each the best of 5 samples of 10 calls between events; % of the dense peak.
- transfer: h2d / d2h from pinned memory, 1 GiB. ``clusterbench transfer`` against a bare
  ``copy_(non_blocking=True)`` timed with events, mean of the iterations (TransferBench's rule).
- coll: all_reduce / all_gather, NCCL, one rank, 8 B..1 GiB. clusterbench's own timed row
  (``Sweep.row``) against a bare ``torch.distributed`` loop with the same synchronisation, in
  one process group, in alternating rounds; the 8 B latency with and without graph capture.
  all_reduce in place (the bare loop's ``dist.all_reduce(buf)``), all_gather out of place. On a
  GPU also the same row through ``--engine nccl`` (the library called directly) against the same
  bare loop; benchmarks/nccl_tests_vs.py puts both engines beside nccl-tests itself.
- train: the 1b preset in bf16. ``clusterbench train`` tokens/s against a bare FSDP2 loop
  (``fully_shard`` per block, the same mixed precision, AdamW) over the same model; MFU.
- telemetry: ``clusterbench`` with the sampler on (1 s) and off, in alternating pairs: algbw of
  all_gather 1 GiB (busbw is 0 on one rank, and a one-rank all_reduce moves nothing), stream Triad 2^28 doubles, gemm bf16 8192^3.

clusterbench runs as users run it (the CLI in a subprocess, its ``--json`` read back), except in
``coll``, where its timed loop and the bare one share one process group. Peers run in this
process. ``--device cpu --quick`` runs every section's logic on a CPU with small sizes (no
CuPy, events, pinned memory or graphs there: those rows say why they are skipped).

    python benchmarks/gpu_vs_peers.py [--only stream,gemm,...] [--quick] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("CUPY_TF32", "1")  # CuPy reads it at import: its float32 matmul in tf32

import torch  # noqa: E402

SECTIONS = ("stream", "gemm", "transfer", "coll", "train", "telemetry")
TRIAD_SCALAR = 0.4
RESULTS: list[dict[str, Any]] = []   # the summary table: one dict per compared figure


def note(msg: str) -> None:
    print(msg, flush=True)


def add(section: str, what: str, ours: float | None, peer: float | None, peer_name: str, unit: str,
        target: str, higher_is_better: bool = True, extra: str = "") -> None:
    """One compared figure; the ratio is clusterbench / peer (time: peer / clusterbench inverted
    to clusterbench / peer too, so the target reads as printed)."""
    ratio = ours / peer if ours and peer else None
    ok = None
    if ratio is not None and target:
        op, bound = target[:2], float(target[2:])
        ok = ratio >= bound if op == ">=" else ratio <= bound
    row = {"section": section, "what": what, "clusterbench": ours, "peer": peer, "peer_name": peer_name,
           "unit": unit, "ratio": ratio, "target": target, "met": ok, "extra": extra}
    RESULTS.append(row)
    r = f"{ratio:.3f}" if ratio is not None else "n/a"
    note(f"  {what:<34} clusterbench {_fmt(ours)} {unit:<8} {peer_name:<22} {_fmt(peer)}  ratio {r} "
         f"{target}{' ' + extra if extra else ''}")


def _fmt(v: float | None) -> str:
    return f"{v:>10.4g}" if isinstance(v, (int, float)) else f"{'n/a':>10}"


# -- clusterbench as a user runs it ---------------------------------------------------------------

def cb(args: list[str], db: str, timeout: float = 600) -> list[dict]:
    cmd = [sys.executable, "-m", "clusterbench", *args, "--json", "-q", "--db", db]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0:
        note(f"  ! clusterbench {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-600:]}")
    return rows


def pick(rows: list[dict], metric: str, **params: Any) -> float | None:
    for r in rows:
        if r.get("kind") == "measurement" and r["metric"] == metric and \
                all(r["params"].get(k) == v for k, v in params.items()):
            return r["value"]
    return None


# -- timers ---------------------------------------------------------------------------------------

def event_timer(dev: torch.device) -> Callable[[Callable[[], Any], int], float]:
    """Seconds of ``reps`` back-to-back calls: device events on a GPU, a host clock on a CPU."""
    if dev.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        def gpu(fn: Callable[[], Any], reps: int = 1) -> float:
            start.record()
            for _ in range(reps):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3
        return gpu

    def cpu(fn: Callable[[], Any], reps: int = 1) -> float:
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        return time.perf_counter() - t0
    return cpu


def cupy_or_none(dev: torch.device) -> tuple[Any, str]:
    if dev.type != "cuda" or getattr(torch.version, "hip", None):
        return None, "CuPy peer needs an NVIDIA GPU"
    try:
        import cupy
        cupy.cuda.Device(dev.index or 0).use()
        return cupy, ""
    except Exception as e:  # noqa: BLE001 - any import/driver failure means no CuPy peer
        return None, f"CuPy unavailable: {type(e).__name__}: {e}"


def cupy_timer(cp: Any) -> Callable[[Callable[[], Any], int], float]:
    start, end = cp.cuda.Event(), cp.cuda.Event()

    def t(fn: Callable[[], Any], reps: int = 1) -> float:
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / 1e3
    return t


def free_gpu(cp: Any = None) -> None:
    if cp is not None:
        cp.get_default_memory_pool().free_all_blocks()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


# -- stream ---------------------------------------------------------------------------------------

def section_stream(a: argparse.Namespace, dev: torch.device, db: str, peak_gbs: float | None) -> None:
    exps = (16, 17) if a.quick else (25, 26, 27, 28)
    sizes = [1 << e for e in exps]
    n_iter = 10 if a.quick else 50
    note(f"# stream: Copy, Triad, double, {n_iter} iterations (first dropped), min time; "
         f"arrays 2^{exps[0]}..2^{exps[-1]} elements")
    rows = cb(["stream", "--sizes", f"{sizes[0] * 8}:{sizes[-1] * 8}", "--kernels", "Copy,Triad", "-n",
               str(n_iter), "--devices", a.devices, "--device", a.device_type, "--telemetry-interval", "0"], db)
    cp, why = cupy_or_none(dev)
    timer = event_timer(dev)
    for n in sizes:
        x = torch.full((n,), 0.1, dtype=torch.float64, device=dev)
        y = torch.full((n,), 0.2, dtype=torch.float64, device=dev)
        z = torch.zeros(n, dtype=torch.float64, device=dev)
        ops = {"Copy": (lambda x=x, z=z: z.copy_(x), 2),
               "Triad": (lambda x=x, y=y, z=z: torch.add(y, z, alpha=TRIAD_SCALAR, out=x), 3)}
        bare = {}
        for k, (fn, arrays) in ops.items():
            ts = [timer(fn, 1) for _ in range(n_iter)][1:]
            bare[k] = arrays * 8 * n / min(ts) / 1e9
        del x, y, z
        free_gpu()
        cupy_bw: dict[str, float] = {}
        if cp is not None:
            copy_k = cp.ElementwiseKernel("float64 src", "float64 dst", "dst = src", "peer_copy")
            triad_k = cp.ElementwiseKernel("float64 b, float64 c, float64 s", "float64 a", "a = b + s * c",
                                           "peer_triad")
            ca = cp.full(n, 0.1, dtype=cp.float64)
            cb_ = cp.full(n, 0.2, dtype=cp.float64)
            cc = cp.zeros(n, dtype=cp.float64)
            ct = cupy_timer(cp)
            cops = {"Copy": (lambda k=copy_k, ca=ca, cc=cc: k(ca, cc), 2),
                    "Triad": (lambda k=triad_k, ca=ca, cb_=cb_, cc=cc: k(cb_, cc, TRIAD_SCALAR, ca), 3)}
            for k, (fn, arrays) in cops.items():
                ts = [ct(fn, 1) for _ in range(n_iter)][1:]
                cupy_bw[k] = arrays * 8 * n / min(ts) / 1e9
            del ca, cb_, cc
            free_gpu(cp)
        for k in ops:
            ours = pick(rows, "bandwidth", kernel=k, array_size=n)
            best_name, best = max((("torch loop", bare[k]), ("CuPy kernel", cupy_bw.get(k, 0.0))),
                                  key=lambda p: p[1])
            pct = f"{ours / peak_gbs * 100:.1f}% of {peak_gbs:g} GB/s peak" if ours and peak_gbs else ""
            others = f"torch {bare[k]:.1f}, CuPy {cupy_bw[k]:.1f}" if k in cupy_bw else \
                f"torch {bare[k]:.1f}, CuPy n/a ({why})"
            add("stream", f"{k} 2^{n.bit_length() - 1} doubles", ours, best, f"best peer ({best_name})",
                "GB/s", ">=0.97", extra=f"[{others}] {pct}")


# -- gemm -----------------------------------------------------------------------------------------

def section_gemm(a: argparse.Namespace, dev: torch.device, db: str, peaks: dict[str, float]) -> None:
    size = 512 if a.quick else 8192
    dtypes = ["fp32"] if dev.type == "cpu" else ["bf16", "fp16", "tf32", "fp8_e4m3"]
    iters, samples = 10, 5
    note(f"# gemm: {size}^3, {'/'.join(dtypes)}, best of {samples} samples of {iters} calls")
    rows = cb(["gemm", "-m", str(size), "-n", str(size), "-k", str(size), "--dtype", ",".join(dtypes),
               "-i", str(iters), "--samples", str(samples), "--devices", a.devices, "--device", a.device_type,
               "--telemetry-interval", "0"], db)
    cp, why = cupy_or_none(dev)
    timer = event_timer(dev)
    flops = 2.0 * size ** 3 * iters
    for dt in dtypes:
        g = torch.Generator().manual_seed(1)
        base = torch.float32 if dt in ("fp32", "tf32", "fp8_e4m3") else getattr(torch, {"bf16": "bfloat16",
                                                                                    "fp16": "float16"}[dt])
        A = torch.randn(size, size, generator=g).to(device=dev, dtype=base)
        B = torch.randn(size, size, generator=g).to(device=dev, dtype=base)
        if dt == "fp8_e4m3":
            A8 = A.to(torch.float8_e4m3fn)
            B8 = B.to(torch.float8_e4m3fn).t().contiguous().t()   # column-major, as cuBLASLt wants
            one = torch.tensor(1.0, device=dev)
            D = torch.empty(size, size, dtype=torch.bfloat16, device=dev)

            def call(A8: Any = A8, B8: Any = B8, one: Any = one, D: Any = D) -> None:
                torch._scaled_mm(A8, B8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, out=D)
        else:
            D = torch.empty(size, size, dtype=base, device=dev)

            def call(A: Any = A, B: Any = B, D: Any = D) -> None:
                torch.mm(A, B, out=D)
        before = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
        try:
            for _ in range(2):
                call()
            best_t = min(timer(call, iters) for _ in range(samples))
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before
        bare = flops / best_t / 1e12
        del A, B, D
        free_gpu()
        cupy_tf = None
        cupy_why = why
        if cp is not None and dt in ("fp16", "tf32"):
            ct = cupy_timer(cp)
            cdt = cp.float16 if dt == "fp16" else cp.float32
            rs = cp.random.RandomState(1)
            ca = rs.standard_normal((size, size), dtype=cp.float32).astype(cdt)
            cbm = rs.standard_normal((size, size), dtype=cp.float32).astype(cdt)
            cd = cp.empty((size, size), dtype=cdt)
            for _ in range(2):
                cp.matmul(ca, cbm, out=cd)
            cupy_tf = flops / min(ct(lambda ca=ca, cbm=cbm, cd=cd: cp.matmul(ca, cbm, out=cd), iters)
                                  for _ in range(samples)) / 1e12
            del ca, cbm, cd
            free_gpu(cp)
        elif cp is not None:
            cupy_why = f"CuPy has no {dt} dtype"
        ours = pick(rows, "tflops", dtype=dt, stat="best")
        peer_name, peer = max((("torch loop", bare), ("CuPy matmul", cupy_tf or 0.0)), key=lambda p: p[1])
        peak = peaks.get(dt)
        pct = f"{ours / peak * 100:.1f}% of {peak:g} TFLOP/s dense peak" if ours and peak else ""
        others = f"torch {bare:.1f}, CuPy {cupy_tf:.1f}" if cupy_tf else f"torch {bare:.1f}, CuPy n/a ({cupy_why})"
        add("gemm", f"{dt} {size}^3", ours, peer, f"best peer ({peer_name})", "TFLOP/s", ">=0.98",
            extra=f"[{others}] {pct}")


# -- transfer -------------------------------------------------------------------------------------

def section_transfer(a: argparse.Namespace, dev: torch.device, db: str) -> None:
    if dev.type != "cuda":
        note("# transfer: skipped: host<->device copies need a GPU")
        for t in ("h2d", "d2h"):
            add("transfer", f"{t} pinned", None, None, "bare copy_ loop", "GB/s", ">=0.97", extra="(no GPU)")
        return
    nbytes = (64 << 20) if a.quick else (1 << 30)
    iters, warm = 20, 3
    note(f"# transfer: h2d, d2h, pinned host memory, {nbytes >> 20} MiB, mean of {iters} iterations")
    rows = cb(["transfer", "--matrix", "h2d,d2h", "--bytes", str(nbytes), "--iterations", str(iters),
               "--warmups", str(warm), "--devices", a.devices, "--telemetry-interval", "0"], db)
    import numpy as np

    from clusterbench.bench.transfer import engine

    try:
        thp = open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip()
    except OSError:
        thp = "unknown"
    note(f"  (transparent huge pages: {thp})")
    gpu = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    stream = torch.cuda.Stream(device=dev)

    def bare_bw(host: Any, test: str) -> float:
        fn = (lambda: gpu.copy_(host, non_blocking=True)) if test == "h2d" else \
            (lambda: host.copy_(gpu, non_blocking=True))
        ts = []
        with torch.cuda.stream(stream):
            timer = event_timer(dev)
            for i in range(warm + iters):
                t = timer(fn, 1)
                if i >= warm:
                    ts.append(t)
        return nbytes / statistics.mean(ts) / 1e9

    # the peer: cudaHostAlloc memory (pin_memory); beside it, memory registered in place
    # (cudaHostRegister) in 4 KiB pages and in transparent huge pages, as clusterbench pins it
    hosts = {"cudaHostAlloc": torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)}
    for kind, arr in (("registered 4K", np.zeros(nbytes // 4, dtype=np.float32)),
                      ("registered THP", engine._host_pages(nbytes // 4))):
        arr.fill(1.0)
        t = torch.from_numpy(arr)
        hosts[kind] = t.view(torch.uint8) if engine._host_register(t) else None
    for test in ("h2d", "d2h"):
        got = {k: bare_bw(h, test) for k, h in hosts.items() if h is not None}
        note(f"  bare {test}: " + ", ".join(f"{k} {v:.2f} GB/s" for k, v in got.items()))
        bare = got["cudaHostAlloc"]
        ours = None
        for r in rows:
            p = r.get("params", {})
            if r.get("kind") == "measurement" and r["metric"] == "bandwidth" and p.get("test") == test and \
                    p.get("host_memory") == "pinned" and "*" not in (p.get("src"), p.get("dst")):
                ours = r["value"]
                break
        add("transfer", f"{test} pinned {nbytes >> 20} MiB", ours, bare, "bare copy_ + events", "GB/s", ">=0.97",
            extra="[" + ", ".join(f"bare {k} {v:.1f}" for k, v in got.items()) + "]")
    for k, h in hosts.items():
        if h is not None and k != "cudaHostAlloc":
            engine._host_unregister(h)
    hosts.clear()
    free_gpu()


# -- collectives (ranks: this module's rank_main runs in the rank process) ------------------------

def bare_issue(op: str, buf: Any, out: Any) -> Callable[[], Any]:
    import torch.distributed as dist

    if op == "all_reduce":
        return lambda: dist.all_reduce(buf)
    return lambda: dist.all_gather_into_tensor(out, buf)


def coll_rank_main(ctx: Any, cfg: dict[str, Any]) -> None:
    from clusterbench.bench.collectives.config import CollConfig
    from clusterbench.bench.collectives.rank import Sweep, combine
    from clusterbench.families.collectives.spec import row_counts
    from clusterbench.records import Measurement

    iters, rounds = cfg["iters"], cfg["rounds"]
    direct_engine = None
    if ctx.device.type == "cuda":
        from clusterbench.bench.collectives import direct
        direct_engine = direct.open_engine(ctx)
    for op in cfg["ops"]:
        place = "in" if op == "all_reduce" else "out"   # what the bare loop runs
        for size in cfg["sizes"]:
            for graph in (0, 1) if size == cfg["sizes"][0] and ctx.device.type == "cuda" else (0,):
                config = CollConfig(ops=(op,), minbytes=size, maxbytes=size, iters=iters, warmup_iters=5,
                                    check=0, average=1, graph=graph * cfg["launches"])
                sweep = Sweep(ctx, config, op, "float", "sum")
                per = row_counts(op, size, "float", ctx.world_size).param
                sweep.allocate(per)
                sweep.warm_up([place], [per])
                lib_sweep = None
                if direct_engine is not None:
                    lib_sweep = Sweep(ctx, config, op, "float", "sum", direct_engine)
                    lib_sweep.allocate(per)
                    with direct_engine.active():
                        lib_sweep.warm_up([place], [per])
                buf = torch.ones(per, dtype=torch.float32, device=ctx.device)
                out = torch.empty(per * ctx.world_size, dtype=torch.float32, device=ctx.device)
                issue = bare_issue(op, buf, out)
                bare_graph = None
                if graph:
                    side = torch.cuda.Stream(device=ctx.device)
                    side.wait_stream(torch.cuda.current_stream(ctx.device))
                    with torch.cuda.stream(side):
                        issue()
                    torch.cuda.current_stream(ctx.device).wait_stream(side)
                    ctx.synchronize()
                    bare_graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(bare_graph):
                        for _ in range(iters):
                            issue()
                for _ in range(5):
                    issue()
                ctx.synchronize()

                def bare_time(bare_graph: Any = bare_graph, issue: Callable[[], Any] = issue,
                              async_op: bool = False, op: str = op, buf: Any = buf, out: Any = out) -> float:
                    ctx.barrier()
                    t0 = time.perf_counter()
                    if async_op:   # the same loop with async_op=True and one wait: the cost of a Work
                        import torch.distributed as dist
                        works = [dist.all_reduce(buf, async_op=True) if op == "all_reduce" else
                                 dist.all_gather_into_tensor(out, buf, async_op=True) for _ in range(iters)]
                        works[-1].wait()
                        n = iters
                    elif bare_graph is not None:
                        for _ in range(cfg["launches"]):
                            bare_graph.replay()
                        n = iters * cfg["launches"]
                    else:
                        for _ in range(iters):
                            issue()
                        n = iters
                    ctx.synchronize()
                    return combine(ctx, (time.perf_counter() - t0) / n, 1) * 1e6

                ours, bare, bare_async, bare_b, lib = [], [], [], [], []
                for r in range(rounds):
                    for which in ((0, 1, 2, 3, 4) if r % 2 == 0 else (4, 3, 2, 1, 0)):
                        if which == 0:
                            ms, _, _ = sweep.row(size, per, [place], 0)
                            ours.append(next(m.value for m in ms if m.metric == "time_us"))
                        elif which == 4 and lib_sweep is not None and direct_engine is not None:
                            with direct_engine.active():
                                ms, _, _ = lib_sweep.row(size, per, [place], 0)
                            lib.append(next(m.value for m in ms if m.metric == "time_us"))
                        elif which == 1:
                            bare.append(bare_time())
                        elif which == 2 and not graph and ctx.device.type == "cuda":
                            bare_async.append(bare_time(async_op=True))
                        elif which == 3:   # the bare loop again: the noise floor of the ratio (A/A)
                            bare_b.append(bare_time())
                    ctx.progress()
                p = {"op": op, "bytes": size, "graph": graph}
                ctx.record([
                    Measurement(op, "time_us", statistics.median(ours), "us", {**p, "method": "clusterbench"}),
                    Measurement(op, "time_us", statistics.median(bare), "us", {**p, "method": "bare"}),
                    *([Measurement(op, "time_us", statistics.median(bare_async), "us", {**p, "method": "bare_async"})]
                      if bare_async else []),
                    *([Measurement(op, "time_us", statistics.median(lib), "us", {**p, "method": "engine_nccl"})]
                      if lib else []),
                    Measurement(op, "ratio", statistics.median(a / b for a, b in zip(ours, bare)), "",
                                {**p, "method": "clusterbench/bare"}),
                    Measurement(op, "ratio", statistics.median(a / b for a, b in zip(bare_b, bare)), "",
                                {**p, "method": "bare/bare"}),
                ])
                del sweep, lib_sweep, buf, out, bare_graph
                if ctx.device.type == "cuda":
                    torch.cuda.empty_cache()
    if direct_engine is not None:
        direct_engine.close()


def section_coll(a: argparse.Namespace, dev: torch.device, db: str) -> None:
    from clusterbench.ranks.context import RankOptions
    from clusterbench.ranks.driver import Job, execute
    from clusterbench.records import Header, Rows
    from clusterbench.units import format_size

    sizes = [8, 1 << 10, 1 << 16, 1 << 20] if a.quick else [8, 1 << 10, 1 << 16, 1 << 20, 16 << 20, 256 << 20, 1 << 30]
    cfg = {"ops": ["all_reduce", "all_gather"], "sizes": sizes, "iters": 20 if a.quick else 50,
           "rounds": a.rounds or (3 if a.quick else 7), "launches": 5}
    got: dict[tuple, float] = {}
    header: dict[str, Any] = {}

    def sink(event: Any) -> None:
        if isinstance(event, Header):
            header.update(ranks=event.ranks, backend=event.backend)
        elif isinstance(event, Rows):
            for m in event.measurements:
                got[(m.params["op"], m.params["bytes"], m.params["graph"], m.params["method"])] = m.value

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpu_vs_peers  # ranks find the function by this module's name, not __main__

    note(f"# coll: all_reduce (in place), all_gather (out of place), float sum, 1 rank, {cfg['iters']} "
         f"iterations per round, {cfg['rounds']} alternating rounds, median; bare/bare: the bare loop timed "
         f"twice per round, the ratio's noise floor; engine nccl: the same row through the library")
    outcome = execute(Job(gpu_vs_peers.coll_rank_main, cfg, RankOptions(device=a.device_type, timeout=600),
                          np=1), sink)
    if outcome.errors:
        note("  ! coll: " + "; ".join(outcome.errors))
    note(f"  ({header.get('ranks')} rank, backend {header.get('backend')})")
    for op in cfg["ops"]:
        for size in sizes:
            ours, bare = got.get((op, size, 0, "clusterbench")), got.get((op, size, 0, "bare"))
            target = "<=1.03" if size >= 1 << 20 else ""
            ba = got.get((op, size, 0, "bare_async"))
            r, aa = got.get((op, size, 0, "clusterbench/bare")), got.get((op, size, 0, "bare/bare"))
            add("coll", f"{op} {format_size(size)} time", ours, bare, "bare dist loop", "us", target,
                higher_is_better=False, extra=("" if target else "(latency: reported, target at >= 1 MiB) ") +
                (f"[median per-round ratio {r:.3f}, bare/bare {aa:.3f}]" if r and aa else "") +
                (f" [bare loop with async_op=True: {ba:.2f} us]" if ba else ""))
        for size in sizes:
            lib, bare = got.get((op, size, 0, "engine_nccl")), got.get((op, size, 0, "bare"))
            add("coll", f"{op} {format_size(size)} time, engine nccl", lib, bare, "bare dist loop", "us",
                "<=1.03" if size >= 1 << 20 else "", higher_is_better=False,
                extra="" if lib else "(--engine nccl needs a GPU)")
        g_ours, g_bare = got.get((op, sizes[0], 1, "clusterbench")), got.get((op, sizes[0], 1, "bare"))
        add("coll", f"{op} {format_size(sizes[0])} time, graph", g_ours, g_bare, "bare graph replay", "us", "",
            higher_is_better=False, extra="" if g_ours else "(graph capture needs a GPU)")


# -- train ----------------------------------------------------------------------------------------

def bare_train(preset: str, steps: int, warmup: int, batch: int, lr: float, device: str) -> dict[str, float]:
    """A bare FSDP2 loop over clusterbench's model shape, in this (fresh) process: tokens/s."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.nn import functional as F

    from clusterbench.bench.workloads.model import PRESETS, build_model, train_flops_per_token
    try:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dev = torch.device(device)
    backend = "nccl" if dev.type == "cuda" else "gloo"
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    dist.init_process_group(backend, rank=0, world_size=1)
    shape = PRESETS[preset]
    mesh = init_device_mesh(dev.type, (1,))
    bf16 = dev.type == "cuda"
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bf16 else \
        MixedPrecisionPolicy()
    with torch.device("meta"):
        model = build_model(shape)
    for block in model.blocks:
        fully_shard(block, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    model.to_empty(device=dev)
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            if p.dim() == 1:
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02 if i == 0 else p.shape[1] ** -0.5)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    g = torch.Generator(device=dev).manual_seed(0)
    times = []
    for step in range(steps):
        tokens = torch.randint(0, shape.vocab, (batch, shape.seq + 1), device=dev, generator=g)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.float().flatten(0, 1), tokens[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        if step >= warmup:
            times.append(time.perf_counter() - t0)
    dist.destroy_process_group()
    tps = batch * shape.seq * len(times) / sum(times)
    return {"tokens_per_s": tps, "flops_per_token": train_flops_per_token(shape)}


def section_train(a: argparse.Namespace, dev: torch.device, db: str, peak_bf16: float | None) -> None:
    preset = "tiny" if a.quick else "1b"
    steps, warmup, batch = (6, 2, 8) if a.quick else (20, 3, 8)
    dtype = "bf16" if dev.type == "cuda" else "fp32"
    note(f"# train: preset {preset}, {dtype}, batch {batch}, {steps} steps ({warmup} warm-up), 1 rank, FSDP2")
    rows = cb(["train", "--preset", preset, "--np", "1", "--device", a.device_type, "--dtype", dtype,
               "--steps", str(steps), "--warmup", str(warmup), "--batch", str(batch), "--no-comm-share",
               "--telemetry-interval", "0"], db)
    ours = pick(rows, "tokens_per_s", stat="avg")
    mfu = pick(rows, "mfu", stat="avg")
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--peer-train", preset, "--peer-device", str(dev),
                        "--steps", str(steps), "--warmup", str(warmup), "--batch", str(batch)],
                       capture_output=True, text=True, timeout=900)
    bare, flops = None, None
    if p.returncode == 0 and p.stdout.strip():
        got = json.loads(p.stdout.strip().splitlines()[-1])
        bare, flops = got["tokens_per_s"], got["flops_per_token"]
    else:
        note(f"  ! bare FSDP2 loop: exit {p.returncode}: {p.stderr.strip()[-600:]}")
    extra = ""
    if mfu is not None:
        extra = f"MFU {mfu * 100:.1f}%"
    if bare and flops and peak_bf16 and dtype == "bf16":
        extra += f" (bare {flops * bare / 1e12 / peak_bf16 * 100:.1f}%; MFU = (6(P - V h) + 12 L h s) x tokens/s / peak)"
    add("train", f"{preset} {dtype} tokens/s", ours, bare, "bare FSDP2 loop", "tok/s", ">=0.97", extra=extra)


# -- telemetry ------------------------------------------------------------------------------------

def section_telemetry(a: argparse.Namespace, dev: torch.device, db: str) -> None:
    size = "1M" if a.quick else "1G"
    n = 1 << (16 if a.quick else 28)
    g = 256 if a.quick else 8192
    gdt = "fp32" if dev.type == "cpu" else "bf16"
    common = ["--device", a.device_type]
    cases = [
        # one rank: busbw = algbw x (n-1)/n is 0, so algbw stands in; all_gather, since a one-rank
        # all_reduce moves no data (NCCL returns at once: host launch time only)
        ("all_gather algbw", ["coll", "all_gather", "-b", size, "-e", size, "-n", "50", "--np", "1", *common],
         "algbw", {}),
        ("stream Triad", ["stream", "-s", str(n), "--kernels", "Triad", "-n", "50", "--devices", a.devices, *common],
         "bandwidth", {"kernel": "Triad"}),
        (f"gemm {gdt} {g}^3", ["gemm", "-m", str(g), "-n", str(g), "-k", str(g), "--dtype", gdt, "--devices",
                               a.devices, *common], "tflops", {"stat": "best"}),
    ]
    note(f"# telemetry: sampler every 1 s vs off, {a.pairs} alternating pair(s) per benchmark")
    for name, args, metric, params in cases:
        offs, ons = [], []
        for i in range(a.pairs):
            for on in ((False, True) if i % 2 == 0 else (True, False)):
                v = pick(cb([*args, "--telemetry-interval", "1" if on else "0"], db), metric, **params)
                (ons if on else offs).append(v)
        ok = [(x, y) for x, y in zip(ons, offs) if x and y]
        on_v = statistics.median([x for x, _ in ok]) if ok else None
        off_v = statistics.median([y for _, y in ok]) if ok else None
        add("telemetry", f"{name}, on vs off", on_v, off_v, "telemetry off", "", ">=0.99")


# -- main -----------------------------------------------------------------------------------------

def environment(dev: torch.device) -> dict[str, Any]:
    env: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": str(dev)}
    if dev.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(dev)
        env["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        try:
            import pynvml
            pynvml.nvmlInit()
            env["driver"] = pynvml.nvmlSystemGetDriverVersion()
        except Exception as e:  # noqa: BLE001
            env["driver"] = f"unknown ({type(e).__name__})"
    else:
        import platform
        env["gpu"] = f"none ({platform.processor() or platform.machine()})"
    return env


def summary() -> None:
    note("\n# summary: ratio = clusterbench / peer")
    note(f"{'section':<10} {'what':<34} {'clusterbench':>12} {'peer':>12} {'unit':<8} {'ratio':>6} "
         f"{'target':<7} met")
    for r in RESULTS:
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "n/a"
        met = {True: "yes", False: "NO", None: "-"}[r["met"]]
        note(f"{r['section']:<10} {r['what']:<34} {_fmt(r['clusterbench']):>12} {_fmt(r['peer']):>12} "
             f"{r['unit']:<8} {ratio:>6} {r['target']:<7} {met}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma list of: " + ", ".join(SECTIONS))
    ap.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    ap.add_argument("--quick", action="store_true", help="small sizes: check the script, not the hardware")
    ap.add_argument("--pairs", type=int, default=2, help="telemetry on/off pairs per benchmark")
    ap.add_argument("--json-out", help="write every compared figure and the environment here")
    ap.add_argument("--rounds", type=int, default=0, help="coll: alternating rounds (default 7)")
    ap.add_argument("--peer-train", help=argparse.SUPPRESS)
    ap.add_argument("--peer-device", default="cpu", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=20, help=argparse.SUPPRESS)
    ap.add_argument("--warmup", type=int, default=3, help=argparse.SUPPRESS)
    ap.add_argument("--batch", type=int, default=8, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.peer_train:
        print(json.dumps(bare_train(a.peer_train, a.steps, a.warmup, a.batch, 3e-3, a.peer_device)))
        return 0
    only = [s.strip() for s in a.only.split(",") if s.strip()]
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        ap.error(f"unknown section(s): {', '.join(unknown)}")
    if a.device == "auto":
        a.device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device("cuda", 0) if a.device == "cuda" else torch.device("cpu")
    a.device_type = a.device
    a.devices = "0" if dev.type == "cuda" else "all"
    from clusterbench import peaks as peak_table
    env = environment(dev)
    found = peak_table.lookup(env["gpu"]) if dev.type == "cuda" else None
    note("# " + ", ".join(f"{k} {v}" for k, v in env.items()))
    t_start = time.perf_counter()
    # a time limit (timeout's SIGTERM) still prints the figures measured so far
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        run_sections(a, only, dev, found)
    except KeyboardInterrupt:
        note("  ! stopped: the figures below are the ones measured before")
    summary()
    note(f"# total {time.perf_counter() - t_start:.0f} s")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"environment": env, "results": RESULTS}, f, indent=1)
    return 0


def run_sections(a: argparse.Namespace, only: list[str], dev: torch.device, found: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "results.db")
        for s in only:
            t0 = time.perf_counter()
            try:
                if s == "stream":
                    section_stream(a, dev, db, found.hbm_gbs if found else None)
                elif s == "gemm":
                    section_gemm(a, dev, db, dict(found.tflops) if found else {})
                elif s == "transfer":
                    section_transfer(a, dev, db)
                elif s == "coll":
                    section_coll(a, dev, db)
                elif s == "train":
                    section_train(a, dev, db, found.tflops.get("bf16") if found else None)
                elif s == "telemetry":
                    section_telemetry(a, dev, db)
            except Exception as e:  # noqa: BLE001 - one section's failure must not lose the others
                note(f"  ! section {s} failed: {type(e).__name__}: {e}")
            note(f"  ({s}: {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    raise SystemExit(main())
