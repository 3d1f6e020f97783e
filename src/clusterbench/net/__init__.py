"""Host-to-host network tests between ranks: TCP bandwidth and round-trip latency, perftest RDMA."""
