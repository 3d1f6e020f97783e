"""Transfer tables: each matrix as SRC\\DST with row totals and the average (as TransferBench's
p2p/a2a and nvbandwidth print them), config tests as one line per transfer; percent of the
datasheet link bound where the device is known."""

from __future__ import annotations

from clusterbench import peaks
from clusterbench.families.base import (
    param_text,
    param_words,
    significant,
    text_value,
    varying,
    whole,
)
from clusterbench.families.device_table import DeviceTable, percent_cell
from clusterbench.families.transfer.spec import BANDWIDTH, MATRIX_TESTS
from clusterbench.records import Measurement, Run


def _endpoint_order(e: str) -> tuple[int, int, str]:
    """Host memory first, then GPUs, by index (G2 before G10)."""
    digits = "".join(ch for ch in e[1:] if ch.isdigit())
    return ("CUG".find(e[:1]), int(digits) if digits else 0, e)


# params a config line or matrix shows in its own words
_SAID = ("test", "stat", "bytes", "name", "test_index", "direction", "method", "host_memory")


def _words(m: Measurement) -> str:
    return param_words(m.params, [k for k in m.params if k not in _SAID])


def _text(m: Measurement) -> str:
    """A value in running text, with enough digits that a small one does not read 0."""
    return f"{text_value(m.value)} {m.unit}"


def _cell(v: float | None) -> str:
    if v is None:
        return f"{'N/A':>10s}"
    text = significant(v, 10, 2)
    # cells have no separator: an exponent form keeps one blank so it does not run into the last
    return text if len(text) <= 10 else " " + significant(v, 9, 2)


class TransferTable(DeviceTable):
    def header(self, run: Run) -> list[str]:
        lines = self._begin(run, show_threads=False)
        gpus = {n for k, n in self._names.items() if k.startswith("G")}
        lines += self._peak_lines(gpus, lambda d: f"link peaks from {d.source}")
        lines.append("# bandwidth in GB/s = bytes / mean time per transfer")
        return lines

    def _gpu_name(self, *endpoints: str) -> str | None:
        for e in endpoints:
            if e.startswith("G") and e in self._names:
                return self._names[e]
        return None

    def _pct(self, m: Measurement) -> str:
        src, dst = str(m.param("src")), str(m.param("dst"))
        name = self._gpu_name(src, dst) or self._gpu_name(*self._names)
        if not (src.startswith("G") or dst.startswith("G")) or name is None:
            return ""
        return percent_cell(m.value, peaks.transfer_peak(
            name, str(m.param("test")), src, dst, str(m.param("direction")), self._partition(name)), 10)

    def rows(self, measurements: list[Measurement]) -> list[str]:
        by_test: dict[str, list[Measurement]] = {}
        for m in measurements:
            by_test.setdefault(str(m.param("test")), []).append(m)
        out: list[str] = []
        for test, tms in by_test.items():
            # a native config test (its transfers carry subexecs) stays one even when a comment
            # line named it like a matrix
            if test not in MATRIX_TESTS or any(m.param("subexecs") is not None for m in tms):
                out += self._config(test, tms)
                continue
            groups: dict[tuple[str, str, str], list[Measurement]] = {}
            for m in tms:
                # a bidirectional pair's two legs (src_to_dst, dst_to_src) are matrices of their own
                key = (str(m.param("direction")), str(m.param("method")),
                       " ".join(str(m.param(k)) for k in ("host_memory", "leg") if m.param(k) is not None))
                groups.setdefault(key, []).append(m)
            for (direction, method, host_memory), ms in groups.items():
                out += self._matrix(test, direction, method, host_memory, ms)
        return out

    def _matrix(self, test: str, direction: str, method: str, host_memory: str,
                ms: list[Measurement]) -> list[str]:
        pairs = [m for m in ms if m.param("stat") == "pair"]
        if not pairs:  # the per-executor and per-transfer lines a2a prints besides its matrix
            return self._config(test, ms)
        srcs = sorted({str(m.param("src")) for m in pairs}, key=_endpoint_order)
        dsts = sorted({str(m.param("dst")) for m in pairs}, key=_endpoint_order)
        if direction == "bi":  # symmetric: show both triangles
            srcs = dsts = sorted(set(srcs + dsts), key=_endpoint_order)
        cell: dict[tuple[str, str], Measurement] = {}
        for m in pairs:
            cell[(str(m.param("src")), str(m.param("dst")))] = m
        for m in pairs:
            cell[(str(m.param("src")), str(m.param("dst")))] = m
            if direction == "bi":
                cell.setdefault((str(m.param("dst")), str(m.param("src"))), m)
        totals = {str(m.param("src")): m for m in ms if m.param("stat") == "row_total"}
        # TransferBench's a2a also prints each row's bandwidth from its actual wall time
        actual = {str(m.param("src")): m for m in ms if m.param("stat") == "row_actual"}
        arrow = "<->" if direction == "bi" else "->"
        what = f"{test} {direction} {method}" + (f" {host_memory}" if host_memory else "")
        size = f", {pairs[0].param('bytes')} bytes per transfer" if pairs[0].param("bytes") is not None else ""
        lines = [f"# {what}{size}",
                 f"  {'SRC' + arrow + 'DST':<10s}" + "".join(f"{d:>10s}" for d in dsts)
                 + f"{'total':>10s}" + (f"{'actual':>10s}" if actual else "")]
        show_pct = any(self._pct(m) for m in pairs)
        for s in srcs:
            row = "".join(_cell(cell[(s, d)].value if (s, d) in cell else None) for d in dsts)
            tot, act = totals.get(s), actual.get(s)
            lines.append(f"  {s:<10s}{row}{_cell(tot.value if tot else None)}"
                         + (_cell(act.value if act else None) if actual else ""))
            if show_pct:
                pct = "".join(f"{self._pct(cell[(s, d)]) if (s, d) in cell else '':>10s}" for d in dsts)
                lines.append(f"  {'  %peak':<10s}{pct}{(self._pct(tot) if tot else ''):>10s}")
        columns = {str(m.param("dst")): m for m in ms if m.param("stat") == "col_total"}
        if columns:
            lines.append(f"  {'total':<10s}" + "".join(_cell(columns[d].value if d in columns else None) for d in dsts))
        shown = {id(m) for m in [*pairs, *totals.values(), *actual.values(), *columns.values()]}
        rest = [m for m in ms if id(m) not in shown]
        for stat in ("average", "aggregate"):
            group = [m for m in rest if m.param("stat") == stat]
            # what tells two such lines apart: the src/dst class of p2p's averages, the timing of
            # a2a's two aggregates (GPU and CPU)
            extra = varying([m.params for m in group], ("stat",))
            for m in group:
                label = f" ({param_words(m.params, extra)})" if extra else ""
                if stat == "average":
                    lines.append(f"  average{label} {_text(m)} over "
                                 f"{'off-diagonal ' if len(srcs) > 1 else ''}pairs")
                else:
                    size = f"all {m.param('bytes')} bytes" if m.param("bytes") is not None else "all bytes"
                    lines.append(f"  aggregate{label} {_text(m)} ({size} / wall time)")
        for m in rest:
            if m.param("stat") not in ("average", "aggregate"):
                lines.append(f"  {param_text(m.param('stat'))} {_text(m)} ({_words(m)})")
        return lines

    def _config(self, test: str, ms: list[Measurement]) -> list[str]:
        lines = [f"# {test}"]
        named = None
        for m in ms:
            index = (m.param("test_index"), m.param("name"))
            if index != (None, None) and index != named:
                named = index
                lines.append(f"# test {param_text(index[0], '')}" + (f": {index[1]}" if index[1] is not None else ""))
            stat = m.param("stat")
            if stat == "pair" and m.metric == BANDWIDTH.name:
                t = whole(m.param("transfer", 0), 0)
                lines.append(f"  Transfer {t:02d} | {significant(m.value, 10, 3)} GB/s | {param_text(m.param('bytes')):>11} bytes | "
                             f"{m.param('src')} -> {m.param('method')} {m.param('executor', '')} -> {m.param('dst')}")
            elif stat == "aggregate" and m.metric == BANDWIDTH.name and m.param("timing") is None:
                lines.append(f"  Aggregate   | {significant(m.value, 10, 3)} GB/s | {param_text(m.param('bytes')):>11} bytes | wall time")
            else:
                lines.append(f"  {param_text(stat).capitalize():<12s}| {significant(m.value, 10, 3)} {m.unit:<4s} | "
                             f"{param_text(m.param('bytes')):>11} bytes | {_words(m)}".rstrip())
        return lines

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]:
        return []
