"""TransferBench output: the a2a Summary matrix, the p2p uni/bidirectional matrices, and config-file
tests (legacy ``|`` and newer box-drawing ``│`` tables) -> ``transfer`` records.

Also read: ``OUTPUT_TO_CSV=1`` (the same rows with ``,`` between cells), ``SHOW_ITERATIONS=1``
(config tests: one ``Iter NNN`` row per timed iteration under its Transfer, stored with
``stat=iteration``; p2p: ``min``/``max`` rows under each matrix row, stored with ``stat`` min/max),
``SHOW_PERCENTILES`` (``p50`` rows under a Transfer, ``stat=p50``), multi-rank tables
(``Executor: Rank N GPU 00``, memory ``R1G0``: ``rank`` param) and the ``scaling`` preset
(``stat=scaling`` with the sub-executor count). Standard deviations are spreads, not rates: not
stored. Presets that print no bandwidth table of these (``healthcheck``: PASS/FAIL lines;
``schmoo``) are refused with a line saying so.

Memory locations use TransferBench's own notation: ``G0`` GPU 0, ``C0`` CPU/NUMA node 0, ``N``
null (memset / read-only), several for a broadcast (``G0G1``). Class averages of the p2p tables
use the class letter alone (``G`` all GPUs, ``C`` all CPUs).
"""

from __future__ import annotations

import math
import re

from clusterbench.families.transfer.spec import BANDWIDTH, BENCHMARK, TIME
from clusterbench.ingest.common import (
    ImportedRun,
    LogFormatError,
    add_error,
    add_warning,
    clean_lines,
    new_run,
    shown,
    text_lines,
    to_float,
    to_int,
)
from clusterbench.ingest.registry import Importer, whole
from clusterbench.records import INCOMPLETE, Measurement

_DEVICE = re.compile(r"\b(CPU|GPU|NIC)\s+(\d+)")
_VERSION = re.compile(r"TransferBench v?(\d[\w.]*)")
_EXECUTOR = {"G": "GFX", "GPU": "GFX", "D": "DMA", "DMA": "DMA", "C": "CPU", "CPU": "CPU", "I": "NIC", "NIC": "NIC"}
_BYTES_PER_TRANSFER = re.compile(r"\[(\d+) bytes per Transfer\]")
_EXE_TOKEN = re.compile(r"^([A-Za-z]+)(\d+)")
_EXECUTOR_CELL = re.compile(r"Executor:\s+(?:Rank\s+(\d+)\s+)?([A-Za-z]+)\s+(\d+)")
_RANKED = re.compile(r"^R(\d+)(?=[A-Z])")   # a multi-rank memory or executor: R1G0
_SCALING_COL = re.compile(r"\b(CPU|GPU)\s*(\d+)")
_HEALTHCHECK = re.compile(r"^Testing (?:HBM performance|unidirectional|bidirectional host|all-to-all XGMI)")
_SCHMOO = re.compile(r"^#CUs\s*\|")
_AVERAGE_LABEL = re.compile(r"([A-Z])[A-Z]*->([A-Z])[A-Z]*")
# TransferBench 1.0x (rccl tools/TransferBench): the test line gives each Transfer's bytes, the
# Transfer cell its memory, executor and sub-executors ('G00 -> [GPU 00:004] -> G01')
_OLD_TEST = re.compile(r"^Test (\d+):\s*\[(\d+) bytes\]$")
_OLD_TRANSFER = re.compile(r"Transfer\s+(\d+):\s*(\S+)\s*->\s*\[(\w+)\s+(\d+):(\d+)\]\s*->\s*(\S+)")
_MEMORY = re.compile(r"([A-Z])0*(\d)")


def _memory(cell: str) -> str:
    """A memory location as newer TransferBench writes it: ``G00`` -> ``G0``, ``G00G01`` -> ``G0G1``."""
    return _MEMORY.sub(r"\1\2", cell)


def _loc(kind: str, index: str) -> str:
    return ("C" if kind == "CPU" else "I" if kind == "NIC" else "G") + str(int(index))


def _columns(header: str) -> list[str]:
    return [_loc(k, i) for k, i in _DEVICE.findall(header.split("\\", 1)[-1])]


def _first(text: str) -> str:
    """The first word of a cell; "" for an empty one (a damaged row: its value is left out)."""
    words = text.split(maxsplit=1)
    return words[0] if words else ""


class _Parser:
    def __init__(self, name: str, text: str = "") -> None:
        self.text = text   # the log, to say which line a refused cell is on
        self.run = new_run("transferbench", name)
        self.ms: list[Measurement] = []
        self.mode = ""  # a2a | uni | bi
        self.cols: list[str] = []
        self.bytes: int | None = None
        self.method = "GFX"
        self.avg_labels: list[str] = []
        self.test: dict[str, object] = {}
        self.comment = ""
        self.kind = "config"  # what the Executor/Transfer lines belong to
        self.transfer: dict[str, object] | None = None   # the Transfer the Iter/pNN rows below belong to
        self.leg: str | None = None   # the leg of the last p2p row, for its min/max rows
        self.scaling_src: str | None = None
        self.refused_preset = ""   # a preset whose output is no bandwidth table

    def add(self, value: float | None, **params: object) -> None:
        if value is None:
            return
        p = {k: v for k, v in params.items() if v is not None}
        if self.bytes is not None and "bytes" not in p:
            p["bytes"] = self.bytes
        self.ms.append(BANDWIDTH(BENCHMARK, value, p))

    def line(self, line: str) -> None:
        s = line.strip()
        if not s or set(s) <= set("=-─┬┼┴|│ "):
            return
        m = _VERSION.search(s)
        if m:
            self.run.source = f"transferbench {m.group(1)}"
            self.run.versions["transferbench"] = m.group(1)
        if "All-To-All" in s:
            self.kind = "a2a"
        if _HEALTHCHECK.match(s):
            self.refused_preset = "healthcheck (PASS/FAIL lines)"
            return
        if _SCHMOO.match(s):
            self.refused_preset = "schmoo"
            return
        if s.startswith("GPU-GFX Scaling benchmark"):
            self.mode, self.cols, self.bytes = "scaling", [], None
            return
        if self.mode == "scaling":
            self._scaling(s)
            return
        if s.startswith("Bytes Per Direction"):
            self.bytes = to_int(s.split()[-1])
        elif s.startswith("Summary:"):
            m = _BYTES_PER_TRANSFER.search(s)
            self.bytes = int(m.group(1)) if m else self.bytes
            self.mode = "a2a"
        elif "copy peak bandwidth" in s:
            self.mode = "uni" if s.startswith("Unidirectional") else "bi"
            m = re.search(r"GPU-Executor:\s*(\w+)", s)
            self.method = m.group(1) if m else "GFX"
        elif s.startswith(("SRC\\DST", "SRC+EXE\\DST")):
            self.cols = _columns(s)
        elif s.startswith(("CPU->CPU", "CPU->GPU")) or s.split()[:1] == ["CPU->CPU"]:
            self.avg_labels = s.split()
        elif s.startswith("Averages"):
            self._averages(s)
        elif s.startswith(("Average bandwidth", "Average   bandwidth", "Aggregate bandwidth")):
            timing = "cpu" if "CPU Timed" in s else "gpu"
            stat = "average" if s.startswith("Average") else "aggregate"
            self.add(to_float(_first(s.split(":")[-1])), test="a2a", direction="uni", method=self.method,
                     stat=stat, timing=timing)
        elif s.startswith("Test ") and s.rstrip(":").split()[-1].isdecimal():
            self.test = {"index": int(s.rstrip(":").split()[-1]), "comment": self.comment}
            self.comment = ""
        elif _OLD_TEST.match(s):   # v1.0x: 'Test 1: [1073741824 bytes]', the bytes of each Transfer
            m = _OLD_TEST.match(s)
            assert m is not None
            self.test = {"index": int(m.group(1)), "comment": self.comment, "bytes": int(m.group(2)), "moved": 0}
            self.comment = ""
        elif s.startswith("##"):
            self.comment = s.lstrip("#").strip()
        elif ("|" in s or "│" in s) and ("GB/s" in s):
            self._config_line(s, r"[|│]")
        elif "," in s and "GB/s" in s and s.startswith(("Executor:", "Transfer ", "Aggregate", "Iter ", "p")):
            self._config_line(s, ",")   # OUTPUT_TO_CSV: the same cells with commas between them
        elif self.mode and self.cols:
            self._matrix_row(s)

    def _whole(self, s: str, vals: list[float | None], cells: int) -> list[float | None]:
        """A row's values, but for the last of a row with fewer than ``cells``: the log was cut
        in it (a killed job), so that value may be the start of a number."""
        if len(vals) >= cells or not vals:
            return vals
        add_warning(self.run, f"a row with {len(vals)} of its {cells} values (the log is cut short?), "
                              f"its last value not stored: {shown(s)}")
        return vals[:-1]

    def _matrix_row(self, s: str) -> None:
        s = s.replace(",", " ")   # OUTPUT_TO_CSV prints the same rows with a comma after each cell
        m = re.match(r"^(CPU|GPU|NIC)\s+(\d+)\s*(<->|->|<-|min|max|sd)?\s+(.*)$", s)
        if self.mode == "a2a" and s.startswith("RTotal"):
            vals = self._whole(s, [to_float(t) for t in s.split()[1:]], len(self.cols))
            for dst, v in zip(self.cols, vals):
                self.add(v, src="*", dst=dst, test="a2a", direction="uni", method=self.method, stat="col_total")
            return
        if not m:
            return
        src = _loc(m.group(1), m.group(2))
        arrow, vals = m.group(3), [to_float(t) for t in m.group(4).replace("N/A", "nan").split()]
        vals = self._whole(s, vals, len(self.cols))
        if self.mode == "a2a":
            for dst, v in zip(self.cols, vals):
                self.add(v, src=src, dst=dst, test="a2a", direction="uni", method=self.method, stat="pair")
            extra = vals[len(self.cols):]
            if extra:
                self.add(extra[0], src=src, dst="*", test="a2a", direction="uni", method=self.method,
                         stat="row_total")
            if len(extra) > 1:
                self.add(extra[1], src=src, dst="*", test="a2a", direction="uni", method=self.method,
                         stat="row_actual")
            return
        direction = "uni" if self.mode == "uni" else "bi"
        if arrow == "sd":   # SHOW_ITERATIONS' standard deviation: a spread, not a rate
            return
        if arrow in ("min", "max"):   # SHOW_ITERATIONS: slowest/fastest iteration of the row above
            for dst, v in zip(self.cols, vals):
                self.add(v, src=src, dst=dst, test="p2p", direction=direction, method=self.method, stat=arrow,
                         leg=self.leg)
            return
        leg = {"->": None if direction == "uni" else "src_to_dst", "<-": "dst_to_src", "<->": None}.get(arrow or "->")
        self.leg = leg
        for dst, v in zip(self.cols, vals):
            self.add(v, src=src, dst=dst, test="p2p", direction=direction, method=self.method, stat="pair", leg=leg)

    def _scaling(self, s: str) -> None:
        """The scaling preset: one GFX executor copying to each device, a row per sub-executor count."""
        m = re.match(r"^- Copying (\d+) bytes from GPU (\d+)", s)
        if m:
            self.bytes, self.scaling_src = int(m.group(1)), f"G{int(m.group(2))}"
            return
        words = s.replace(",", " ").split()
        if words[0] == "NumCUs":
            self.cols = [_loc(k, i) for k, i in _SCALING_COL.findall(s)]
            return
        if not (self.cols and words[0].isdecimal()):
            return   # the title, the "Best" row (the largest of each column, stored already)
        vals = self._whole(s, [to_float(t) for t in words[1:]], len(self.cols))
        for dst, v in zip(self.cols, vals):
            self.add(v, src=self.scaling_src, dst=dst, test="scaling", direction="uni", method="GFX",
                     subexecutors=int(words[0]), stat="scaling")

    def _averages(self, s: str) -> None:
        direction = "bi" if "Bi" in s else "uni"
        vals = self._whole(s, [to_float(t) for t in s.split(":", 1)[-1].split()], len(self.avg_labels))
        for label, v in zip(self.avg_labels, vals):
            m = _AVERAGE_LABEL.fullmatch(label)
            if m:   # a damaged label says no longer which class the average is of
                self.add(v, src=m.group(1), dst=m.group(2), test="p2p", direction=direction, method=self.method,
                         stat="average")

    def _config_line(self, s: str, sep: str) -> None:
        cells = [c.strip() for c in re.split(sep, s)]
        if len(cells) < 3:
            return
        head = cells[0]
        bw, time_us = to_float(_first(cells[1])), to_float(_first(cells[2]))
        time_us = time_us * 1000 if time_us is not None and math.isfinite(time_us * 1000) else None
        per_iter = re.fullmatch(r"Iter\s+(\d+)|p(\d+(?:\.\d+)?)", head)
        if per_iter:   # SHOW_ITERATIONS / SHOW_PERCENTILES rows: of the Transfer above them
            if self.transfer is None:
                raise self._refused(s, head, "has no Transfer row above it", "per-iteration row")
            stat = "iteration" if per_iter.group(1) else f"p{per_iter.group(2)}"
            extra = {"iteration": int(per_iter.group(1))} if per_iter.group(1) else {}
            p = dict(self.transfer, stat=stat, **extra)
            self.add(bw, **p)
            self._time(time_us, **p)
            return
        if not head.startswith(("Executor", "Transfer", "Aggregate")) or len(cells) < 4:
            return   # StandardDev (a spread), "# Iters Run"
        if "bytes" in self.test and (head.startswith("Aggregate") or "->" in head):
            self._old_config_line(s, head, bw, time_us)
            return
        nbytes = cells[3]
        # the byte count identifies the row: a row without one would be stored as another row
        nbytes_i = to_int(_first(nbytes))
        if nbytes_i is None or nbytes_i < 0:
            raise self._refused(s, nbytes, "is not a whole number of bytes", "byte count")
        base: dict[str, object] = {"test": self.kind, "test_index": self.test.get("index"), "bytes": nbytes_i}
        if self.test.get("comment"):
            base["name"] = self.test["comment"]
        tail = cells[4] if len(cells) > 4 else ""
        if head.startswith("Executor"):
            m = _EXECUTOR_CELL.fullmatch(head)
            if m is None:
                raise self._refused(s, head, "is not 'Executor: KIND INDEX'", "executor cell")
            rank, kind, idx = m.groups()
            exe = {"GPU": "G", "DMA": "D", "CPU": "C", "NIC": "I"}.get(kind, kind[:1]) + str(int(idx))
            method = _EXECUTOR.get(kind, kind)
            if rank is not None:
                base["rank"] = int(rank)
            self.add(bw, executor=exe, method=method, stat="executor", **base)
            self.add(to_float(tail.split()[0]) if tail else None, executor=exe, method=method,
                     stat="executor_sum", **base)
            self._time(time_us, executor=exe, method=method, stat="executor", **base)
        elif head.startswith("Transfer"):
            parts = [p.strip() for p in tail.split("->")]
            if len(parts) == 3:
                ranked = _RANKED.match(parts[1])
                exe_word = parts[1][ranked.end():] if ranked else parts[1]
                em = _EXE_TOKEN.match(exe_word)
                method = _EXECUTOR.get(em.group(1), em.group(1)) if em else None
                sub = to_int(parts[1].rsplit(":", 1)[-1]) if ":" in parts[1] else None
                index = head.split()[-1]
                if not index.isdecimal():
                    raise self._refused(s, head, "is not 'Transfer INDEX'", "transfer cell")
                p = dict(base, src=parts[0], dst=parts[2], method=method, transfer=int(index),
                         subexecutors=sub, stat="transfer")
                if ranked:
                    p["rank"] = int(ranked.group(1))
                self.add(bw, **p)
                self._time(time_us, **p)
                self.transfer = {k: v for k, v in p.items() if k != "stat"}
        elif head.startswith("Aggregate"):
            self.transfer = None
            self.add(bw, stat="aggregate", timing="cpu", **base)
            self._time(time_us, stat="aggregate", timing="cpu", **base)

    def _old_config_line(self, s: str, head: str, bw: float | None, time_us: float | None) -> None:
        """A row of TransferBench 1.0x's table: ``Transfer 01: G00 -> [GPU 00:004] -> G01 | 8.413
        GB/s | 127.626 ms | LOCAL-PCIE-2`` (source, executor with its sub-executor count,
        destination in the first cell, the link path last; the bytes are the ``Test`` line's),
        and ``Aggregate Bandwidth (CPU timed) | 33.518 GB/s | 128.139 ms | Overhead: 0.397 ms``,
        whose bytes are all the test's Transfers' (its rate is their sum over the CPU time)."""
        base: dict[str, object] = {"test": self.kind, "test_index": self.test.get("index")}
        if self.test.get("comment"):
            base["name"] = self.test["comment"]
        if head.startswith("Aggregate"):
            self.transfer = None
            p = dict(base, bytes=self.test["moved"], stat="aggregate", timing="cpu")
            self.add(bw, **p)
            self._time(time_us, **p)
            return
        m = _OLD_TRANSFER.fullmatch(head)
        if m is None:
            raise self._refused(s, head, "is not 'Transfer N: SRC -> [EXECUTOR N:CUS] -> DST'", "transfer cell")
        index, src, kind, exe, subs, dst = m.groups()
        nbytes = int(self.test["bytes"])  # type: ignore[call-overload]
        self.test["moved"] = int(self.test["moved"]) + nbytes  # type: ignore[call-overload]
        method = _EXECUTOR.get(kind, kind)
        p = dict(base, bytes=nbytes, src=_memory(src), dst=_memory(dst), method=method, transfer=int(index),
                 subexecutors=int(subs), stat="transfer")
        self.add(bw, **p)
        self._time(time_us, **p)
        self.transfer = {k: v for k, v in p.items() if k != "stat"}

    def _refused(self, line: str, cell: str, problem: str, what: str) -> LogFormatError:
        """The error for a cell that no TransferBench prints, with the log line it is on."""
        at = self.text.find(line)
        if at < 0 and cell:   # the line as cleaned is not in the log (document markup): find the cell
            at = self.text.find(cell)
        where = f"line {self.text.count(chr(10), 0, at) + 1}: " if at >= 0 else ""
        return LogFormatError(f"{where}{what} {shown(cell)} {problem}")

    def _time(self, value: float | None, **params: object) -> None:
        if value is not None:
            p = {k: v for k, v in params.items() if v is not None}
            self.ms.append(TIME(BENCHMARK, value, p))


def parse(text: str, name: str = "") -> list[ImportedRun]:
    """One run per TransferBench invocation: its banner (``TransferBench v1.67``, ``Run
    configuration (TransferBench v1.02)``) after results starts the next."""
    parsers = [_Parser(name, text)]
    for line in clean_lines(text_lines(text)):
        p = parsers[-1]
        if p.ms and _VERSION.search(line):
            p = _Parser(name, text)
            parsers.append(p)
        if line.lstrip().startswith(("[ERROR]", "ERROR", "Error")):
            add_error(p.run, line)
        p.line(line)
    out: list[ImportedRun] = []
    refused = sorted({p.refused_preset for p in parsers if p.refused_preset})
    for p in parsers:
        if not p.ms:
            continue
        for preset in refused:
            add_warning(p.run, f"TransferBench {preset} output in this log is not stored")
        if p.run.errors:
            p.run.status = INCOMPLETE
        out.append(ImportedRun(p.run, p.ms))
    if refused and not out:
        raise LogFormatError(f"TransferBench {refused[0]} output is not a bandwidth table clusterbench "
                             "reads: not imported")
    return out


IMPORTERS = (
    Importer("transferbench", re.compile(r"TransferBench|SRC\\+DST|SRC\+EXE\\+DST|Aggregate bandwidth \(GPU Timed\)"
                                         r"|Bytes Per Direction|Aggregate \(CPU\)\s*[|│,]|GPU-GFX Scaling benchmark"
                                         r"|Test#,Transfer#,NumBytes|Testing HBM performance|Testing all-to-all XGMI"
                                         r"|\| Local Read\s+\| Local Write"), whole(parse), order=50,
             starts=re.compile(r"^\s*TransferBench v\d", re.M)),
)
