"""The GEMM table: one line per device, dtype and statistic (best, median), rocblas-bench's
shape columns, TFLOP/s with percent of the device's dense datasheet peak for that dtype."""

from __future__ import annotations

from clusterbench import peaks
from clusterbench.families.base import param_text, whole
from clusterbench.families.device_table import DeviceTable, percent_cell
from clusterbench.families.gemm.spec import TFLOPS, TIME
from clusterbench.records import Measurement, Run
from clusterbench.units import fixed


class GemmTable(DeviceTable):
    def header(self, run: Run) -> list[str]:
        lines = self._begin(run)
        lines += self._peak_lines(self._device_names(), lambda d: f"dense peaks from {d.source}")
        lines.append("# TFLOP/s = 2*m*n*k*batch / time per call")
        lines.append(f"# {'device':>8s} {'m':>6s} {'n':>6s} {'k':>6s} {'batch':>5s} {'dtype':>8s} "
                     f"{'tA':>2s} {'tB':>2s} {'stat':>9s} {'TFLOP/s':>10s} {'%peak':>6s} {'time_us':>11s}")
        return lines

    def _peak(self, label: str, dtype: str, devices: int) -> float | None:
        if label == "all":
            label = next(iter(self._names), "")
        name = peaks.device_name_for(label, self._names, self._ranks)
        peak = peaks.dense_tflops(name, dtype, self._partition(name))
        return peak * devices if peak else None

    def rows(self, measurements: list[Measurement]) -> list[str]:
        times = {(m.param("device"), m.param("dtype"), m.param("stat")): m.value
                 for m in measurements if m.metric == TIME.name}
        out = []
        for m in measurements:
            if m.metric != TFLOPS.name:
                continue
            p = m.params
            label, dtype, stat = str(p.get("device")), str(p.get("dtype")), str(p.get("stat", ""))
            t = times.get((label, dtype, stat))
            pct = percent_cell(m.value, self._peak(label, dtype, whole(p.get("devices", 1))))
            tcol = fixed(t, 11, 1) if t is not None else f"{'':>11s}"
            m_, n_, k_, batch, ta, tb = (param_text(p.get(k)) for k in ("m", "n", "k", "batch", "transA", "transB"))
            out.append(f"  {label:>8s} {m_:>6} {n_:>6} {k_:>6} {batch:>5} {dtype:>8s} {ta:>2} {tb:>2} "
                       f"{stat:>9s} {fixed(m.value, 10, 3)} {pct:>6s} {tcol}".rstrip())
        return out

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]:
        return []
