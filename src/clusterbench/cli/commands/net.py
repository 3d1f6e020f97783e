"""``clusterbench net``: TCP bandwidth and round-trip latency between hosts (and RDMA with perftest)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import click

from clusterbench.bench.net import matrix
from clusterbench.bench.net.matrix import PAIR_MODES, NetConfig
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.bounds import POSITIVE, Count
from clusterbench.cli.options import RunOutput, rank_options, run_output
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job
from clusterbench.units import parse_rate, parse_size


@click.command("net")
@click.option("--streams", "-P", type=Count(high=None), default=4, show_default=True,
              help="Parallel TCP connections per bandwidth test (as iperf3 -P).")
@click.option("--duration", "-t", type=POSITIVE, default=2.0, show_default=True,
              help="Seconds each bandwidth test sends for (0.01 to half of --timeout: every rank waits on "
                   "the pair being measured).")
@click.option("--latency-iters", type=Count(high=None), default=200, show_default=True,
              help="Round trips timed per latency test.")
@click.option("--latency-bytes", default="8", show_default=True, metavar="SIZE",
              help="Ping-pong message size in bytes (K, M, G suffixes: 1K is 1024).")
@click.option("--pairs", type=click.Choice(PAIR_MODES), default="all", show_default=True,
              help="Every ordered host pair, or each host with its ring neighbours (large clusters).")
@click.option("--no-bandwidth", is_flag=True, help="Skip the bandwidth tests.")
@click.option("--no-latency", is_flag=True, help="Skip the latency tests.")
@click.option("--rdma", is_flag=True,
              help="Also run perftest ib_write_bw between hosts (skipped when /sys/class/infiniband is empty).")
@click.option("--rdma-qps", type=Count(high=None), default=1, show_default=True,
              help=f"ib_write_bw -q: queue pairs per test (1..{matrix.MAX_RDMA_QPS}, perftest's range).")
@click.option("--rdma-bidirectional", is_flag=True, help="ib_write_bw --bidirectional.")
@click.option("--rdma-device", default=None, help="ib_write_bw -d (default: the first device).")
@click.option("--rdma-gpu", default=None, metavar="FLAG",
              help="perftest GPU memory flag, e.g. --use_cuda=0 or --use_rocm=0.")
@click.option("--link-rate", default=None, metavar="RATE",
              help="The link's rate (e.g. 100Gbps, 1gbit): stored as the run's link_speed tag, so each "
                   "pair's bandwidth is judged against it (efficiency) now and whenever the run is read.")
@rank_options
@run_output
def net(np: int | None, ranks: RankOptions, out: RunOutput, **kw: Any) -> int:
    """Network between hosts: TCP bandwidth (several streams) and round-trip latency, as a
    matrix over all host pairs. Start one rank per host with a launcher (torchrun, srun,
    mpirun, or `clusterbench launch`); with local ranks it measures loopback."""
    cfg = _config(kw, ranks.timeout)
    if kw["link_rate"] is not None:
        out = dataclasses.replace(out, tags={**(out.tags or {}), "link_speed": kw["link_rate"]})
    if ranks.device == "auto":  # sockets only: never take a GPU for this
        ranks = dataclasses.replace(ranks, device="cpu", backend="gloo")
    return run_benchmark_command(Job(matrix.main, cfg, ranks, np=np), "net", out)


def _config(kw: Mapping[str, Any], timeout: float | None) -> NetConfig:
    cfg = NetConfig(streams=kw["streams"], duration=kw["duration"], latency_iters=kw["latency_iters"],
                    latency_bytes=parse_size(kw["latency_bytes"], "--latency-bytes"), pairs=kw["pairs"],
                    bandwidth=not kw["no_bandwidth"],
                    latency=not kw["no_latency"], rdma=kw["rdma"], rdma_qps=kw["rdma_qps"],
                    rdma_bidirectional=kw["rdma_bidirectional"], rdma_device=kw["rdma_device"],
                    rdma_gpu=kw["rdma_gpu"])
    cfg.check(timeout)
    if kw["link_rate"] is not None:   # given empty, it is refused, not dropped
        parse_rate(kw["link_rate"])  # a bad rate is refused before any rank starts
    return cfg


def check_params(params: Mapping[str, Any]) -> None:
    """The values of a parsed ``net`` line checked as the command checks them, without running it
    (cli/argv_check.py: a sweep's test, a qualify step)."""
    _config(params, params.get("timeout"))


commands = [net]
