"""What the parsers operators already run on nccl-tests output read from clusterbench's tables.

Two third-party parsers, loaded unmodified from the paths given (they are not part of this
project; fetch them from their repositories):

- AWS's ``nccl_to_csv.py`` (aws-samples/awsome-distributed-training,
  ``micro-benchmarks/nccl-tests/nccl_to_csv.py``): run as its own script on a table file, in a
  scratch directory (it writes its CSV files there); it prints ``Found N performance data points``.
- SuperBench's nccl-bw parser (microsoft/superbenchmark,
  ``superbench/benchmarks/micro_benchmarks/cuda_nccl_bw_performance.py``): its
  ``CudaNcclBwBenchmark._process_raw_result`` run on the table in both modes (out-of-place, the
  default, and ``--in_place``). The module imports a few names of the superbench package; this
  script puts minimal stand-ins for them (a logger, a registry, a base class) in ``sys.modules``,
  so the parsing method itself runs as published.

For each op a table is made with ``clusterbench coll OP`` on CPU ranks (``--np 2 --device cpu``,
small sizes), or read from ``--tables DIR`` (``OP.txt``). Printed: per op, the rows the table
has, the rows each parser read (SuperBench: results added for nonzero sizes; it skips size 0 as
it does for nccl-tests' own output) and whether it said the format is invalid.

    python benchmarks/nccl_parsers.py --aws PATH/nccl_to_csv.py --superbench PATH/cuda_nccl_bw_performance.py \\
        [--tables DIR] [--keep DIR] [--json-out FILE]

Which clusterbench makes the tables is the one ``python -m clusterbench`` imports (PYTHONPATH).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import types
from typing import Any

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv")
SB_OPERATION = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter",
                "broadcast": "broadcast", "reduce": "reduce", "alltoall": "alltoall", "sendrecv": "sendrecv"}


def make_table(op: str, timeout: float = 600) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-m", "clusterbench", "coll", op, "--np", "2", "--device", "cpu", "-b", "8",
                "-e", "256K", "-f", "4", "-n", "2", "-w", "1", "--telemetry-interval", "0",
                "--db", os.path.join(tmp, "r.db")]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise SystemExit(f"clusterbench coll {op} failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    return p.stdout


def table_rows(text: str) -> int:
    """Lines between the column header's units line and the footer that are not comments."""
    rows, inside = 0, False
    for line in text.splitlines():
        if "(elements)" in line:
            inside = True
        elif "Out of bounds values" in line:
            inside = False
        elif inside and line.strip() and not line.lstrip().startswith("#"):
            rows += 1
    return rows


def run_aws(script: str, table_file: str) -> int:
    with tempfile.TemporaryDirectory() as cwd:
        p = subprocess.run([sys.executable, os.path.abspath(script), os.path.abspath(table_file)], cwd=cwd,
                           capture_output=True, text=True, timeout=120)
    m = re.search(r"Found (\d+) performance data points", p.stdout)
    return int(m.group(1)) if m else 0


# -- SuperBench: its parsing method, in stand-ins for the package it imports ---------------------

class _Result:
    def __init__(self) -> None:
        self.results: list[tuple[str, float]] = []

    def add_raw_data(self, *a: Any, **k: Any) -> None:
        pass

    def add_result(self, name: str, value: float) -> None:
        self.results.append((name, value))

    def set_return_code(self, code: Any) -> None:
        pass


class _Base:
    def __init__(self, name: str, parameters: str = "") -> None:
        self._name = name


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def load_superbench(path: str) -> tuple[Any, _Errors]:
    logger = logging.getLogger("superbench-parser")
    logger.propagate = False
    errors = _Errors()
    logger.addHandler(errors)
    stand_ins = {
        "superbench": types.ModuleType("superbench"),
        "superbench.common": types.ModuleType("superbench.common"),
        "superbench.common.utils": types.SimpleNamespace(logger=logger),
        "superbench.benchmarks": types.SimpleNamespace(
            BenchmarkRegistry=types.SimpleNamespace(register_benchmark=lambda *a, **k: None),
            Platform=types.SimpleNamespace(CUDA="CUDA", ROCM="ROCM"),
            ReturnCode=types.SimpleNamespace(INVALID_ARGUMENT=1)),
        "superbench.benchmarks.micro_benchmarks": types.SimpleNamespace(MicroBenchmarkWithInvoke=_Base),
    }
    sys.modules.update(stand_ins)   # type: ignore[arg-type]
    spec = importlib.util.spec_from_file_location("superbench_nccl_bw", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, errors


def run_superbench(module: Any, errors: _Errors, op: str, text: str, in_place: bool) -> tuple[int, bool]:
    bench = module.CudaNcclBwBenchmark("nccl-bw")
    bench._args = argparse.Namespace(operation=SB_OPERATION[op], in_place=in_place, log_raw_data=False)
    bench._result = _Result()
    bench._curr_run_index = 0
    errors.lines.clear()
    os.environ.pop("OMPI_COMM_WORLD_RANK", None)
    ok = bool(bench._process_raw_result(0, text))
    return sum(1 for name, _ in bench._result.results if name.endswith("_busbw")), ok and not errors.lines


def nonzero_rows(text: str) -> int:
    return sum(1 for line in text.splitlines() if re.match(r"\s*[1-9]\d*\s", line) and "#" not in line[:1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aws", required=True, help="path of nccl_to_csv.py")
    ap.add_argument("--superbench", required=True, help="path of cuda_nccl_bw_performance.py")
    ap.add_argument("--tables", help="read OP.txt from this folder instead of running clusterbench")
    ap.add_argument("--keep", help="write each table made to this folder as OP.txt")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--json-out")
    a = ap.parse_args()
    for path in (a.aws, a.superbench):
        if not os.path.isfile(path):
            ap.error(f"{path}: no such file")
    module, errors = load_superbench(a.superbench)
    results = []
    print(f"{'op':<15} {'rows':>5} {'aws':>5} {'sb out':>7} {'sb in':>7}  (SuperBench counts rows of nonzero size)")
    for op in [o.strip() for o in a.ops.split(",") if o.strip()]:
        if a.tables:
            with open(os.path.join(a.tables, f"{op}.txt"), encoding="utf-8") as f:
                text = f.read()
        else:
            text = make_table(op)
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
            with open(os.path.join(a.keep, f"{op}.txt"), "w", encoding="utf-8") as f:
                f.write(text)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(text)
        try:
            aws = run_aws(a.aws, f.name)
        finally:
            os.unlink(f.name)
        sb_out, ok_out = run_superbench(module, errors, op, text, in_place=False)
        sb_in, ok_in = run_superbench(module, errors, op, text, in_place=True)
        row = {"op": op, "rows": table_rows(text), "nonzero_rows": nonzero_rows(text), "aws": aws,
               "superbench_out": sb_out, "superbench_out_valid": ok_out,
               "superbench_in": sb_in, "superbench_in_valid": ok_in}
        results.append(row)
        print(f"{op:<15} {row['rows']:>5} {aws:>5} {sb_out:>5}{'' if ok_out else ' !'}{'  ' if ok_out else ''} "
              f"{sb_in:>5}{'' if ok_in else ' !'}{'  ' if ok_in else ''}   (nonzero rows {row['nonzero_rows']}; "
              "! = 'result format is invalid')", flush=True)
    if a.json_out:
        with open(a.json_out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
