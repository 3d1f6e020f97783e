"""Terminal table for ``net`` records: one line per host pair, bandwidth in GB/s and Gbit/s."""

from __future__ import annotations

from clusterbench.families.base import (
    param_text,
    param_words,
    run_header_lines,
    significant,
    text_value,
    varying,
)
from clusterbench.families.net.spec import BANDWIDTH
from clusterbench.records import Measurement, Run

_SHOWN = ("src_host", "dst_host", "stat", "streams")


class NetTable:
    def header(self, run: Run) -> list[str]:
        return run_header_lines(run) + [
            f"#{'src':>18s} {'dst':>18s} {'metric':>11s} {'stat':>5s} {'streams':>7s} "
            f"{'value':>10s} {'unit':<6s} {'Gbit/s':>8s}"]

    def rows(self, measurements: list[Measurement]) -> list[str]:
        # iperf3's sender and receiver sides of a run are two rows with the same hosts: the
        # params that tell rows apart (side, protocol, ...) follow the columns
        groups: dict[tuple, list[Measurement]] = {}
        for m in measurements:
            groups.setdefault((m.metric, *(param_text(m.param(k), "") for k in _SHOWN)), []).append(m)
        extra = list(dict.fromkeys(k for ms in groups.values() if len(ms) > 1
                                   for k in varying([m.params for m in ms], _SHOWN)))
        out = []
        for m in measurements:
            gbit = significant(m.value * 8, 8, 3) if m.unit == BANDWIDTH.unit else f"{'':>8s}"
            words = param_words(m.params, extra)
            out.append(f" {str(m.param('src_host', '')):>18s} {str(m.param('dst_host', '')):>18s} "
                        f"{m.metric:>11s} {param_text(m.param('stat'), ''):>5s} {param_text(m.param('streams'), ''):>7} "
                        f"{significant(m.value, 10, 3)} {m.unit:<6s} {gbit}" + (f"  {words}" if words else ""))
        return out

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]:
        bw = [m.value for m in measurements if m.metric == BANDWIDTH.name]
        if not bw:
            return []
        return [f"# pairs: {len(bw)}, bandwidth min {text_value(min(bw), 3)} / max {text_value(max(bw), 3)} GB/s"]
