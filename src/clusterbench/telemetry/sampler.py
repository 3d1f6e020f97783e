"""A background thread that samples the host and its GPUs while a benchmark runs.

One sampler per host (the driver starts it on each host's local rank 0). Each tick reads
psutil (CPU utilisation and frequency, memory used) and, where NVML or AMD SMI initialised,
per-GPU power, temperature, clocks, utilisation, memory used and throttling. A tick costs well
under a millisecond of CPU per GPU and the thread sleeps in between, so at the default 1 s
interval the benchmark does not notice (``benchmarks/telemetry_overhead.py`` measures it).

Samples are ``records.TelemetrySample`` with ``t`` in Unix seconds, so series from several hosts
line up on one time axis.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from clusterbench.records import TelemetrySample

DEFAULT_INTERVAL_S = 1.0
# A long run at 1 s with 8 GPUs makes ~60 samples a second; cap memory for runs of many hours.
MAX_SAMPLES = 2_000_000

Reading = tuple[str, str, float, str]           # (device, metric, value, unit)
Source = Callable[[], list[Reading]]


class CpuSource:
    """Host CPU utilisation (% of all CPUs since the last tick), frequency (MHz), memory used."""

    def __init__(self) -> None:
        import psutil

        self.psutil = psutil
        psutil.cpu_percent(interval=None)  # first call only sets the baseline
        self._last = time.monotonic()

    def __call__(self) -> list[Reading]:
        ps = self.psutil
        out: list[Reading] = []
        now = time.monotonic()
        if now - self._last >= 0.02:  # over a shorter window the percentage is noise
            out.append(("", "cpu_utilization", float(ps.cpu_percent(interval=None)), "%"))
            self._last = now
        try:
            freq = ps.cpu_freq()
        except (OSError, NotImplementedError, AttributeError):
            freq = None
        if freq is not None and freq.current:
            out.append(("", "cpu_frequency", float(freq.current), "MHz"))
        out.append(("", "host_memory_used", float(ps.virtual_memory().used), "bytes"))
        return out


class GpuSource:
    """Per-device readings from a vendor library (``envinfo.gpulib.Nvml`` or ``AmdSmi``)."""

    def __init__(self, lib: object, prefix: str) -> None:
        self.lib = lib
        self.prefix = prefix

    def __call__(self) -> list[Reading]:
        return [(f"{self.prefix}{i}", metric, value, unit)
                for i, metric, value, unit in self.lib.sample()]  # type: ignore[attr-defined]


def default_sources(gpus: bool = True) -> list[Source]:
    sources: list[Source] = [CpuSource()]
    if gpus:
        from clusterbench.envinfo import gpulib

        # "gpu<N>": N is the management library's index (nvidia-smi / amd-smi numbering), which
        # covers every GPU of the host, not only those this process sees.
        sources += [GpuSource(lib, "gpu") for lib in gpulib.libraries()]
    return sources


class Sampler:
    """``start()``, let the benchmark run, ``stop()`` returns the samples in time order."""

    def __init__(self, interval: float = DEFAULT_INTERVAL_S, host: str = "",
                 sources: list[Source] | None = None) -> None:
        if interval <= 0:
            raise ValueError("telemetry interval must be positive")
        self.interval = interval
        self.host = host
        self.sources = sources if sources is not None else default_sources()
        self.samples: list[TelemetrySample] = []
        self.errors: dict[str, str] = {}
        self.cpu_s = 0.0  # CPU time the ticks took: the sampler's whole cost to the benchmark
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="clusterbench-telemetry", daemon=True)

    def start(self) -> Sampler:
        self._tick()  # a first sample at t0, so even a short benchmark has a reading
        self._thread.start()
        return self

    def stop(self) -> list[TelemetrySample]:
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join(5.0)
            self._tick()  # and one at the end
        return list(self.samples)

    def _tick(self) -> None:
        c0 = time.thread_time()
        try:
            self._read(time.time())
        finally:
            self.cpu_s += time.thread_time() - c0

    def _read(self, t: float) -> None:
        for source in self.sources:
            try:
                readings = source()
            except Exception as e:  # noqa: BLE001 - one failing source must not stop the others
                self.errors[type(source).__name__] = f"{type(e).__name__}: {e}"
                continue
            if len(self.samples) + len(readings) > MAX_SAMPLES:
                return
            self.samples += [TelemetrySample(t, metric, value, unit, self.host, device)
                             for device, metric, value, unit in readings]

    def _loop(self) -> None:
        # Ticks on a fixed grid from the start; a slow tick shortens the next wait, never drifts.
        start = time.monotonic()
        n = 1
        while not self._stop.wait(max(0.0, start + n * self.interval - time.monotonic())):
            self._tick()
            n = next_slot(start, self.interval, n, time.monotonic())


def next_slot(start: float, interval: float, last: int, now: float) -> int:
    """The grid slot after ``last`` that is not yet past at ``now``. Slots a slow tick (or a
    suspended machine) overran are skipped, not caught up back to back: a burst of samples taken
    at one moment would weigh that moment as many times in the run's telemetry summary."""
    return max(last + 1, math.ceil((now - start) / interval))


def summarize(samples: list[TelemetrySample]) -> dict[str, dict[str, float]]:
    """Per (host, device, metric): min, max, mean and count; for run metadata and tests."""
    groups: dict[str, list[float]] = {}
    for s in samples:
        key = "/".join(p for p in (s.host, s.device, s.metric) if p)
        groups.setdefault(key, []).append(s.value)
    return {k: {"min": min(v), "max": max(v), "mean": sum(v) / len(v), "count": float(len(v))}
            for k, v in groups.items()}
