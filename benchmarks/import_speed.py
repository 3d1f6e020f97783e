"""Log import speed: ``clusterbench import`` of a large file of concatenated nccl-tests logs,
side by side with peers that only read the same file (``wc -l``, a Python loop splitting every line);
clusterbench with its default of two parsing processes (``--jobs``) and with one.

The file is built in /tmp from the real logs under tests/data/nccl-tests (complete runs only),
repeated until it reaches --size-mb. The superbench logs name their collective only in their
file name, so each copy is preceded by the command line that ran it (as a test script's log
has), or the concatenated file would not say which op those tables measured. ``--info-lines N`` puts N NCCL INFO lines before every run,
the shape of logs taken with NCCL_DEBUG=INFO (those lines are generated from the format of real
INFO lines; the result tables are real). Each command runs as a child process; its wall time, CPU
time and peak RSS (getrusage of the child) are printed, and the ratio of clusterbench's wall time
to each peer's. Peak RSS at two file sizes shows whether memory grows with the file.

clusterbench's modules are compiled to bytecode first, as ``pip install`` does when it installs
the package: a source checkout run with PYTHONDONTWRITEBYTECODE set would otherwise compile
every module again at each start (0.1 s here), which no installed copy does.

    python benchmarks/import_speed.py                      # 200 MB, parse + store
    python benchmarks/import_speed.py --size-mb 50 --info-lines 400
    python benchmarks/import_speed.py --db postgresql://USER@HOST:PORT/DB   # also stored in PostgreSQL
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "nccl-tests"
COMPLETE_LOGS = ["superbench-nccl_allreduce.log", "superbench-nccl_alltoall.log", "superbench-nccl_broadcast.log",
                 "a3mega-h100-2node-all_reduce.txt", "seed-mi300x-rccl-all_reduce-8gpu.txt",
                 "seed-tensorwave-mi355x-4node-all_reduce.txt"]
# the command line before a log whose op only its file name says
COMMANDS = {"superbench-nccl_allreduce.log": "all_reduce_perf", "superbench-nccl_alltoall.log": "alltoall_perf",
            "superbench-nccl_broadcast.log": "broadcast_perf"}


def info_lines(n: int, run: int) -> str:
    # The format of NCCL INFO lines: "<host>:<pid>:<tid> [<cuda dev>] NCCL INFO <message>".
    msgs = ["Channel {c:02d}/32 :    0   1   2   3   4   5   6   7", "comm 0x7f5780001ca0 rank {r} nranks 8 cudaDev {r} "
            "nvmlDev {r} busId {r}000 commId 0x5a3e - Init COMPLETE", "NET/IB : Using [0]mlx5_{r}:1/IB ; OOB eth0:10.0.0.{r}<0>",
            "Ring {c:02d} : {r} -> {n} -> {p} via P2P/IPC/read", "Connected all rings, use ring PXN 0 GDR 1"]
    out = []
    for i in range(n):
        r = i % 8
        msg = msgs[i % len(msgs)].format(c=i % 32, r=r, n=(r + 1) % 8, p=(r + 7) % 8)
        out.append(f"gpu-node-{run % 64:02d}:{40000 + r}:{40100 + i % 97} [{r}] NCCL INFO {msg}\n")
    return "".join(out)


def build(path: Path, size_mb: float, info: int) -> int:
    logs = [(f"$ mpirun -np 8 ./build/{COMMANDS[name]} -b 8 -e 8G -f 2 -g 1\n" if name in COMMANDS else "")
            + (DATA / name).read_text() for name in COMPLETE_LOGS]
    target = int(size_mb * 1e6)
    written = runs = 0
    with path.open("w") as f:
        while written < target:
            for text in logs:
                chunk = (info_lines(info, runs) if info else "") + text
                f.write(chunk)
                written += len(chunk)
                runs += 1
                if written >= target:
                    break
    return runs


def measure(cmd: list[str]) -> dict[str, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({status}): {err.strip()[-500:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=200.0)
    ap.add_argument("--info-lines", type=int, default=0, help="NCCL INFO lines before each run (default 0)")
    ap.add_argument("--no-store", action="store_true", help="only parse (clusterbench import --dry-run)")
    ap.add_argument("--keep", action="store_true", help="keep the generated log and database")
    ap.add_argument("--db", default=None, metavar="URL",
                    help="also import into this (empty) PostgreSQL database, through COPY")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="cb-import-speed-"))
    log, small = tmp / "nccl-concatenated.log", tmp / "nccl-quarter.log"
    runs = build(log, args.size_mb, args.info_lines)
    build(small, args.size_mb / 4, args.info_lines)
    size = log.stat().st_size
    cb = [sys.executable, "-m", "clusterbench"]
    spec = importlib.util.find_spec("clusterbench")
    for where in (spec.submodule_search_locations or []) if spec else []:
        compileall.compile_dir(where, quiet=1)   # as pip install does
    rows: list[tuple[str, dict[str, float]]] = []
    try:
        rows.append(("wc -l (peer)", measure(["wc", "-l", str(log)])))
        rows.append(("python: for line in f: line.split() (peer)",
                     measure([sys.executable, "-c", "import sys\nn=0\nfor l in open(sys.argv[1]): n += len(l.split())",
                              str(log)])))
        rows.append(("clusterbench import --help (startup only)", measure(cb + ["import", "--help"])))
        rows.append((f"clusterbench import --dry-run ({size / 4e6:.0f} MB)", measure(cb + ["import", "--dry-run", str(small)])))
        rows.append(("clusterbench import --dry-run --jobs 1", measure(cb + ["import", "--dry-run", "--jobs", "1", str(log)])))
        rows.append(("clusterbench import --dry-run", measure(cb + ["import", "--dry-run", str(log)])))
        if not args.no_store:
            rows.append(("clusterbench import --jobs 1 (stored)",
                         measure(cb + ["import", "--jobs", "1", "--db", str(tmp / "r1.db"), str(log)])))
            rows.append(("clusterbench import (stored)", measure(cb + ["import", "--db", str(tmp / "r.db"), str(log)])))
        if args.db:
            rows.append(("clusterbench import (PostgreSQL)", measure(cb + ["import", "--db", args.db, str(log)])))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"# {size / 1e6:.1f} MB, {runs} concatenated nccl-tests runs, {args.info_lines} NCCL INFO lines per run;"
          f" {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    wc, py = rows[0][1]["wall"], rows[1][1]["wall"]
    print(f"{'command':<48s} {'wall s':>8s} {'cpu s':>8s} {'peak RSS MB':>12s} {'x wc':>8s} {'x python':>9s}")
    for label, r in rows:
        print(f"{label:<48s} {r['wall']:8.2f} {r['cpu']:8.2f} {r['rss_mb']:12.1f} {r['wall'] / wc:8.1f} {r['wall'] / py:9.1f}")


if __name__ == "__main__":
    main()
