"""Simulated A/B sweeps for the p-value adjustment tests (tests/judge/test_stats.py and the
compare tests), and, run as a script, the table of docs/judge.md ("Many rows at once"):
``python tests/helpers/adjust_trials.py``."""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # run as a script: paths


from clusterbench.judge.compare import ADJUSTMENTS, compare  # noqa: E402
from clusterbench.judge.select import Row  # noqa: E402
from clusterbench.records import Measurement, Run  # noqa: E402

LOG = "nccl-tests/superbench-nccl_allreduce.log"   # 34 sizes, 0 B..8 GiB, in and out of place, 8x A100


LARGE = 64 << 20                                  # "large sizes": 64 MiB and up, 8 sizes


def base_sweep() -> list[Measurement]:
    from fleet_helpers import real_measurements

    return [m for m in real_measurements(LOG) if m.metric in ("busbw", "algbw", "time_us")]


def sweep_runs(base: list[Measurement], runs: int, cv: float, rng: random.Random, start: int,
               step: float = 0.0) -> list[Row]:
    """``runs`` repetitions of the sweep: each row's bandwidths times one factor 1 + N(0, cv) per
    run (busbw and algbw are one measurement, time its inverse), busbw and algbw above ``LARGE``
    bytes lower by ``step``, values rounded as nccl-tests prints them (2 decimals for GB/s)."""
    out = []
    for i in range(runs):
        run = Run("import", id=start + i)
        factors: dict[tuple, float] = {}
        for m in base:
            key = (m.params["bytes"], m.params["placement"])
            f = factors.setdefault(key, (1 + rng.gauss(0, cv)) * (1 - step if key[0] >= LARGE else 1.0))
            if m.metric == "time_us":
                value = round(m.value / f, 1)
            else:
                value = round(m.value * f, 2)
            out.append(Row(run, Measurement(m.benchmark, m.metric, value, m.unit, dict(m.params))))
    return out


def simulate(trials: int, runs: int, cv: float, step: float, seed: int) -> dict[str, tuple[int, int, int, int]]:
    """Per method: (chance worse or better, unchanged busbw rows, changed rows found worse, changed
    rows) over ``trials`` comparisons of ``runs`` runs a side."""
    base, rng = base_sweep(), random.Random(seed)
    totals = {m: [0, 0, 0, 0] for m in ADJUSTMENTS}
    for _ in range(trials):
        a = sweep_runs(base, runs, cv, rng, 1)
        b = sweep_runs(base, runs, cv, rng, 1000, step)
        for method in ADJUSTMENTS:
            t = totals[method]
            for c in compare(a, b, adjust_by=method):
                if c.metric != "busbw" or (c.a.sd == 0 and c.b.sd == 0):
                    continue   # one row per measurement; a row printed as 0.00 every time is no test
                if step and c.params["bytes"] >= LARGE:
                    t[2] += c.status == "worse"
                    t[3] += 1
                else:
                    t[0] += c.status in ("worse", "better")
                    t[1] += 1
    return {m: (t[0], t[1], t[2], t[3]) for m, t in totals.items()}


def main() -> None:
    """The table of docs/judge.md: chance rows per 100 unchanged ones, and the share of a real
    step found, per method."""
    print("| runs a side | noise (CV) | step | method | chance worse/better per 100 unchanged rows "
          "| step rows found |")
    print("| --- | --- | --- | --- | --- | --- |")
    for runs, cv in ((5, 0.01), (5, 0.02), (5, 0.03), (3, 0.02), (10, 0.02)):
        for step in (0.0, 0.05, 0.10):
            res = simulate(trials=100, runs=runs, cv=cv, step=step, seed=1)
            for method in ADJUSTMENTS:
                chance, unchanged, found, changed = res[method]
                share = f"{100 * found / changed:.0f}%" if changed else "-"
                print(f"| {runs} | {cv * 100:.0f}% | {step * 100:.0f}% | {method} | "
                      f"{100 * chance / unchanged:.2f} | {share} |")


if __name__ == "__main__":
    main()
