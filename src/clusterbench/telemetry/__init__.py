"""Live telemetry during benchmarks: a background sampler of host CPU and GPU counters
(``sampler``), stored with the run in the store's ``telemetry`` table."""
