"""Shared helpers for the judge tests: run the CLI in-process, build synthetic stores."""

from __future__ import annotations

import contextlib
import io
import json
import random

import pytest

from clusterbench.cli import main
from clusterbench.judge.profile_yaml import load_yaml
from clusterbench.judge.profiles import parse_profile
from clusterbench.judge.select import Row
from clusterbench.judge.validate import evaluate
from clusterbench.records import Measurement, Run
from clusterbench.store import Store


def cli(capsys, *argv: object) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def run_cli(*argv: object) -> tuple[int, str, str]:
    """A command in-process without capsys (usable from module-scoped fixtures): exit code,
    standard output, standard error."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in argv])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return code, out.getvalue(), err.getvalue()


def json_lines(text: str) -> list[dict]:
    """The JSON lines of a command's output, each checked against the published schema."""
    from json_schema import check_lines

    return check_lines("\n".join(line for line in text.splitlines() if line.startswith("{")))


def coll_rows(scale: float, rng: random.Random, noise_small: float = 0.3, noise_large: float = 0.01,
              host: str | None = None) -> list[Measurement]:
    """all_reduce busbw/algbw rows 8 B..8 GiB: a saturating curve times ``scale``."""
    ms = []
    for p in range(3, 34, 2):
        b = 1 << p
        base = 300 * b / (b + 2 ** 22)
        noise = noise_small if b < 65536 else noise_large
        for pl in ("out", "in"):
            v = abs(base * scale * (1 + rng.gauss(0, noise))) + 1e-3
            params = {"bytes": b, "count": b // 4, "dtype": "float", "redop": "sum", "root": -1,
                      "placement": pl, "ranks": 16}
            if host:
                params["host"] = host
            ms.append(Measurement("all_reduce", "busbw", v, "GB/s", params))
            ms.append(Measurement("all_reduce", "algbw", v * 16 / 30, "GB/s", dict(params)))
    return ms


def save(db: str, ms: list[Measurement], **kw) -> int:
    run = Run(kw.pop("benchmark", "coll"), hosts=kw.pop("hosts", ["node1", "node2"]), ranks=kw.pop("ranks", 16),
              tags=kw.pop("tags", {}), **kw)
    with Store.open(db) as s:
        return s.save_run(run, ms)


SEED_LOGS = [
    ("nccl-tests", "seed-mi300x-rccl-all_reduce-8gpu.txt"),
    ("transferbench", "seed-mi300x-a2a.txt"),
    ("transferbench", "seed-mi300x-p2p.txt"),
    ("transferbench", "seed-mi300x-example-cfg.txt"),
    ("rocblas-bench", "seed-mi300x-sgemm-4000.txt"),
    ("rocblas-bench", "seed-mi300x-gemm_strided_batched_ex-bf16.txt"),
    ("rocblas-bench", "seed-mi300x-gemm_strided_batched_ex-int8.txt"),
    ("babelstream", "seed-mi300x-hip-8gpu-mpi.txt"),
]


def save_seed_logs(db: str) -> str:
    """The MI300X guide's own tool outputs (SEED_LOGS, tests/data) imported into ``db`` with
    tag seed=mi300x."""
    from paths import DATA

    from clusterbench.ingest import parse_text

    with Store.open(db) as store:
        for tool, fname in SEED_LOGS:
            for imported in parse_text((DATA / tool / fname).read_text(), tool=tool, name=fname):
                imported.run.tags["seed"] = "mi300x"
                store.save_run(imported.run, imported.measurements)
    return db

# What Tables 1-6 imply for the outputs printed next to them. Test 2 of Table 3 fails by 0.1%:
# the guide's example shows 48.349 GB/s against a 48.4 GB/s minimum (it notes its examples are
# not the runs behind the tables).
EXPECTED = {
    "TransferBench a2a average bandwidth": ("pass", 35.776),
    "TransferBench p2p average unidirectional copy GPU->GPU": ("pass", 48.44),
    "TransferBench p2p average bidirectional copy GPU<->GPU": ("pass", 46.24),
    "TransferBench config Test 1 (GFX G0->G1, 4 CUs)": ("pass", 47.774),
    "TransferBench config Test 2 (DMA G0->G1)": ("fail", 48.349),
    "TransferBench config Test 3, 0 to 1": ("pass", 32.809),
    "TransferBench config Test 3, 1 to 0": ("pass", 39.603),
    "TransferBench config Test 4 (memset G0)": ("pass", 1274.598),
    "TransferBench config Test 6 (broadcast G0 -> G0,G1)": ("pass", 48.933),
    "RCCL all_reduce in-place busbw at 8 GiB": ("pass", 315.84),
    "rocBLAS FP32 GEMM 4000x4000x4000": ("pass", 97.1906),
    "rocBLAS strided batched BF16 GEMM 1024x2048x512, batch 5": ("pass", 159.783),
    "rocBLAS strided batched INT8 GEMM 1024x2048x512, batch 5": ("pass", 177.478),
    "BabelStream Copy": ("pass", 4255.995148),
    "BabelStream Mul": ("pass", 4113.642067),
    "BabelStream Add": ("pass", 3948.620619),
    "BabelStream Triad": ("pass", 3947.212603),
    "BabelStream Dot": ("pass", 3878.410495),
}


def _profile(text: str):
    return parse_profile(load_yaml(text), "p.yaml")


def _one(rows: list[Row], **crit):
    """The outcome of one criterion written as a flow mapping."""
    crit.setdefault("name", "c")
    return evaluate(_profile("name: t\ncriteria:\n  - " + json.dumps(crit) + "\n"), rows)[0]


C = "  - {name: c, benchmark: all_reduce, metric: busbw, op: '>=', value: 1"


def _crit(**kw: object) -> str:
    return "name: t\ncriteria:\n  - " + json.dumps({"name": "c", **kw}) + "\n"


def _rows(*values_units: tuple[float, str]) -> list[Row]:
    return [Row(Run(benchmark="stream", id=i + 1), Measurement("stream", "bandwidth", v, u, {"kernel": "Triad"}))
            for i, (v, u) in enumerate(values_units)]
