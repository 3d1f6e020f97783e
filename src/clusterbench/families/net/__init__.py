"""Networks between hosts: ``net`` (TCP, native and iperf3), RDMA (perftest), OSU."""

from __future__ import annotations

from clusterbench.families.base import Family, HeadlineRows
from clusterbench.families.net.spec import (
    NET,
    NET_METRICS,
    OSU_METRICS,
    OSU_PREFIX,
    RDMA_METRICS,
    RDMA_TOOLS,
)
from clusterbench.families.net.table import NetTable

NET_FAMILY = Family(
    name="net",
    title="Network",
    benchmarks=(NET,),
    metrics=NET_METRICS,
    row_params=("src_host", "dst_host", "streams", "protocol", "stat"),
    renderer=lambda _benchmark: NetTable(),
    commands=("net",),
    link_op="sendrecv",   # point to point: the optimum is the link itself (bus factor 1)
)
RDMA_FAMILY = Family(
    name="rdma",
    title="RDMA (perftest)",
    benchmarks=RDMA_TOOLS,
    metrics=RDMA_METRICS,
    row_params=("bytes", "qps", "device", "bidirectional", "stat"),
    headline_rows=HeadlineRows(largest=("bytes",)),
)
OSU_FAMILY = Family(
    name="osu",
    title="MPI (OSU micro-benchmarks)",
    benchmarks=(),
    prefixes=(OSU_PREFIX,),
    metrics=OSU_METRICS,
    row_params=("bytes", "buffers", "stat"),
    headline_rows=HeadlineRows(largest=("bytes",)),
)
