"""Live telemetry during benchmarks: a background sampler of host and GPU counters
(``sampler``), stored with the run in the store's ``telemetry`` table, and how reports plot it
(``TIMELINE``, a ``Figure`` spec like the families')."""

from clusterbench.families.base import Figure

# The series a report draws against time, one panel each (docs/metrics.md lists every metric).
TIMELINE = Figure("timeline", ("gpu_power", "gpu_temperature", "gpu_sm_clock", "gpu_utilization",
                               "cpu_utilization", "cpu_frequency"),
                  x="t", x_label="seconds since the run started", title="telemetry")
