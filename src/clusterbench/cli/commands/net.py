"""``clusterbench net``: TCP bandwidth and round-trip latency between hosts (and RDMA with perftest)."""

from __future__ import annotations

import dataclasses

import click

from clusterbench.bench.net import matrix
from clusterbench.bench.net.matrix import PAIR_MODES, NetConfig
from clusterbench.cli.bench import run_benchmark_command
from clusterbench.cli.bounds import POSITIVE
from clusterbench.cli.options import RunOutput, rank_options, run_output
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job
from clusterbench.units import parse_rate


@click.command("net")
@click.option("--streams", "-P", type=int, default=4, show_default=True,
              help="Parallel TCP connections per bandwidth test (as iperf3 -P).")
@click.option("--duration", "-t", type=POSITIVE, default=2.0, show_default=True,
              help="Seconds each bandwidth test sends for.")
@click.option("--latency-iters", type=int, default=200, show_default=True,
              help="Round trips timed per latency test.")
@click.option("--latency-bytes", type=int, default=8, show_default=True, help="Ping-pong message size.")
@click.option("--pairs", type=click.Choice(PAIR_MODES), default="all", show_default=True,
              help="Every ordered host pair, or each host with its ring neighbours (large clusters).")
@click.option("--no-bandwidth", is_flag=True, help="Skip the bandwidth tests.")
@click.option("--no-latency", is_flag=True, help="Skip the latency tests.")
@click.option("--rdma", is_flag=True,
              help="Also run perftest ib_write_bw between hosts (skipped when /sys/class/infiniband is empty).")
@click.option("--rdma-qps", type=int, default=1, show_default=True, help="ib_write_bw -q.")
@click.option("--rdma-bidirectional", is_flag=True, help="ib_write_bw --bidirectional.")
@click.option("--rdma-device", default=None, help="ib_write_bw -d (default: the first device).")
@click.option("--rdma-gpu", default=None, metavar="FLAG",
              help="perftest GPU memory flag, e.g. --use_cuda=0 or --use_rocm=0.")
@click.option("--link-rate", default=None, metavar="RATE",
              help="The link's rate (e.g. 100Gbps, 1gbit): stored as the run's link_speed tag, so each "
                   "pair's bandwidth is judged against it (efficiency) now and whenever the run is read.")
@rank_options
@run_output
def net(streams: int, duration: float, latency_iters: int, latency_bytes: int, pairs: str,
        no_bandwidth: bool, no_latency: bool, rdma: bool, rdma_qps: int, rdma_bidirectional: bool,
        rdma_device: str | None, rdma_gpu: str | None, link_rate: str | None, np: int | None,
        ranks: RankOptions, out: RunOutput) -> int:
    """Network between hosts: TCP bandwidth (several streams) and round-trip latency, as a
    matrix over all host pairs. Start one rank per host with a launcher (torchrun, srun,
    mpirun, or `clusterbench launch`); with local ranks it measures loopback."""
    cfg = NetConfig(streams=streams, duration=duration, latency_iters=latency_iters,
                    latency_bytes=latency_bytes, pairs=pairs, bandwidth=not no_bandwidth,
                    latency=not no_latency, rdma=rdma, rdma_qps=rdma_qps,
                    rdma_bidirectional=rdma_bidirectional, rdma_device=rdma_device, rdma_gpu=rdma_gpu)
    cfg.check()
    if link_rate:
        parse_rate(link_rate)  # a bad rate is refused before any rank starts
        out = dataclasses.replace(out, tags={**(out.tags or {}), "link_speed": link_rate})
    if ranks.device == "auto":  # sockets only: never take a GPU for this
        ranks = dataclasses.replace(ranks, device="cpu", backend="gloo")
    return run_benchmark_command(Job(matrix.main, cfg, ranks, np=np), "net", out)


commands = [net]
