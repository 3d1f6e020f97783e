"""System tests (node gemm): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import node_doubles

from clusterbench.bench.gemm import main as gemm_main
from clusterbench.bench.gemm.main import GemmConfig
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Failure


def test_wrong_kernel_fails_the_run():
    events = []
    cfg = GemmConfig(m=32, n=32, k=32, dtypes=("fp32",), iterations=2, samples=2,
                     kernels=node_doubles.WrongGemm)
    execute(Job(gemm_main.main, cfg, RankOptions(device="cpu"), np=1), events.append)
    fails = [e.reason for e in events if isinstance(e, Failure)]
    assert fails and fails[0].startswith("gemm check failed for fp32 on cpu")
