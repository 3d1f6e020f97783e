"""The GEMM table: one line per device, dtype and statistic (best, median), rocblas-bench's
shape columns, TFLOP/s with percent of the device's dense datasheet peak for that dtype."""

from __future__ import annotations

from clusterbench import peaks
from clusterbench.families.base import (
    SPREAD_STATS,
    param_text,
    param_words,
    significant,
    text_value,
    varying,
    whole,
)
from clusterbench.families.device_table import DeviceTable, percent_cell
from clusterbench.families.gemm.spec import BANDWIDTH, TFLOPS, TIME
from clusterbench.records import Measurement, Run

# params the columns show; the device's own name is in the header
_SHOWN = ("device", "devices", "m", "n", "k", "batch", "dtype", "transA", "transB", "stat")


# the per-sample spread a native run records beside best and median, for the noise check
_SPREAD = SPREAD_STATS | {"max"}


def _key(params: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


def _spread(m: Measurement) -> bool:
    return m.metric == TIME.name and m.param("stat") in _SPREAD


class GemmTable(DeviceTable):
    def __init__(self) -> None:
        super().__init__()
        self._said: set[str] = set()   # units other than TFLOP/s a line has named

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
        # A record's time and GB/s share every param with its TFLOP/s (an import has no device
        # param: keyed on the params themselves, never on their text); repeated rows take theirs
        # in order.
        others: dict[tuple, dict[str, list[Measurement]]] = {}
        for m in measurements:
            if m.metric in (TIME.name, BANDWIDTH.name) and not _spread(m):
                others.setdefault(_key(m.params), {}).setdefault(m.metric, []).append(m)
        rows = [m for m in measurements if m.metric == TFLOPS.name]
        extra = varying([m.params for m in rows], _SHOWN)
        out = []
        for m in rows:
            p = m.params
            unit = TFLOPS.unit_for(p)
            if unit != TFLOPS.unit and unit not in self._said:
                self._said.add(unit)   # once per table, above its first such row
                out.append(f"# {p.get('dtype')}: {unit} (integer operations), in the TFLOP/s column")
            found = others.get(_key(p), {})
            t = found[TIME.name].pop(0).value if found.get(TIME.name) else None
            gbs = found[BANDWIDTH.name].pop(0).value if found.get(BANDWIDTH.name) else None
            label, dtype, stat = param_text(p.get("device"), "-"), str(p.get("dtype")), str(p.get("stat", ""))
            pct = percent_cell(m.value, self._peak(param_text(p.get("device"), ""), dtype, whole(p.get("devices", 1))))
            tcol = significant(t, 11, 1) if t is not None else f"{'':>11s}"
            m_, n_, k_, batch, ta, tb = (param_text(p.get(k)) for k in ("m", "n", "k", "batch", "transA", "transB"))
            tail = (f" {significant(gbs, 9, 1)} GB/s" if gbs is not None else "") + \
                (f"  {param_words(p, extra)}" if extra else "")
            out.append(f"  {label:>8s} {m_:>6} {n_:>6} {k_:>6} {batch:>5} {dtype:>8s} {ta:>2} {tb:>2} "
                       f"{stat:>9s} {significant(m.value, 10, 3)} {pct:>6s} {tcol}{tail}".rstrip())
        # records with no TFLOP/s of their own: per-sample spread of a native run (max, stddev)
        # and any time or GB/s an import stored alone
        for found in others.values():
            for left in found.values():
                for o in left:
                    out.append(f"  {param_text(o.param('device'), '-'):>8s} {o.metric} ({param_words(o.params, o.params)}): "
                               f"{text_value(o.value, 3 if o.metric == BANDWIDTH.name else 1)} {o.unit}")
        return out

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]:
        spread = [m for m in measurements if _spread(m)]
        if not spread:
            return []
        stats = ", ".join(dict.fromkeys(str(m.param("stat")) for m in spread))
        return [f"# not shown: {len(spread)} time_us records of the spread of the samples ({stats}), "
                f"for the noise check; results show --json lists them"]
