"""The stream table: one line per device, size and kernel, BabelStream's columns in GB/s and us,
with percent of the device's datasheet HBM bandwidth when the device is known."""

from __future__ import annotations

from clusterbench import peaks
from clusterbench.families.base import param_text, significant, whole
from clusterbench.families.device_table import DeviceTable, percent_cell
from clusterbench.families.stream.spec import BANDWIDTH, TIME
from clusterbench.records import Measurement, Run


class StreamTable(DeviceTable):
    _memory = False   # the header has a memory column
    def _peak(self, label: str, devices: int = 1) -> float | None:
        if label == "all":
            label = next(iter(self._names), "cpu")
        name = peaks.device_name_for(label, self._names, self._ranks)
        peak = peaks.hbm_bandwidth(name, self._partition(name))
        return peak * devices if peak else None

    def header(self, run: Run) -> list[str]:
        lines = self._begin(run)
        lines += self._peak_lines(self._device_names(), lambda d: (
            f"peak memory bandwidth {d.hbm_gbs:g} GB/s ({d.source})" if d.hbm_gbs else None))
        # runs that know their devices' caches say of each row whether it measured memory or cache
        self._memory = "cache_bytes" in run.meta
        lines.append(f"# {'device':>8s} {'array_size':>11s} {'dtype':>6s} {'kernel':>8s} "
                     f"{'GB/s':>10s} {'%peak':>6s} {'min_us':>10s} {'max_us':>10s} {'avg_us':>10s}"
                     + (f" {'memory':>7s}" if self._memory else ""))
        return lines

    def rows(self, measurements: list[Measurement]) -> list[str]:
        times: dict[tuple, dict[str, float]] = {}
        for m in measurements:
            if m.metric == TIME.name:
                key = (m.param("device"), m.param("array_size"), m.param("dtype"), m.param("kernel"))
                times.setdefault(key, {})[str(m.param("stat"))] = m.value
        out = []
        for m in measurements:
            if m.metric != BANDWIDTH.name:
                continue
            label = str(m.param("device"))
            key = (label, m.param("array_size"), m.param("dtype"), m.param("kernel"))
            t = times.get(key, {})
            pct = percent_cell(m.value, self._peak(label, whole(m.param("devices", 1))))
            cols = " ".join(significant(t[s], 10, 1) if s in t else f"{'':>10s}" for s in ("min", "max", "avg"))
            memory = f" {param_text(m.param('memory'), '-'):>7s}" if self._memory or m.param("memory") else ""
            out.append(f"  {label:>8s} {param_text(m.param('array_size')):>11} {param_text(m.param('dtype')):>6s} "
                       f"{param_text(m.param('kernel')):>8s} {significant(m.value, 10, 2)} {pct:>6s} {cols}"
                       f"{memory}".rstrip())
        return out

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]:
        return []
