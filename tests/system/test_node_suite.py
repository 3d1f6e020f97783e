"""System tests (node suite): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

from node_doubles import NODE_TARGETS

from clusterbench.bench import suite
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Failure, Rows


def test_two_cpu_ranks_report_the_host_once():
    from clusterbench.bench.gemm.main import GemmConfig
    from clusterbench.bench.stream.main import StreamConfig
    from clusterbench.bench.suite import SuiteEntry

    small = [SuiteEntry("stream", NODE_TARGETS[0], cpu=StreamConfig(sizes=(4096,), numtimes=3)),
             SuiteEntry("gemm", NODE_TARGETS[1], cpu=GemmConfig(
                 m=32, n=32, k=32, dtypes=("fp32",), iterations=1, samples=2))]
    events = []
    outcome = execute(Job(suite.main, small, RankOptions(device="cpu"), np=2), events.append)
    assert outcome.status == "complete", outcome.errors
    assert not [e for e in events if isinstance(e, Failure)]
    rows = [m for e in events if isinstance(e, Rows) for m in e.measurements]
    assert {m.param("device") for m in rows} == {"cpu"}  # no per-rank duplicates, no aggregate
    assert len([m for m in rows if m.benchmark == "stream" and m.metric == "bandwidth"]) == 6
    assert len([m for m in rows if m.benchmark == "gemm" and m.metric == "tflops"]) == 2
