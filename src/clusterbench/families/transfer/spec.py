"""Copy bandwidth between host memory and GPUs (TransferBench's notation for endpoints)."""

from __future__ import annotations

from clusterbench.families.base import Metric

BENCHMARK = "transfer"
BANDWIDTH = Metric("bandwidth", "GB/s", headline=True, about="bytes / mean time per transfer")
TIME = Metric("time_us", "us", higher_is_better=False, about="time per transfer (imported)")
METRICS = (BANDWIDTH, TIME)
# Tests shown as SRC x DST matrices; any other test name is a config test of named transfers.
MATRIX_TESTS = ("h2d", "d2h", "p2p", "a2a", "h2h")
