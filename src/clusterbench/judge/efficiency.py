"""How close results come to a limit: collectives vs the optimal algbw over the link, device
results (stream bandwidth, GEMM TFLOP/s) vs the datasheet peaks of ``clusterbench.peaks``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterbench.judge.theory import Efficiency, collective_efficiency, link_speed_for
from clusterbench.records import Measurement, Run

try:  # the peak table lives with the node benchmarks; without it, no percentages are shown
    from clusterbench import peaks as _peaks
except ImportError:  # pragma: no cover - depends on the installed tree
    _peaks = None


def nodes_of(run: Run, override: int | None = None) -> int:
    if override:
        return override
    tagged = run.tags.get("nodes")
    if tagged and tagged.isdigit():
        return int(tagged)
    return len(run.hosts)


def run_collective_efficiency(run: Run, ms: list[Measurement], link: str | None,
                              nodes: int | None = None) -> list[Efficiency]:
    """measured/optimal algbw for a run's collective rows; empty without a link speed or with < 2 nodes."""
    rate = link_speed_for(run.tags, link)
    n = nodes_of(run, nodes)
    if rate is None or n < 2:
        return []
    return collective_efficiency(ms, n, rate)


def best_per_placement(effs: list[Efficiency]) -> list[Efficiency]:
    """The largest message size per (benchmark, placement): the row that shows the link's limit."""
    best: dict[tuple[str, str], Efficiency] = {}
    for e in effs:
        k = (e.benchmark, e.placement)
        if k not in best or e.bytes > best[k].bytes:
            best[k] = e
    return list(best.values())


@dataclass(frozen=True)
class DevicePercent:
    benchmark: str
    metric: str
    params: dict[str, Any]
    value: float
    unit: str
    peak: float
    device_name: str

    @property
    def percent(self) -> float:
        return 100.0 * self.value / self.peak


def _device_name(run: Run, m: Measurement) -> str | None:
    dev = m.params.get("device")
    if isinstance(dev, str) and dev and not dev.isdigit() and not dev.startswith(("cuda", "cpu")):
        return dev
    names = [d for d in run.devices if d]
    if isinstance(dev, (int, str)) and str(dev).isdigit() and int(dev) < len(names):
        return names[int(dev)]
    if names and len(set(names)) == 1:
        return names[0]
    meta_name = run.meta.get("device_name")
    return str(meta_name) if meta_name else None


def device_percent_of_peak(run: Run, ms: list[Measurement]) -> list[DevicePercent]:
    """Stream bandwidth vs HBM peak and GEMM TFLOP/s vs dense peak, where the device is known."""
    if _peaks is None:
        return []
    out = []
    for m in ms:
        peak = None
        name = None
        if m.benchmark == "stream" and m.metric == "bandwidth":
            name = _device_name(run, m)
            peak = _peaks.hbm_bandwidth(name)
        elif m.benchmark == "gemm" and m.metric == "tflops":
            name = _device_name(run, m)
            peak = _peaks.dense_tflops(name, str(m.params.get("dtype", "")))
        if peak and name:
            out.append(DevicePercent(m.benchmark, m.metric, dict(m.params), m.value, m.unit, peak, name))
    return out


def best_percent_of_peak(runs: list[tuple[Run, list[Measurement]]]) -> list[tuple[str, DevicePercent]]:
    """The best result per stream kernel / GEMM dtype and shape, as percent of its device's peak."""
    best: dict[str, DevicePercent] = {}
    for run, ms in runs:
        for d in device_percent_of_peak(run, ms):
            p = d.params
            label = (f"stream {p.get('kernel')}" if d.benchmark == "stream" else
                     f"gemm {p.get('dtype')} {p.get('m')}x{p.get('n')}x{p.get('k')}")
            if label not in best or d.percent > best[label].percent:
                best[label] = d
    return list(best.items())
