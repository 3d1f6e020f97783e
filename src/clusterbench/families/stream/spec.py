"""Memory bandwidth (BabelStream's kernels): the metrics native runs and imported logs record."""

from __future__ import annotations

from clusterbench.families.base import Metric

BENCHMARK = "stream"
BANDWIDTH = Metric("bandwidth", "GB/s", headline=True, peak="memory_bandwidth",
                   about="bytes moved / minimum time")
TIME = Metric("time_us", "us", higher_is_better=False, spread="stat",
              about="time per kernel call, with stat min/max/avg (and median/stddev/mad/first natively)")
METRICS = (BANDWIDTH, TIME)
