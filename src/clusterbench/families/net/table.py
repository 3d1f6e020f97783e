"""Terminal table for ``net`` records: one line per host pair, bandwidth in GB/s and Gbit/s."""

from __future__ import annotations

from clusterbench.families.base import param_text, run_header_lines
from clusterbench.families.net.spec import BANDWIDTH
from clusterbench.records import Measurement, Run
from clusterbench.units import compact, fixed


class NetTable:
    def header(self, run: Run) -> list[str]:
        return run_header_lines(run) + [
            f"#{'src':>18s} {'dst':>18s} {'metric':>11s} {'stat':>5s} {'streams':>7s} "
            f"{'value':>10s} {'unit':<6s} {'Gbit/s':>8s}"]

    def rows(self, measurements: list[Measurement]) -> list[str]:
        out = []
        for m in measurements:
            gbit = fixed(m.value * 8, 8, 3) if m.unit == BANDWIDTH.unit else f"{'':>8s}"
            out.append(f" {str(m.param('src_host', '')):>18s} {str(m.param('dst_host', '')):>18s} "
                       f"{m.metric:>11s} {param_text(m.param('stat'), ''):>5s} {param_text(m.param('streams'), ''):>7} "
                       f"{fixed(m.value, 10, 3)} {m.unit:<6s} {gbit}")
        return out

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]:
        bw = [m.value for m in measurements if m.metric == BANDWIDTH.name]
        if not bw:
            return []
        return [f"# pairs: {len(bw)}, bandwidth min {compact(min(bw), 3)} / max {compact(max(bw), 3)} GB/s"]
