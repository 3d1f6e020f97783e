"""Telemetry overhead: the same clusterbench benchmark with the sampler off and on, side by side.

Runs ``clusterbench coll all_reduce`` (gloo on CPU ranks here, NCCL/RCCL on GPUs) through the
driver in interleaved pairs (off, on, off, on, ...) so drift of a noisy machine hits both alike,
and prints each pair's average bus bandwidth, the median on/off ratio, and the measured cost of
one sampler tick as a share of the interval.

    python benchmarks/telemetry_overhead.py                  # 7 pairs, 1 s interval (the default)
    python benchmarks/telemetry_overhead.py --interval 0.1   # a 10x denser sampler, worst case
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from clusterbench.bench.collectives.config import build_config
from clusterbench.dist.context import DistOptions
from clusterbench.dist.driver import Job, execute
from clusterbench.telemetry.sampler import Sampler, default_sources

TARGET = "clusterbench.bench.collectives.rank:main"


def one_run(config: object, np: int, device: str, interval: float) -> tuple[float, int, float]:
    """(avg_busbw GB/s, telemetry samples, wall seconds) of one run."""
    events = []
    t0 = time.perf_counter()
    outcome = execute(Job(TARGET, config, DistOptions(device=device, timeout=300, telemetry_interval=interval),
                          np=np), events.append)
    wall = time.perf_counter() - t0
    if outcome.status != "complete":
        sys.exit(f"benchmark failed: {outcome.errors}")
    bw = [m.value for e in events if e.kind == "measurements" for m in e.data if m.metric == "avg_busbw"]
    samples = sum(len(e.data) for e in events if e.kind == "telemetry")
    return bw[-1], samples, wall


def tick_cost(n: int = 200) -> tuple[float, int]:
    """Mean seconds of one sampler tick on this host (all sources: psutil and any GPU library)."""
    sources = default_sources()
    s = Sampler(1.0, host="bench", sources=sources)
    time.sleep(0.05)
    t0 = time.perf_counter()
    for _ in range(n):
        s._tick()
    return (time.perf_counter() - t0) / n, len(sources)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--interval", type=float, default=1.0, help="sampler interval when on (s)")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--minbytes", default="1M")
    ap.add_argument("--maxbytes", default="8M")
    ap.add_argument("--iters", type=int, default=40)
    args = ap.parse_args()

    config = build_config("all_reduce", minbytes=args.minbytes, maxbytes=args.maxbytes, iters=args.iters,
                          warmup_iters=5, check=0)
    one_run(config, args.np, args.device, 0)  # warm the forkserver and caches; not counted
    print(f"# all_reduce {args.minbytes}..{args.maxbytes}, {args.iters} iters, np {args.np}, "
          f"sampler interval {args.interval:g} s when on")
    print(f"{'pair':>4} {'off GB/s':>10} {'on GB/s':>10} {'on/off':>8} {'samples':>8} {'run s':>7}")
    ratios = []
    for i in range(args.pairs):
        off, _, _ = one_run(config, args.np, args.device, 0)
        on, n, wall = one_run(config, args.np, args.device, args.interval)
        ratios.append(on / off)
        print(f"{i + 1:>4} {off:>10.4f} {on:>10.4f} {on / off:>8.3f} {n:>8} {wall:>7.1f}")
    med = statistics.median(ratios)
    cost, nsrc = tick_cost()
    print(f"# median on/off busbw ratio: {med:.3f} ({(med - 1) * 100:+.1f}%); "
          f"pair spread {min(ratios):.3f}..{max(ratios):.3f}")
    print(f"# one sampler tick ({nsrc} source(s)): {cost * 1e6:.0f} us = "
          f"{cost / args.interval * 100:.3f}% of one core per {args.interval:g} s interval")


if __name__ == "__main__":
    main()
