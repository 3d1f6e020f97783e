"""``clusterbench net`` on every rank: TCP bandwidth and round-trip latency between hosts, as a
matrix over all host pairs (or a ring), one pair at a time so tests never share a link.

One rank per host takes part (the lowest rank on that host); when every rank is on the same
host (local ranks) the matrix is between ranks over loopback. Each rank runs a server; the
source of each pair connects to the destination's server while the others wait.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from clusterbench.bench.net import perftest, tcp
from clusterbench.bench.net.pairs import PAIR_MODES, endpoints_of, ordered_pairs, pair_budget
from clusterbench.errors import UsageError
from clusterbench.families.net.spec import BANDWIDTH, LATENCY, NET
from clusterbench.ranks.context import RankContext

MAX_DURATION = 86400.0           # seconds a bandwidth test may send for
# Shorter, and the first chunk each stream receives (up to 1 MiB, counted but not timed) is the test.
MIN_DURATION = 0.01
MAX_LATENCY_ITERS = 1_000_000    # every round trip's time is kept for the statistics
# perftest's own range for -q (MIN_QP_NUM..MAX_QP_NUM in its perftest_parameters.h, the same since
# 2013): a larger count would start ib_write_bw on every host only for each to refuse it. The
# device's own limit (max_qp) can be lower; only ib_write_bw on that host can say.
MAX_RDMA_QPS = 16384
_RDMA_DEVICE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")        # mlx5_0, rocep1s0f0, bnxt_re0
_RDMA_GPU = re.compile(r"--use_[a-z_]+(=[A-Za-z0-9_.:-]+)?")      # --use_cuda=0, --use_rocm=1


@dataclass(frozen=True)
class NetConfig:
    streams: int = 4
    duration: float = 2.0
    latency_iters: int = 200
    latency_bytes: int = 8
    pairs: str = "all"
    bandwidth: bool = True
    latency: bool = True
    rdma: bool = False
    rdma_qps: int = 1
    rdma_bidirectional: bool = False
    rdma_device: str | None = None
    rdma_gpu: str | None = None        # perftest GPU memory flag, e.g. "--use_cuda=0"

    def check(self, timeout: float | None = None) -> None:
        """The values alone, and with ``timeout`` (--timeout) whether each test fits in it."""
        if self.streams < 1 or self.streams > 128:
            raise UsageError(f"--streams must be 1..128, got {self.streams}")
        if not MIN_DURATION <= self.duration <= MAX_DURATION:   # nan and inf fail this too
            raise UsageError(f"--duration must be {MIN_DURATION:g}..{MAX_DURATION:g} s, got {self.duration:g}")
        if self.bandwidth and timeout is not None and self.duration > timeout / 2:
            raise UsageError(f"--duration {self.duration:g} s must be at most half of --timeout {timeout:g} s "
                             "(every rank waits on the pair being measured): raise --timeout")
        if not 1 <= self.latency_iters <= MAX_LATENCY_ITERS:
            raise UsageError(f"--latency-iters must be 1..{MAX_LATENCY_ITERS}, got {self.latency_iters}")
        if not 1 <= self.latency_bytes <= tcp.MAX_MESSAGE:
            raise UsageError(f"--latency-bytes must be 1..{tcp.MAX_MESSAGE}, got {self.latency_bytes}")
        if not 1 <= self.rdma_qps <= MAX_RDMA_QPS:
            raise UsageError(f"--rdma-qps must be 1..{MAX_RDMA_QPS} (perftest's range for ib_write_bw -q), "
                             f"got {self.rdma_qps}")
        if not (self.bandwidth or self.latency or self.rdma):
            raise UsageError("--no-bandwidth and --no-latency together leave nothing to measure "
                             "(add --rdma, or drop one)")
        if self.rdma_device is not None and not _RDMA_DEVICE.fullmatch(self.rdma_device):
            raise UsageError(f"--rdma-device {self.rdma_device!r} is not an RDMA device name (e.g. mlx5_0)")
        if self.rdma_gpu is not None and not _RDMA_GPU.fullmatch(self.rdma_gpu):
            raise UsageError(f"--rdma-gpu {self.rdma_gpu!r} is not a perftest GPU flag "
                             "(e.g. --use_cuda=0, --use_rocm=0)")
        if self.pairs not in PAIR_MODES:
            raise UsageError(f"--pairs must be one of {', '.join(PAIR_MODES)}")


def _label(names: list[str], idx: int, per: str, ranks: list[int]) -> str:
    return names[ranks[idx]] if per == "host" else f"{names[ranks[idx]]}/rank{ranks[idx]}"


def main(ctx: RankContext, cfg: NetConfig) -> None:
    import torch.distributed as dist

    server: tcp.Server | None = None
    entry: Any
    try:
        addr = tcp.local_address(ctx.env.master_addr) if ctx.env.launcher != "local" else "127.0.0.1"
        server = tcp.Server(addr)
        entry = (addr, server.port)
    except (OSError, tcp.NetTestError) as e:
        entry = str(e)   # told to every rank, so the run ends naming this host, not a hang
    try:
        table: list[Any] = [None] * ctx.world_size
        dist.all_gather_object(table, entry)
        ranks, per = endpoints_of(ctx.hosts)
        names = ctx.hosts
        broken = [i for i in range(len(ranks)) if isinstance(table[ranks[i]], str)]
        for i in broken:
            ctx.fail(f"net: {_label(names, i, per, ranks)} has no server for the tests: {table[ranks[i]]}")
        if broken:
            return
        if len(ranks) < 2:
            ctx.note("net: a single host (and rank): nothing to measure between hosts;"
                     " start one rank per host (launcher) or --np 2 for loopback", NET)
            return
        ctx.meta({"net_endpoints": [f"{_label(names, i, per, ranks)}={table[ranks[i]][0]}"
                                    for i in range(len(ranks))], "net_matrix": per})
        budget = pair_budget(ctx.options.timeout)
        if cfg.bandwidth:
            for i, j in ordered_pairs(len(ranks), cfg.pairs):
                src, dst = ranks[i], ranks[j]
                result: Any = None
                if ctx.rank == src:
                    try:
                        r = tcp.bandwidth(table[dst][0], table[dst][1], streams=cfg.streams,
                                          duration=cfg.duration, timeout=max(budget - cfg.duration, 0.1))
                        result = (r.bytes, r.seconds)
                    except (OSError, tcp.NetTestError) as e:
                        result = str(e)
                got: list[Any] = [None] * ctx.world_size
                dist.all_gather_object(got, result)
                ctx.progress()
                _emit_bw(ctx, cfg, got[src], _label(names, i, per, ranks),
                         _label(names, j, per, ranks), src, dst)
        if cfg.latency:
            for i, j in [p for p in ordered_pairs(len(ranks), cfg.pairs) if p[0] < p[1]]:
                src, dst = ranks[i], ranks[j]
                result = None
                if ctx.rank == src:
                    try:
                        lat = tcp.latency(table[dst][0], table[dst][1], iters=cfg.latency_iters,
                                          size=cfg.latency_bytes, timeout=budget, budget=budget)
                        result = {s: lat.stat(s) for s in ("min", "avg", "p50", "max")}
                    except (OSError, tcp.NetTestError) as e:
                        result = str(e)
                got = [None] * ctx.world_size
                dist.all_gather_object(got, result)
                ctx.progress()
                _emit_lat(ctx, cfg, got[src], _label(names, i, per, ranks),
                          _label(names, j, per, ranks), src, dst)
        if cfg.rdma:
            perftest.run_pairs(ctx, cfg, ranks, table, [_label(names, i, per, ranks) for i in range(len(ranks))])
    finally:
        if server is not None:
            server.close()


def _emit_bw(ctx: RankContext, cfg: NetConfig, result: Any, src: str, dst: str, sr: int, dr: int) -> None:
    if isinstance(result, str):
        ctx.fail(f"net bandwidth {src} -> {dst}: {result}")
        return
    nbytes, seconds = result
    params = {"src_host": src, "dst_host": dst, "src_rank": sr, "dst_rank": dr,
              "streams": cfg.streams, "bytes": int(nbytes), "protocol": "tcp"}
    ctx.record([BANDWIDTH(NET, nbytes / seconds / 1e9, params)])   # tcp.bandwidth: seconds > 0


def _emit_lat(ctx: RankContext, cfg: NetConfig, result: Any, src: str, dst: str, sr: int, dr: int) -> None:
    if isinstance(result, str):
        ctx.fail(f"net latency {src} <-> {dst}: {result}")
        return
    base = {"src_host": src, "dst_host": dst, "src_rank": sr, "dst_rank": dr, "streams": 1,
            "bytes": cfg.latency_bytes, "protocol": "tcp", "iterations": cfg.latency_iters}
    ctx.record([LATENCY(NET, float(v), {**base, "stat": s}) for s, v in result.items()])
