"""Sweeps at fleet size: which nodes a sweep names, and what its plan costs, at 4,096 nodes.

A sweep's pair stage is simulated from its plan (``clusterbench.sweep.plan.build``, the rounds a
real sweep launches) and a link model, and judged by the sweep's own analysis
(``clusterbench.sweep.analyze.analyze``). The model: every node has a NIC of speed 1.0 (healthy,
times 1 + N(0, --spread)) or of a speed drawn in [--slow-min, --slow-max] (degraded, --degraded of
the nodes, at random); a pair moves data at the slower of its two NICs, times 1 + N(0, --noise)
for the noise of one measurement; a group of k nodes (``--batch``) at the slowest of its k. Each
pair mode is run on the same nodes side by side, for several draws of the degraded nodes
(--draws): ``auto`` (random matchings, ``--partners`` 3), random with 5 partners, ``ring`` and
``batch 8``. Printed per mode: the rounds, the projected time of the pair stage at 30 s a test,
the degraded nodes named and missed, and the healthy nodes named (the ones ``--on-fail drain``
would take out for nothing), summed over the draws.

Then the cost of a plan before its first launch, interleaved with its peer: the whole pair list
made up front (``itertools.combinations``, as a sweep made it before rounds) against
``plan.build`` and its first round; and ``clusterbench sweep --print`` of a 1,024-node all-pairs
plan, as a child process (the whole command: start-up, plan, 8 MB of text), interleaved with the
same command on 2 nodes (its start-up alone), wall and CPU time.

    python benchmarks/sweep_scale.py
    python benchmarks/sweep_scale.py --nodes 1024 --draws 10
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import random
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

from clusterbench.sweep import plan
from clusterbench.sweep.analyze import SubsetResult, analyze

TEST_SECONDS = 30.0
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def nics(hosts: list[str], args: argparse.Namespace, rng: random.Random) -> tuple[dict[str, float], set[str]]:
    bad = set(rng.sample(hosts, max(1, round(len(hosts) * args.degraded))))
    speed = {h: (rng.uniform(args.slow_min, args.slow_max) if h in bad else 1.0 + rng.gauss(0, args.spread))
             for h in hosts}
    return speed, bad


def simulate(p: plan.Plan, speed: dict[str, float], noise: float, rng: random.Random) -> list[SubsetResult]:
    out = []
    for rnd in p.rounds():
        for subset in rnd.subsets:
            v = min(speed[h] for h in subset) * (1 + rng.gauss(0, noise))
            out.append(SubsetResult(tuple(subset), rnd.stage, v * 40.0, "GB/s"))
    return out


MODES = (("auto (random, 3 partners)", {"pair_mode": "auto"}),
         ("random, 5 partners", {"pair_mode": "random", "partners": 5}),
         ("ring", {"pair_mode": "ring"}),
         ("batch 8", {"batch": 8}))


def detection(args: argparse.Namespace) -> None:
    hosts = [f"gpu{i:04d}" for i in range(1, args.nodes + 1)]
    print(f"## {args.nodes:,} nodes, {args.degraded:.0%} degraded (speed {args.slow_min}-{args.slow_max}), "
          f"healthy spread {args.spread:.0%}, noise {args.noise:.0%} a measurement, {args.draws} draws\n")
    print("| pair mode | rounds | launches | projected (30 s a test) | degraded named | degraded missed "
          "| healthy named | analysis s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    totals: dict[str, list[float]] = {name: [0, 0, 0, 0.0] for name, _ in MODES}
    plans: dict[str, plan.Plan] = {}
    for draw in range(args.draws):
        rng = random.Random(1000 + draw)
        speed, bad = nics(hosts, args, rng)
        for name, kw in MODES:   # the same nodes, every mode in turn
            p = plan.build(hosts, single=False, seed=draw, **kw)
            plans[name] = p
            results = simulate(p, speed, args.noise, random.Random(draw))
            t = time.perf_counter()
            named = {s.host for s in analyze(results).suspects}
            tot = totals[name]
            tot[0] += len(named & bad)
            tot[1] += len(bad - named)
            tot[2] += len(named - bad)
            tot[3] += time.perf_counter() - t
    for name, _ in MODES:
        p = plans[name]
        hit, missed, healthy, secs = totals[name]
        print(f"| {name} | {p.round_count():,} | {p.launches():,} | "
              f"{p.projected_seconds({'pair': TEST_SECONDS}) / 60:.1f} min | {hit:.0f} | {missed:.0f} | "
              f"{healthy:.0f} | {secs / args.draws:.2f} |")
    print()


def _timed(fn) -> float:  # noqa: ANN001 - a benchmark's stopwatch
    gc.collect()
    t = time.perf_counter()
    out = fn()
    secs = time.perf_counter() - t
    del out
    return secs


def _peak(fn) -> float:  # noqa: ANN001
    """Peak traced Python memory, MB (tracing slows it down: timed apart, untraced)."""
    gc.collect()
    tracemalloc.start()
    out = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del out
    return peak / 1e6


def first_launch(args: argparse.Namespace) -> None:
    hosts = [f"gpu{i:04d}" for i in range(1, args.nodes + 1)]

    def listed() -> list:   # the peer: every pair as one list, as a sweep made it before rounds
        return [("single", (h,)) for h in hosts] + [("pair", p) for p in itertools.combinations(hosts, 2)]

    def planned() -> list:   # the plan and its first round, all a sweep makes before launching
        return next(plan.build(hosts, pair_mode="all").rounds()).subsets

    times: dict[str, list[float]] = {"whole list": [], "plan": []}
    for _ in range(args.repeat):   # ABAB
        times["whole list"].append(_timed(listed))
        times["plan"].append(_timed(planned))
    peaks = {"whole list": _peak(listed), "plan": _peak(planned)}
    print(f"## Before the first launch: all pairs of {args.nodes:,} nodes (median of {args.repeat}, "
          f"interleaved; peak traced Python memory, one run each)\n")
    print("| made | s | peak MB |")
    print("| --- | --- | --- |")
    for name, got in times.items():
        print(f"| {name} | {statistics.median(got):.4f} | {peaks[name]:.1f} |")
    a = statistics.median(times["whole list"])
    b = statistics.median(times["plan"])
    print(f"\nwhole list / plan: {a / b:,.0f}x the time, {peaks['whole list'] / peaks['plan']:,.0f}x the memory\n")


def print_time(args: argparse.Namespace) -> None:
    """The whole command, wall and CPU (its user + system time: what load on the machine does
    not inflate), interleaved with ``sweep --print`` of 2 nodes (start-up alone, the peer)."""
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")}

    def argv(hosts: str) -> list[str]:
        return [sys.executable, "-m", "clusterbench", "sweep", "--hosts", hosts, "--pairs", "all", "--print"]

    def child(hosts: str) -> tuple[float, float, str]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        r = subprocess.run(argv(hosts), capture_output=True, text=True, env=env, check=True)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), r.stdout

    big = f"gpu[0001-{args.print_nodes:04d}]"
    got: dict[str, list[tuple[float, float]]] = {big: [], "a,b": []}
    out = ""
    for _ in range(args.repeat):   # ABAB
        wall, cpu, out = child(big)
        got[big].append((wall, cpu))
        wall, cpu, _ = child("a,b")
        got["a,b"].append((wall, cpu))
    rounds = sum(1 for line in out.splitlines() if line.startswith("round "))
    print(f"## `sweep --hosts {big} --pairs all --print` ({rounds:,} rounds, {len(out) / 1e6:.1f} MB), "
          f"median of {args.repeat}, interleaved with 2 nodes' (start-up alone)\n")
    print("| --hosts | wall s (min-max) | CPU s |")
    print("| --- | --- | --- |")
    for hosts, rows in got.items():
        walls = [w for w, _ in rows]
        print(f"| {hosts} | {statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f}) | "
              f"{statistics.median(c for _, c in rows):.2f} |")
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=4096)
    ap.add_argument("--degraded", type=float, default=0.01)
    ap.add_argument("--slow-min", type=float, default=0.5)
    ap.add_argument("--slow-max", type=float, default=0.8)
    ap.add_argument("--spread", type=float, default=0.01)
    ap.add_argument("--noise", type=float, default=0.01)
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--print-nodes", type=int, default=1024)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}\n")
    detection(args)
    first_launch(args)
    print_time(args)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
