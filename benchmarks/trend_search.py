"""Change-point search speed: ``trend``'s search (``judge.changepoint.find_changes``) side by side
with the direct computation of the same statistics (every interval's z for every permutation,
every interval's L1 cost summed element by element: tests/helpers/changepoint_direct.py), on synthetic
histories of one host, and whether the two found exactly the same changes.

Histories: noise around 100 (sd 1) of n runs; a step of -10 at n/2; a dip of -10 over 20 runs at
n/3 (degraded, then repaired); a small dip of -1.5 over 15 runs (not significant). Each search runs
once per history, in this process; the direct one takes minutes at 2,000 runs.

    python benchmarks/trend_search.py                  # 400, 1000 and 2000 runs
    python benchmarks/trend_search.py --runs 400 1000
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from changepoint_direct import changes_direct  # noqa: E402

from clusterbench.judge.changepoint import Settings, find_changes  # noqa: E402


def history(n: int, shape: str) -> np.ndarray:
    x = 100 + np.random.default_rng(1).normal(0, 1, n)
    if shape == "step":
        x[n // 2:] -= 10
    elif shape == "dip":
        x[n // 3:n // 3 + 20] -= 10
    elif shape == "small dip":
        x[n // 3:n // 3 + 15] -= 1.5
    return x


def timed(fn, *args):  # noqa: ANN001, ANN202 - a benchmark's stopwatch
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, nargs="+", default=[400, 1000, 2000])
    args = ap.parse_args()
    s = Settings()
    print("| runs | history | changes | clusterbench s | direct s | direct / clusterbench | same answer |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for n in args.runs:
        for shape in ("noise", "step", "dip", "small dip"):
            x = history(n, shape)
            fast, t_fast = timed(find_changes, x, s)
            direct, t_direct = timed(changes_direct, x, s)
            same = [(c.index, c.before, c.after, c.p_value, c.z) for c in fast] == direct
            print(f"| {n} | {shape} | {len(fast)} | {t_fast:.2f} | {t_direct:.2f} | "
                  f"{t_direct / t_fast:.0f}x | {'yes' if same else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
