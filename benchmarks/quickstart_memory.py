"""The quick start's memory bandwidth against ``clusterbench stream``'s, and how long the default
commands take on this machine.

``clusterbench run`` (the default suite) and ``clusterbench stream`` (its defaults) run in
alternating rounds (ABAB: the host's load drifts, and both see it alike), each as the CLI in a
child process with ``--json``; per round the Copy bandwidth each reports and its wall time. Prints
the medians, the ratio run / stream (target: within 15%) and the suite's time (target: under
2 minutes). ``--defaults`` also times ``gemm`` and ``infer-tp`` with no options (target: under a
minute each on CPU ranks). The load average is printed with the figures.

    python benchmarks/quickstart_memory.py [--rounds 2] [--defaults]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def timed(argv: list[str], db: str) -> tuple[float, list[dict]]:
    """Seconds a clusterbench command took, and its JSON lines."""
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "clusterbench", *argv, "--json", "-q", "--db", db],
                       capture_output=True, text=True, timeout=1800)
    seconds = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"clusterbench {' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()[-500:]}")
    return seconds, [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def copy_of(lines: list[dict]) -> tuple[float, dict]:
    (m,) = [x for x in lines if x.get("kind") == "measurement" and x["benchmark"] == "stream"
            and x["metric"] == "bandwidth" and x["params"].get("kernel") == "Copy"]
    return m["value"], m["params"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--defaults", action="store_true", help="also time gemm and infer-tp with no options")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "r.db")
        print(f"# load average before: {os.getloadavg()}")
        runs: list[tuple[float, float]] = []
        streams: list[tuple[float, float]] = []
        for r in range(args.rounds):
            order = (("run", runs), ("stream", streams)) if r % 2 == 0 else (("stream", streams), ("run", runs))
            for cmd, into in order:
                seconds, lines = timed([cmd], db)
                copy, params = copy_of(lines)
                into.append((copy, seconds))
                print(f"round {r + 1} {cmd:>6}: Copy {copy:.2f} GB/s ({params.get('array_size')} elements, "
                      f"memory {params.get('memory', '?')}), {seconds:.1f} s, load {os.getloadavg()[0]:.2f}")
        run_copy, stream_copy = (statistics.median(c for c, _ in x) for x in (runs, streams))
        run_s = statistics.median(s for _, s in runs)
        ratio = run_copy / stream_copy
        print(f"# median Copy: run {run_copy:.2f} GB/s, stream {stream_copy:.2f} GB/s, ratio {ratio:.3f} "
              f"({'within' if abs(ratio - 1) <= 0.15 else 'NOT within'} 15%)")
        print(f"# median run time {run_s:.1f} s ({'under' if run_s < 120 else 'NOT under'} 2 minutes), "
              f"stream {statistics.median(s for _, s in streams):.1f} s")
        if args.defaults:
            for cmd in ("gemm", "infer-tp"):
                seconds, _ = timed([cmd], db)
                print(f"# {cmd} with its defaults: {seconds:.1f} s ({'under' if seconds < 60 else 'NOT under'} "
                      f"a minute), load {os.getloadavg()[0]:.2f}")
        print(f"# load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
