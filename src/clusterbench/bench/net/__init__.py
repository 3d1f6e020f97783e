"""The network between hosts: a TCP bandwidth and latency matrix (``matrix``, ``tcp``) and\nperftest's ib_write_bw where RDMA devices exist (``perftest``)."""
