"""clusterbench stream (Triad) and gemm on CPU vs bare loops doing the same work, in one run.

Peers:
- stream Triad: a bare ``torch.add(b, c, alpha=s, out=a)`` loop (the same fused op) and a numpy
  loop (``np.multiply`` + ``np.add``, two passes, since numpy has no fused triad); bandwidth from
  the minimum time, 3 arrays counted, as BabelStream does.
- gemm: a bare ``torch.matmul(a, b, out=c)`` loop, best sample of ``--iters`` calls.

clusterbench runs as the user runs it (the CLI in a subprocess, its JSON read back); each peer
runs in a fresh subprocess too (this script with ``--peer``), so both sides start from the same
process state (thread pools, allocator); rounds alternate so load changes hit both. Ratio = clusterbench / peer
(target >= 0.97), both as best/best and as the median of per-round ratios. Usage: python benchmarks/node_vs_bare.py [--rounds 3] [--array-size 2^25]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

SCALAR = 0.4


def threads() -> int:
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    torch.set_num_threads(n)
    return n


def clusterbench(args: list[str], db: str) -> list[dict]:
    cmd = [sys.executable, "-m", "clusterbench", *args, "--json", "--db", db]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def cb_triad(n: int, numtimes: int, db: str) -> float:
    rows = clusterbench(["stream", "-s", str(n), "-n", str(numtimes), "--kernels", "Triad",
                         "--device", "cpu"], db)
    return next(r["value"] for r in rows if r.get("kind") == "measurement" and r["metric"] == "bandwidth")


def bare_torch_triad(n: int, numtimes: int) -> float:
    a = torch.full((n,), 0.1, dtype=torch.float64)
    b = torch.full((n,), 0.2, dtype=torch.float64)
    c = torch.full((n,), 0.0, dtype=torch.float64)
    best = float("inf")
    for i in range(numtimes):
        t0 = time.perf_counter()
        torch.add(b, c, alpha=SCALAR, out=a)
        dt = time.perf_counter() - t0
        if i:
            best = min(best, dt)
    return 3 * 8 * n / best / 1e9


def bare_numpy_triad(n: int, numtimes: int) -> float:
    a = np.full(n, 0.1)
    b = np.full(n, 0.2)
    c = np.full(n, 0.0)
    tmp = np.empty(n)
    best = float("inf")
    for i in range(numtimes):
        t0 = time.perf_counter()
        np.multiply(c, SCALAR, out=tmp)
        np.add(b, tmp, out=a)
        dt = time.perf_counter() - t0
        if i:
            best = min(best, dt)
    return 3 * 8 * n / best / 1e9


def cb_gemm(m: int, iters: int, samples: int, db: str) -> float:
    rows = clusterbench(["gemm", "-m", str(m), "-n", str(m), "-k", str(m), "--dtype", "fp32",
                         "-i", str(iters), "--samples", str(samples), "--device", "cpu"], db)
    return next(r["value"] for r in rows
                if r.get("kind") == "measurement" and r["metric"] == "tflops" and r["params"]["stat"] == "best")


def bare_matmul(m: int, iters: int, samples: int) -> float:
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(m, m, generator=g), torch.randn(m, m, generator=g)
    c = torch.empty(m, m)
    torch.matmul(a, b, out=c)
    torch.matmul(a, b, out=c)
    best = float("inf")
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(iters):
            torch.matmul(a, b, out=c)
        best = min(best, (time.perf_counter() - t0) / iters)
    return 2 * m**3 / best / 1e12


PEERS = {"torch-triad": lambda a: bare_torch_triad(a.array_size, a.numtimes),
         "numpy-triad": lambda a: bare_numpy_triad(a.array_size, a.numtimes),
         "matmul": lambda a: bare_matmul(a.gemm_size, a.iters, a.samples)}


def peer(name: str, a: argparse.Namespace) -> float:
    cmd = [sys.executable, __file__, "--peer", name, "--array-size", str(a.array_size),
           "--numtimes", str(a.numtimes), "--gemm-size", str(a.gemm_size), "--iters", str(a.iters),
           "--samples", str(a.samples)]
    return float(subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600).stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", choices=sorted(PEERS), help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--array-size", type=int, default=2**25)
    ap.add_argument("--numtimes", type=int, default=100)
    ap.add_argument("--gemm-size", type=int, default=2048)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--samples", type=int, default=5)
    a = ap.parse_args()
    if a.peer:
        threads()
        print(PEERS[a.peer](a))
        return
    print(f"# {threads()} threads, torch {torch.__version__}, numpy {np.__version__}; "
          f"best of {a.rounds} alternating rounds")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "bench.db")
        cb_s, bt, bn, cb_g, bm = [], [], [], [], []
        for _ in range(a.rounds):
            cb_s.append(cb_triad(a.array_size, a.numtimes, db))
            bt.append(peer("torch-triad", a))
            bn.append(peer("numpy-triad", a))
            cb_g.append(cb_gemm(a.gemm_size, a.iters, a.samples, db))
            bm.append(peer("matmul", a))
    def ratios(xs: list[float], ys: list[float]) -> str:
        per = sorted(x / y for x, y in zip(xs, ys))
        return (f"best/best {max(xs) / max(ys):.3f}, median of per-round ratios "
                f"{per[len(per) // 2]:.3f} (rounds: {', '.join(f'{r:.2f}' for r in per)})")

    print(f"stream Triad, {a.array_size} doubles, -n {a.numtimes} (GB/s, best round):")
    print(f"  clusterbench {max(cb_s):9.2f}   bare torch {max(bt):9.2f}   bare numpy {max(bn):9.2f}")
    print(f"  clusterbench / bare torch: {ratios(cb_s, bt)}")
    print(f"  clusterbench / bare numpy: {ratios(cb_s, bn)}")
    print(f"gemm fp32 {a.gemm_size}^3 (TFLOP/s, best round):")
    print(f"  clusterbench {max(cb_g):9.4f}   bare torch.matmul {max(bm):9.4f}")
    print(f"  clusterbench / bare torch.matmul: {ratios(cb_g, bm)}")

if __name__ == "__main__":
    main()
