"""BabelStream (text and ``--csv``, every release), its predecessor GPU-STREAM, McCalpin STREAM
and the HIP port of cuda-stream -> ``stream`` records.

Units, from the tools' sources (docs/metrics.md): BabelStream prints ``MBytes/sec`` with
MB = 10^6 bytes (``--mibibytes``: ``MiBytes/sec``, 2^20); v6 prints ``<unit>/s`` (MB, GB, TB:
10^6, 10^9, 10^12; MiB, GiB, TiB: 2^20, 2^30, 2^40). GPU-STREAM 1.0 and McCalpin STREAM print MB/s
(10^6); cuda-stream's HIP port prints ``Rate (GiB/s)`` in IEC units. The column order is read
from each table's header (BabelStream: rate, min, max, average; STREAM: rate, average, min, max);
a table whose header says neither is refused rather than guessed. The bandwidth comes from the
minimum time.

The ``--csv`` header differs between releases and is read by name: v3.3 ends every row with a
comma, v3.4-v5.0 name the rate ``max_mbytes_per_sec`` / ``max_mibytes_per_sec``, v5.0 adds a
``phase`` table (array init and read, not kernels), a 2024 development version names it
``max_<unit>_per_sec`` in lower case and v6.0 in the unit's case (``max_GiB_per_sec``).

A failed check (``Validation failed on a[]``, v6's ``FAILED validation of``) makes the run
``failed`` with the message; so does the program dying (an abort, ``terminate called``). Several
processes writing into one log (8 GPUs under mpiexec) give several result tables for one run,
one device each; a banner after a table starts the next run (a script running it twice).
"""

from __future__ import annotations

import csv
import io
import math
import re

from clusterbench.families.stream.spec import BANDWIDTH, BENCHMARK, TIME
from clusterbench.ingest.common import (
    ImportedRun,
    LogFormatError,
    add_error,
    add_warning,
    clean_lines,
    first_number,
    new_run,
    text_lines,
    to_float,
    to_int,
)
from clusterbench.ingest.registry import Importer, whole
from clusterbench.records import FAILED, INCOMPLETE, Measurement

KERNELS = ("Copy", "Mul", "Scale", "Add", "Add4", "Triad", "Dot", "Nstream")
SUMMARY_ROWS = ("GEOMEAN",)   # GPU-STREAM's geometric mean of the kernels: derived, not stored
_DTYPE = {"double": "double", "float": "float", "8": "double", "4": "float", "single": "float"}
# bytes per unit the tools print (their sources: BabelStream src/Unit.h, STREAM, cuda-stream)
UNIT_BYTES = {"mbytes": 1e6, "mb": 1e6, "gbytes": 1e9, "gb": 1e9, "tbytes": 1e12, "tb": 1e12,
              "mibytes": 2.0**20, "mib": 2.0**20, "gibytes": 2.0**30, "gib": 2.0**30, "tibytes": 2.0**40,
              "tib": 2.0**40}
_BANNER = re.compile(r"^(BabelStream|GPU-STREAM)\s*$|^STREAM version|^STREAM Benchmark implementation")
_RATE = re.compile(r"\b(MBytes|MiBytes|GBytes|GiBytes|MB|GB|TB|MiB|GiB|TiB)(?:/sec|/s)\b|Rate \((\w+)/s\)",
                   re.IGNORECASE)
_FAILURE = re.compile(r"Validation failed|FAILED validation|Sum was .* but should be|terminate called|what\(\):"
                      r"|\bAborted\b|Segmentation fault|double free|munmap_chunk|core dumped")
_CSV_RATE = re.compile(r"^(?:max_)?(\w+?)_per_sec$", re.IGNORECASE)


def _word(text: str, n: int) -> str:
    """The ``n``th word of ``text``; "" where a damaged line has fewer (no value: none stored)."""
    words = text.split()
    return words[n] if n < len(words) else ""


def _array_elements(mb_text: str, dtype: str) -> tuple[int | None, bool]:
    """Elements from 'Array size: 268.4 MB': BabelStream rounds, so snap to a power of two when the
    printed figure is that rounding of one (its default and usual ``-s`` values). Returns (n, exact)."""
    mb = first_number(mb_text)
    if mb is None or not math.isfinite(mb):   # hundreds of digits read as inf: no size
        return None, False
    size = 8 if dtype == "double" else 4
    approx = mb * 1e6 / size
    p2 = 2 ** round(approx).bit_length()
    for cand in (p2, p2 // 2):
        if abs(cand * size / 1e6 - mb) <= 0.05 + 1e-9:
            return cand, True
    return round(approx), False


class _Table:
    """How a text result table's columns read: bytes per unit of its rate, and the positions of
    the min/max/average times."""

    def __init__(self, header: str) -> None:
        m = _RATE.search(header)
        if not m:
            raise LogFormatError(f"a stream table header without a rate unit: {header.strip()!r}")
        self.unit = (m.group(1) or m.group(2)).lower()
        if self.unit not in UNIT_BYTES:
            raise LogFormatError(f"unknown rate unit {self.unit!r} in {header.strip()!r}")
        low = header.lower()
        if "min (sec)" in low:                       # BabelStream, GPU-STREAM
            self.order = ("min", "max", "avg")
        elif "avg time" in low and low.find("avg time") < low.find("min time"):  # STREAM, cuda-stream
            self.order = ("avg", "min", "max")
        else:
            raise LogFormatError(f"a stream table whose time columns are not known: {header.strip()!r}")


class _Run:
    def __init__(self, name: str) -> None:
        self.run = new_run("babelstream", name)
        self.ms: list[Measurement] = []
        self.dtype, self.array, self.exact = "double", None, False
        self.version = self.impl = self.program = ""
        self.devices: list[str] = []
        self.tables = 0
        self.table: _Table | None = None
        self.failed = False
        self.elided = 0
        self.notes: list[str] = []

    def error(self, line: str) -> None:
        add_error(self.run, line)
        if _FAILURE.search(line):
            self.failed = True


def _text(lines: list[str], name: str) -> list[ImportedRun]:
    runs: list[_Run] = []
    cur = _Run(name)
    for line in lines:
        s = line.strip()
        if not s:
            continue
        if _BANNER.match(s):
            if cur.tables:   # a banner after a result table: the next run of the tool
                runs.append(cur)
                cur = _Run(name)
            cur.program = s.split(" implementation")[0] if s.startswith("STREAM Benchmark") else s.split()[0]
            if s.startswith("STREAM version"):
                cur.version = s.split("$Revision:")[-1].strip(" $") if "$" in s else ""
                cur.impl = "STREAM"
            continue
        if s.startswith("Version:"):
            cur.version = s.split(":", 1)[1].strip()
        elif s.startswith("Implementation:"):
            cur.impl = s.split(":", 1)[1].strip()
        elif s.startswith("Precision:"):
            word = s.split(":", 1)[1].strip().strip("*").lower()  # '**double**' in a document copy
            cur.dtype = _DTYPE.get(word, word)
        elif s.startswith("Number of elements:"):
            cur.array, cur.exact = to_int(s.split(":", 1)[1].strip()), True
        elif s.startswith("GridSize:") and cur.array is None:
            cur.array, cur.exact = to_int(_word(s, 1)), True  # GPU-STREAM: one element per work-item
        elif s.startswith("Array size:") and not cur.exact:
            cur.array, cur.exact = _array_elements(s.split(":", 1)[1], cur.dtype)
        elif s.startswith("Array size (") and "=" in s:   # cuda-stream: 'Array size (double precision) = 536.87 MB'
            cur.dtype = _DTYPE.get(_word(s.split("(")[1], 0), cur.dtype)
            cur.array, cur.exact = _array_elements(s.split("=", 1)[1], cur.dtype)
        elif s.startswith("Array size =") and "elements" in s:  # McCalpin STREAM
            cur.array, cur.exact = to_int(_word(s.split("=")[1], 0)), True
        elif s.startswith("This system uses") and "bytes per array element" in s:
            cur.dtype = _DTYPE.get(_word(s, 3), cur.dtype)
        elif re.match(r"Using \w+ device", s):
            cur.devices.append(s.split("device", 1)[1].strip())
        elif s.startswith("Function"):
            cur.table = _Table(s)
            cur.tables += 1
        elif cur.table is not None and s.split()[0].rstrip(":") in SUMMARY_ROWS:
            cur.notes.append(f"{s.split()[0]} row not stored (derived from the kernels' rows)")
        elif cur.table is not None and re.match(r"[A-Za-z]\w*:?\s", s) and not _FAILURE.search(s):
            _row(cur, s)
        elif _FAILURE.search(s) or s.lower().startswith("error"):
            cur.error(s)
    runs.append(cur)
    return [r for r in (_finish(run) for run in runs) if r is not None]


def _row(cur: _Run, s: str) -> None:
    toks = s.split()
    kernel = toks[0].rstrip(":")
    vals = [to_float(t) for t in toks[1:5]]
    if len(vals) < 4 or any(v is None for v in vals):
        if any(t.strip(".") == "" for t in toks[1:5]):   # '..' where a document left the value out
            cur.elided += 1
        return
    assert cur.table is not None
    rate = vals[0]
    times = dict(zip(cur.table.order, vals[1:]))
    params: dict[str, object] = {"kernel": kernel, "dtype": cur.dtype, "device": str(cur.tables - 1)}
    if cur.array:
        params["array_size"] = cur.array
    cur.ms.append(BANDWIDTH(BENCHMARK, rate * (UNIT_BYTES[cur.table.unit] / 1e9), params))  # type: ignore[operator]
    for stat in ("min", "max", "avg"):
        cur.ms.append(TIME(BENCHMARK, times[stat] * 1e6, {**params, "stat": stat}))  # type: ignore[operator]


def _finish(cur: _Run) -> ImportedRun | None:
    run = cur.run
    if not cur.ms and not run.errors:
        if cur.elided:
            raise LogFormatError(f"{cur.elided} result rows whose values were left out ('..'): nothing to store")
        return None
    mccalpin = cur.impl == "STREAM" or cur.program == "STREAM Benchmark"
    tool = "stream" if mccalpin else "babelstream"
    run.source = f"{tool} {cur.version}".strip()
    run.meta["tool"] = tool
    if cur.version:
        run.versions[tool] = cur.version
    if cur.program and cur.program not in ("BabelStream", "STREAM"):
        run.meta["program"] = cur.program   # GPU-STREAM, the HIP port of cuda-stream
    if cur.impl:
        run.meta["implementation"] = cur.impl
    if cur.array and not cur.exact:
        run.meta["array_size_approx"] = "from the rounded 'Array size' in MB"
    # one entry per result table; an elided log may show fewer 'Using ... device' lines than tables
    run.devices = [cur.devices[min(i, len(cur.devices) - 1)] if cur.devices else f"device {i}"
                   for i in range(max(cur.tables, 1))]
    run.meta["tables"] = cur.tables
    if cur.notes:
        run.meta["notes"] = sorted(set(cur.notes))
    if cur.elided:
        run.meta["rows_elided"] = cur.elided
        run.status = INCOMPLETE
    if not cur.ms:
        run.status = INCOMPLETE   # died before its table
    if cur.failed:
        run.status = FAILED
    return ImportedRun(run, cur.ms)


def _csv(lines: list[str], name: str) -> list[ImportedRun]:
    run = new_run("babelstream", name)
    ms: list[Measurement] = []
    header: list[str] = []
    kind = ""
    table = -1
    devices: list[str] = []
    failed = False
    notes: list[str] = []
    elided = 0
    cut = ""   # the first row the log was cut in
    for line in lines:
        s = line.strip()
        if not s:
            continue
        low = s.lower()
        if low.startswith("function,") or low.startswith("phase,"):
            header = [h.strip() for h in s.split(",")]
            kind = "phase" if low.startswith("phase,") else "function"
            if kind == "function":
                table += 1
            continue
        if s.startswith("Using ") and "device" in s:
            devices.append(s.split("device", 1)[-1].strip())
            continue
        if _FAILURE.search(s):
            add_error(run, s)
            failed = True
            continue
        if not header or "," not in s:
            continue
        row = next(csv.DictReader(io.StringIO(s), fieldnames=header))   # v3.3's trailing comma: key None
        if kind == "phase":
            notes.append(f"{row.get(header[0])} phase not stored (array initialisation/read, not a kernel)")
            continue
        if "min_runtime" not in header:
            notes.append("--triad-only row not stored: its bandwidth is over the whole run, not from the "
                         "minimum time")
            continue
        if ".." not in s and any(row.get(h) is None for h in header if h):
            # fewer cells than the header names: the log was cut in this row (a killed job), and
            # its last cell may be the start of a number
            add_warning(run, f"a row with fewer values than its header (the log is cut short?), not stored: {s!r}")
            cut = cut or s
            continue
        got = _csv_row(row, header, table)
        if not got:
            elided += 1
        ms.extend(got)
    if not ms and not run.errors:
        if cut:
            raise LogFormatError(f"a result row with fewer values than its header (the log is cut short?): {cut!r}")
        if elided:
            raise LogFormatError(f"{elided} result rows without their values (left out of the log): nothing "
                                 "to store")
        return []
    run.source = "babelstream"
    run.devices = devices or [f"device {i}" for i in range(table + 1)]
    if notes:
        run.meta["notes"] = sorted(set(notes))
    if elided:
        run.meta["rows_elided"] = elided
        run.status = INCOMPLETE
    if failed:
        run.status = FAILED
    return [ImportedRun(run, ms)]


def _csv_row(row: dict[str | None, str | None], header: list[str], table: int) -> list[Measurement]:
    kernel = (row.get(header[0]) or "").strip()
    rate_key = next((k for k in header if _CSV_RATE.match(k)), "")
    m = _CSV_RATE.match(rate_key)
    unit = m.group(1).lower() if m else ""
    rate = to_float((row.get(rate_key) or "").strip())
    if unit not in UNIT_BYTES:
        raise LogFormatError(f"unknown BabelStream CSV rate column {rate_key!r}")
    if not kernel or rate is None:
        return []
    dtype = _DTYPE.get((row.get("sizeof") or "").strip(), (row.get("sizeof") or "").strip())
    params = {"kernel": kernel, "dtype": dtype, "device": str(table),
              "array_size": to_int((row.get("n_elements") or "").strip()) or 0}
    out = [BANDWIDTH(BENCHMARK, rate * (UNIT_BYTES[unit] / 1e9), params)]
    for stat in ("min", "max", "avg"):
        sec = to_float((row.get(f"{stat}_runtime") or "").strip())
        if sec is not None:
            out.append(TIME(BENCHMARK, sec * 1e6, {**params, "stat": stat}))
    return out


def parse(text: str, name: str = "") -> list[ImportedRun]:
    lines = list(clean_lines(text_lines(text)))
    if any(line.strip().lower().startswith("function,") for line in lines):
        result = _csv(lines, name)
    else:
        result = _text(lines, name)
    if result and any(line.strip() == ". . ." for line in lines):
        # A document quoting the output left parts out: the tables it shows are whole (the run
        # stays complete), but they need not be all the tool measured (8 ranks, 2 tables shown):
        # a warning says so wherever the run is shown or judged
        for r in result:
            r.run.meta["elided"] = "the log shows '. . .' where output was left out"
            add_warning(r.run, "the log shows '. . .' where output was left out: the tables shown are "
                               "whole, other devices' tables may be missing")
    return result


IMPORTERS = (
    Importer("babelstream", re.compile(r"BabelStream|GPU-STREAM|^\s*function,num_times,n_elements|STREAM version"
                                       r"|^\s*STREAM Benchmark implementation|Function\s+(MBytes|MiBytes)/sec"
                                       r"|^\s*Function\s+[MGT]i?B/s\s+Min \(sec\)|Validation failed on (a|b|c)\[\]"
                                       r"|Validation failed on sum\. Error", re.M | re.I),
             whole(parse), order=60, aliases=("stream",),
             starts=re.compile(r"^\s*(?:BabelStream|GPU-STREAM)\s*$|^\s*STREAM version \$Revision"
                               r"|^\s*STREAM Benchmark implementation|^\s*function,num_times,", re.M)),
)
