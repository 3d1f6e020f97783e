"""clusterbench's collectives against nccl-tests, side by side on the same GPUs and sizes.

For each of all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall and sendrecv:
nccl-tests' ``OP_perf -b 8 -e 1G -f 4 -g 1`` twice (the second run against the first is the
A/A floor: how far two runs of the same tool differ), and ``clusterbench coll OP`` on the same
sizes, iterations and warm-up with ``--engine torch`` and ``--engine nccl``. Printed per op,
size and placement: each one's time (us) and busbw (GB/s), and the ratio of clusterbench's time
to nccl-tests' (1.00: the same; the A/A column is the noise a ratio must beat). nccl-tests'
output is read by clusterbench's own importer (the parser ``clusterbench import`` uses).

    python benchmarks/nccl_tests_vs.py --bin .nccl-tests/build [--gpus 1] [--ops all_reduce,...]
        [-b 8 -e 1G -f 4 -n 20 -w 5] [--json-out FILE]
    python benchmarks/nccl_tests_vs.py --quick     # CPU: the logic, against a recorded log

``--quick`` checks the script on a CPU: nccl-tests' side is the recorded H100 all_reduce log in
tests/data/nccl-tests (the same text twice, so A/A is 1), clusterbench runs on two CPU ranks on
the log's sizes up to 32 KiB; ``--engine nccl`` needs GPU ranks and says so. Its ratios mean
nothing; that every column is parsed and printed does.

Building nccl-tests on the GPU machine (its source is never committed: copy it from
github.com/NVIDIA/nccl-tests into the ignored folder ``.nccl-tests/``). Build it against the NCCL
that PyTorch loads, so both sides run one library: the nvidia-nccl wheel has the headers and
``libnccl.so.2`` but no ``libnccl.so`` to link with, so give the Makefile a home that has one::

    NV=$(python -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__path__[0]))')
    mkdir -p .nccl-tests/home/lib
    ln -sf "$NV/nccl/include" .nccl-tests/home/include
    ln -sf "$NV/nccl/lib/libnccl.so.2" .nccl-tests/home/lib/libnccl.so
    make -C .nccl-tests -j16 CUDA_HOME=/usr/local/cuda NCCL_HOME=$PWD/.nccl-tests/home
    LD_LIBRARY_PATH="$NV/nccl/lib" python benchmarks/nccl_tests_vs.py --bin .nccl-tests/build

``CUDA_HOME`` is a CUDA toolkit with nvcc (``which nvcc``); without one on the machine, the
``nvidia-cuda-nvcc`` wheel's folder (``$NV/cu13`` once installed, with the runtime's headers) can
stand in. ``-g 1`` runs one GPU in one process; ``--gpus N`` runs nccl-tests with ``-g N`` (N
GPUs in one process, grouped as nccl-tests groups them) and clusterbench with ``--np N``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv")
ENGINES = ("torch", "nccl")
RECORDED = ROOT / "tests" / "data" / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"
QUICK_MAX = 32 << 10

Row = dict[tuple[int, str], dict[str, float]]   # (bytes, placement) -> {time_us, busbw}


def rows_of(text: str, op: str) -> Row:
    """nccl-tests' (or clusterbench's) table read by clusterbench's importer."""
    sys.path.insert(0, str(ROOT / "src"))
    from clusterbench.ingest import parse_text

    out: Row = {}
    for run in parse_text(text, name=f"{op}_perf.log"):
        for m in run.measurements:
            if m.benchmark == op and "placement" in m.params and "stat" not in m.params \
                    and m.metric in ("time_us", "busbw"):
                out.setdefault((int(m.params["bytes"]), str(m.params["placement"])), {})[m.metric] = m.value
    return out


def run_nccl_tests(bin_dir: str, op: str, a: argparse.Namespace) -> str:
    exe = os.path.join(bin_dir, f"{op}_perf")
    argv = [exe, "-b", a.minbytes, "-e", a.maxbytes, "-f", str(a.stepfactor), "-g", str(a.gpus),
            "-n", str(a.iters), "-w", str(a.warmup)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=a.timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}")
    return p.stdout


def run_clusterbench(op: str, engine: str, a: argparse.Namespace, sizes: tuple[str, str, str]) -> Row | str:
    """The rows of ``clusterbench coll`` as a user runs it, or why there are none."""
    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-m", "clusterbench", "coll", op, "-b", sizes[0], "-e", sizes[1], "-f", sizes[2],
                "-n", str(a.iters), "-w", str(a.warmup), "--engine", engine, "--np", str(a.gpus if not a.quick else 2),
                "--device", "cpu" if a.quick else "cuda", "--telemetry-interval", "0",
                "--db", os.path.join(tmp, "r.db")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
        p = subprocess.run(argv, capture_output=True, text=True, timeout=a.timeout, env=env)
    if p.returncode != 0:
        return (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
    return rows_of(p.stdout, op)


def ratio(x: float | None, y: float | None) -> float | None:
    return x / y if x and y else None


def _f(v: float | None, width: int, digits: int = 2) -> str:
    return f"{v:>{width}.{digits}f}" if isinstance(v, (int, float)) else f"{'-':>{width}}"


def compare(op: str, first: Row, second: Row, ours: dict[str, Row | str]) -> list[dict[str, Any]]:
    """One line per size and placement nccl-tests printed: each side's time and busbw, ratios."""
    print(f"\n# {op}: time (us), busbw (GB/s); ratio = clusterbench time / nccl-tests time; "
          "A/A = nccl-tests' second run / its first")
    for engine, got in ours.items():
        if isinstance(got, str):
            print(f"#   --engine {engine}: no rows: {got}")
    print(f"# {'size':>10} {'place':>5} | {'nccl-tests':>10} {'busbw':>7} | "
          + " | ".join(f"{'engine ' + e:>10} {'busbw':>7} {'ratio':>6}" for e in ours) + f" | {'A/A':>5}")
    out = []
    for key in sorted(first, key=lambda k: (k[0], k[1] != "out")):   # out-of-place first, as printed
        size, place = key
        a, b = first[key], second.get(key, {})
        row: dict[str, Any] = {"op": op, "bytes": size, "placement": place, "nccl_tests_us": a.get("time_us"),
                               "nccl_tests_busbw": a.get("busbw"), "aa": ratio(b.get("time_us"), a.get("time_us"))}
        cells = []
        for engine, got in ours.items():
            mine = got.get(key, {}) if isinstance(got, dict) else {}
            row[f"{engine}_us"], row[f"{engine}_busbw"] = mine.get("time_us"), mine.get("busbw")
            row[f"{engine}_ratio"] = ratio(mine.get("time_us"), a.get("time_us"))
            cells.append(f"{_f(mine.get('time_us'), 10)} {_f(mine.get('busbw'), 7)} {_f(row[f'{engine}_ratio'], 6, 3)}")
        if not any(row[f"{e}_us"] for e in ours):
            continue
        out.append(row)
        print(f"  {size:>10} {place:>5} | {_f(a.get('time_us'), 10)} {_f(a.get('busbw'), 7)} | "
              + " | ".join(cells) + f" | {_f(row['aa'], 5, 3)}")
    return out


def summary(rows: list[dict[str, Any]]) -> None:
    print("\n# median ratio of clusterbench's time to nccl-tests' per op and engine (A/A: the floor)")
    for op in dict.fromkeys(r["op"] for r in rows):
        mine = [r for r in rows if r["op"] == op]
        cells = []
        for engine in ENGINES:
            rs = [r[f"{engine}_ratio"] for r in mine if r.get(f"{engine}_ratio")]
            cells.append(f"engine {engine} {statistics.median(rs):.3f}" if rs else f"engine {engine} -")
        aa = [r["aa"] for r in mine if r["aa"]]
        floor = f"A/A {statistics.median(aa):.3f}" if aa else "A/A -"
        print(f"  {op:<15} " + "  ".join(cells) + f"  {floor}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", help="folder of the built nccl-tests binaries (OP_perf)")
    ap.add_argument("--quick", action="store_true", help="CPU: the script's logic against a recorded log")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("-b", "--minbytes", default="8")
    ap.add_argument("-e", "--maxbytes", default="1G")
    ap.add_argument("-f", "--stepfactor", type=int, default=4)
    ap.add_argument("-n", "--iters", type=int, default=20)
    ap.add_argument("-w", "--warmup", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json-out")
    a = ap.parse_args()
    ops = [o.strip() for o in a.ops.split(",") if o.strip()]
    unknown = sorted(set(ops) - set(OPS))
    if unknown:
        ap.error(f"unknown op(s): {', '.join(unknown)}")
    if not a.quick and not a.bin:
        ap.error("--bin DIR (the built nccl-tests) or --quick")
    if a.bin and not all(os.access(os.path.join(a.bin, f"{op}_perf"), os.X_OK) for op in ops):
        ap.error(f"{a.bin}: not every one of {', '.join(op + '_perf' for op in ops)} is there")
    rows: list[dict[str, Any]] = []
    for op in (["all_reduce"] if a.quick else ops):
        if a.quick:
            first = {k: v for k, v in rows_of(RECORDED.read_text(), op).items() if k[0] <= QUICK_MAX}
            second = dict(first)
            sizes = ("8", str(QUICK_MAX), "4")
            print(f"# quick: nccl-tests' side is the recorded log {RECORDED.relative_to(ROOT)}, not this machine")
        else:
            try:
                first = rows_of(run_nccl_tests(a.bin, op, a), op)
                second = rows_of(run_nccl_tests(a.bin, op, a), op)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"  ! {op}: nccl-tests failed: {e}")
                continue
            sizes = (a.minbytes, a.maxbytes, str(a.stepfactor))
        ours = {engine: run_clusterbench(op, engine, a, sizes) for engine in ENGINES}
        rows += compare(op, first, second, ours)
    summary(rows)
    if a.json_out:
        with open(a.json_out, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0 if rows else 1


if __name__ == "__main__":
    raise SystemExit(main())
