"""Telemetry overhead: the same clusterbench benchmark with the sampler off and on, side by side.

Runs ``clusterbench coll all_reduce`` (gloo on CPU ranks here, NCCL/RCCL on GPUs) through the
driver in interleaved pairs (off, on, off, on, ...) so drift of a noisy machine hits both alike,
and prints each pair's average bus bandwidth, the median on/off ratio, and the measured cost of
one sampler tick as a share of the interval.

    python benchmarks/telemetry_overhead.py                  # 7 pairs, 1 s interval (the default)
    python benchmarks/telemetry_overhead.py --interval 0.1   # a 10x denser sampler, worst case

Then the same comparison in one process: a compute loop in alternating phases with and without
the sampler thread beside it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from clusterbench.bench.collectives import rank
from clusterbench.bench.collectives.config import coll_config as build_config
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Meta, Rows, Telemetry
from clusterbench.telemetry.sampler import Sampler, default_sources

TARGET = rank.main


def one_run(config: object, np: int, device: str, interval: float) -> tuple[float, int, float, float]:
    """(avg_busbw GB/s, telemetry samples, wall seconds, sampler CPU seconds) of one run."""
    events = []
    t0 = time.perf_counter()
    outcome = execute(Job(TARGET, config, RankOptions(device=device, timeout=300, telemetry_interval=interval),
                          np=np), events.append)
    wall = time.perf_counter() - t0
    if outcome.status != "complete":
        sys.exit(f"benchmark failed: {outcome.errors}")
    bw = [m.value for e in events if isinstance(e, Rows) for m in e.measurements if m.metric == "avg_busbw"]
    samples = sum(len(e.samples) for e in events if isinstance(e, Telemetry))
    cpu = sum(e.data["telemetry"].get("sampler_cpu_s", 0.0) for e in events
              if isinstance(e, Meta) and "telemetry" in e.data)
    return bw[-1], samples, wall, cpu


def tick_cost(n: int = 200) -> tuple[float, int]:
    """Mean seconds of one sampler tick on this host (all sources: psutil and any GPU library)."""
    sources = default_sources()
    s = Sampler(1.0, host="bench", sources=sources)
    time.sleep(0.05)
    t0 = time.perf_counter()
    for _ in range(n):
        s._tick()
    return (time.perf_counter() - t0) / n, len(sources)


def inprocess(interval: float, phases: int, phase_s: float) -> None:
    """The sampler thread next to a compute loop in ONE process, in alternating phases of
    ``phase_s`` seconds with and without it: no process start-up in the comparison, and the
    same GIL and cores the sampler shares with a rank."""
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(256, 256), torch.randn(256, 256)

    def work(seconds: float) -> float:
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for _ in range(10):
                torch.mm(a, b)
            n += 10
        return n / (time.perf_counter() - t0)  # matmuls per second

    work(1.0)
    print(f"# in-process: 256x256 matmul loop, {phases} phase pairs of {phase_s:g} s, "
          f"sampler interval {interval:g} s when on")
    ratios = []
    for i in range(phases):
        if i % 2 == 0:
            off = work(phase_s)
            s = Sampler(interval, host="bench").start()
            on = work(phase_s)
            s.stop()
        else:
            s = Sampler(interval, host="bench").start()
            on = work(phase_s)
            s.stop()
            off = work(phase_s)
        ratios.append(on / off)
        print(f"{i + 1:>4} off {off:>9.0f}/s  on {on:>9.0f}/s  on/off {on / off:.3f}  "
              f"sampler CPU {s.cpu_s * 1e3:.1f} ms")
    print(f"# in-process median on/off throughput ratio: {statistics.median(ratios):.3f} "
          f"(spread {min(ratios):.3f}..{max(ratios):.3f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--interval", type=float, default=1.0, help="sampler interval when on (s)")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--minbytes", default="1M")
    ap.add_argument("--maxbytes", default="8M")
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--phases", type=int, default=8, help="in-process phase pairs")
    ap.add_argument("--phase-seconds", type=float, default=5.0)
    args = ap.parse_args()

    config = build_config("all_reduce", minbytes=args.minbytes, maxbytes=args.maxbytes, iters=args.iters,
                          warmup_iters=5, check=0)
    one_run(config, args.np, args.device, 0)  # warm the forkserver and caches; not counted
    print(f"# all_reduce {args.minbytes}..{args.maxbytes}, {args.iters} iters, np {args.np}, "
          f"sampler interval {args.interval:g} s when on")
    print(f"{'pair':>4} {'off GB/s':>10} {'on GB/s':>10} {'on/off':>8} {'samples':>8} {'run s':>7} "
          f"{'sampler CPU':>12}")
    ratios, offs, ons, shares = [], [], [], []
    for i in range(args.pairs):
        # alternate which goes first, so a trend in the machine's load favours neither
        if i % 2 == 0:
            off, _, _, _ = one_run(config, args.np, args.device, 0)
            on, n, wall, cpu = one_run(config, args.np, args.device, args.interval)
        else:
            on, n, wall, cpu = one_run(config, args.np, args.device, args.interval)
            off, _, _, _ = one_run(config, args.np, args.device, 0)
        ratios.append(on / off)
        offs.append(off)
        ons.append(on)
        shares.append(cpu / wall)
        print(f"{i + 1:>4} {off:>10.4f} {on:>10.4f} {on / off:>8.3f} {n:>8} {wall:>7.1f} "
              f"{cpu * 1e3:>9.1f} ms")
    med = statistics.median(ratios)
    cost, nsrc = tick_cost()
    print(f"# median on/off busbw ratio: {med:.3f} ({(med - 1) * 100:+.1f}%); "
          f"pair spread {min(ratios):.3f}..{max(ratios):.3f}")
    print(f"# best on / best off: {max(ons) / max(offs):.3f} "
          f"({max(ons):.4f} vs {max(offs):.4f} GB/s)")
    print(f"# sampler CPU time / run wall time: {statistics.median(shares) * 100:.3f}% of one core (median)")
    inprocess(args.interval, args.phases, args.phase_seconds)
    print(f"# one sampler tick ({nsrc} source(s)): {cost * 1e6:.0f} us = "
          f"{cost / args.interval * 100:.3f}% of one core per {args.interval:g} s interval")


if __name__ == "__main__":
    main()
