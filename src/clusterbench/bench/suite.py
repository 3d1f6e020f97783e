"""The default suite: what ``clusterbench run`` measures on this machine, one step after another
inside ONE job (one process group, one stored run).

Add a step by appending a ``SuiteEntry`` to ``SUITE``: a per-rank main (called as
``fn(ctx, config)`` on every rank, like any benchmark) and its config on CPU ranks and, where it
differs, on GPU ranks. Steps run in list order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clusterbench.bench.collectives import rank as collectives
from clusterbench.bench.collectives.config import CollConfig
from clusterbench.bench.gemm import main as gemm
from clusterbench.bench.gemm.main import GemmConfig
from clusterbench.bench.stream import main as stream
from clusterbench.bench.stream.main import StreamConfig
from clusterbench.families.collectives.spec import OPS
from clusterbench.ranks.context import RankContext


@dataclass(frozen=True)
class SuiteEntry:
    name: str          # what the step measures, for people reading the list
    target: Callable[[RankContext, Any], None]   # run on every rank as fn(ctx, config)
    cpu: Any           # its config on CPU ranks
    gpu: Any = None    # its config on GPU ranks (None: the CPU config)

    def config_for(self, device_type: str) -> Any:
        return self.gpu if device_type == "cuda" and self.gpu is not None else self.cpu



# CPU ranks (gloo over loopback): a short sweep, the whole suite in about 20 s on 2 cores.
# GPUs: nccl-tests' usual -b 8 -e 256M -f 2 sweep.
SUITE: list[SuiteEntry] = [
    SuiteEntry(
        name="collectives",
        target=collectives.main,
        cpu=CollConfig(ops=OPS, minbytes=8, maxbytes=1 << 20, stepfactor=8, iters=20, warmup_iters=5),
        gpu=CollConfig(ops=OPS, minbytes=8, maxbytes=256 << 20, stepfactor=2, iters=20, warmup_iters=5),
    ),
    # Node benchmarks: every GPU at once (rank 0 alone on CPU); about 3 s on 2 cores.
    SuiteEntry(
        name="memory bandwidth (stream)",
        target=stream.main,
        cpu=StreamConfig(sizes=(1 << 22,), numtimes=10, strict_size=False),
        gpu=StreamConfig(sizes=(1 << 27,), numtimes=100, device_type="cuda", strict_size=False),
    ),
    SuiteEntry(
        name="gemm",
        target=gemm.main,
        cpu=GemmConfig(m=512, n=512, k=512, dtypes=("fp32", "bf16"), iterations=5, samples=3,
                       strict_size=False),
        gpu=GemmConfig(m=8192, n=8192, k=8192, dtypes=("fp32", "tf32", "bf16", "fp16", "fp8_e4m3"),
                       trans_b="T", device_type="cuda", strict_size=False),
    ),
]


def main(ctx: RankContext, entries: list[SuiteEntry]) -> None:
    for entry in entries:
        entry.target(ctx, entry.config_for(ctx.device_type))
        ctx.progress()
