"""The default suite's stream and gemm steps: small on CPU, and correct inside a multi-rank job
(the suite holds 2 CPU ranks; the host is one device, so only rank 0 measures)."""

from __future__ import annotations

from clusterbench.bench import suite
from clusterbench.bench.gemm import main as gemm_main
from clusterbench.bench.stream import main as stream_main
from clusterbench.bench.suite import SUITE
from clusterbench.families.gemm import spec as gemm_spec
from clusterbench.families.stream import spec as stream_spec
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Failure, Rows

NODE_TARGETS = (stream_main.main, gemm_main.main)


def _entries():
    return [e for e in SUITE if e.target in NODE_TARGETS]


def test_suite_has_small_cpu_steps_and_full_gpu_steps():
    entries = {e.target: e for e in _entries()}
    assert set(entries) == set(NODE_TARGETS)
    stream = entries[NODE_TARGETS[0]]
    assert all(stream_spec.footprint(n, 8) <= 256 << 20 for n in stream.cpu.sizes)
    assert stream.gpu.device_type == "cuda" and stream.gpu.devices == ()
    gemm = entries[NODE_TARGETS[1]]
    assert gemm_spec.flops(gemm.cpu.m, gemm.cpu.n, gemm.cpu.k) <= 2 * 1024**3
    assert not gemm.cpu.strict_size and not stream.cpu.strict_size


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


def test_run_help_says_it_runs_collectives_stream_and_gemm():
    from click.testing import CliRunner

    from clusterbench.bench.collectives import rank as coll_rank
    from clusterbench.cli import cli

    # what the suite runs...
    assert [e.target for e in SUITE] == [coll_rank.main, stream_main.main, gemm_main.main]
    # ...is what the help says, in the command list too
    full = CliRunner().invoke(cli, ["run", "--help"]).output
    assert all(word in full for word in ("collective", "stream", "GEMM", "all_reduce", "Triad"))
    listing = CliRunner().invoke(cli, ["--help"]).output
    line = next(x for x in listing.splitlines() if x.strip().startswith("run "))
    assert "Collectives" in line and "stream" in line and "GEMM" in line
