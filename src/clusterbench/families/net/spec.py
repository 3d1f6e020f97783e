"""Networks between hosts: TCP bandwidth and latency (native ``net`` and imported iperf3), RDMA
(perftest's ib_* tools) and MPI point-to-point and collectives (OSU micro-benchmarks)."""

from __future__ import annotations

from clusterbench.families.base import LEVEL, Metric

NET = "net"
BANDWIDTH = Metric("bandwidth", "GB/s", headline=True, link_bound=True,
                   about="bytes received / time, all streams")
LATENCY = Metric("latency_us", "us", higher_is_better=False,
                 about="latency with stat: the round trip for native net, one way for perftest and OSU")
EFFICIENCY = Metric("efficiency", "", about="bandwidth / the link rate given (--link-rate)")
RETRANSMITS = Metric("retransmits", "", higher_is_better=False, judged=False, about="TCP retransmits (iperf3)")
# Jitter is how much arrival times vary, not how long anything took: a change is "higher"/"lower".
JITTER = Metric("jitter_us", "us", higher_is_better=False, about="UDP jitter (iperf3)", wording=LEVEL)
LOST = Metric("lost_percent", "%", higher_is_better=False, about="UDP datagrams lost (iperf3)")
NET_METRICS = (BANDWIDTH, LATENCY, EFFICIENCY, RETRANSMITS, JITTER, LOST)

# perftest: one benchmark per tool, named as the tool is.
RDMA_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw", "ib_write_lat", "ib_read_lat",
              "ib_send_lat", "ib_atomic_lat")
BW_PEAK = Metric("bw_peak", "GB/s", about="perftest's BW peak")
BW_AVG = Metric("bw_avg", "GB/s", headline=True, about="perftest's BW average")
MSG_RATE = Metric("msg_rate", "Mpps", about="messages per second")
RDMA_METRICS = (BW_PEAK, BW_AVG, MSG_RATE, LATENCY)

# OSU micro-benchmarks: named by their program (osu_bw, osu_latency, osu_allreduce, ...).
OSU_PREFIX = "osu_"
OSU_BANDWIDTH = Metric("bandwidth", "GB/s", headline=True, about="OSU's MB/s (1e6 B/s) / 1000")
OSU_METRICS = (OSU_BANDWIDTH, MSG_RATE, LATENCY)
