"""BabelStream (text and ``--csv``, any model) and McCalpin STREAM output -> ``stream`` records.

BabelStream prints MBytes/sec with MB = 10^6 bytes (``--mibibytes``: MiB = 2^20), so GB/s =
MBytes/sec / 1000. Its bandwidth comes from the minimum time. Several processes writing into one
log (8 GPUs under mpiexec) give several result tables: each table is one device, numbered in the
order the tables appear (BabelStream does not print which device a table belongs to).
"""

from __future__ import annotations

import csv
import io
import re

from clusterbench.families.stream.spec import BANDWIDTH, BENCHMARK, TIME
from clusterbench.ingest.common import (
    ImportedRun,
    clean_lines,
    first_number,
    new_run,
    to_float,
    to_int,
)
from clusterbench.ingest.registry import Importer, whole
from clusterbench.records import Measurement

KERNELS = ("Copy", "Mul", "Add", "Triad", "Dot", "Nstream", "Scale")
_DTYPE = {"double": "double", "float": "float", "8": "double", "4": "float"}


def _array_elements(mb_text: str, dtype: str) -> tuple[int | None, bool]:
    """Elements from 'Array size: 268.4 MB': BabelStream rounds, so snap to a power of two when the
    printed figure is that rounding of one (its default and usual ``-s`` values). Returns (n, exact)."""
    mb = first_number(mb_text)
    if mb is None:
        return None, False
    size = 8 if dtype == "double" else 4
    approx = mb * 1e6 / size
    p2 = 2 ** round(approx).bit_length()
    for cand in (p2, p2 // 2):
        if abs(cand * size / 1e6 - mb) <= 0.05 + 1e-9:
            return cand, True
    return round(approx), False


def _text(lines: list[str], name: str) -> ImportedRun | None:
    run = new_run("babelstream", name)
    ms: list[Measurement] = []
    dtype, array, exact, version, impl = "double", None, False, "", ""
    devices: list[str] = []
    factor = 1e-3
    table = -1
    mccalpin = False
    for line in lines:
        s = line.strip()
        if s.startswith("Version:"):
            version = s.split(":", 1)[1].strip()
        elif s.startswith("Implementation:"):
            impl = s.split(":", 1)[1].strip()
        elif s.startswith("Precision:"):
            word = s.split(":", 1)[1].strip().strip("*").lower()  # '**double**' in a document copy
            dtype = _DTYPE.get(word, word)
        elif s.startswith("Array size:"):
            array, exact = _array_elements(s.split(":", 1)[1], dtype)
        elif s.startswith("Array size =") and "elements" in s:  # McCalpin STREAM
            array, exact, mccalpin = to_int(s.split("=")[1].split()[0]), True, True
        elif s.startswith("STREAM version"):
            version, impl, mccalpin = s.split("$Revision:")[-1].strip(" $") if "$" in s else "", "STREAM", True
        elif s.startswith("This system uses") and "bytes per array element" in s:
            dtype = _DTYPE.get(s.split()[3], dtype)
        elif re.match(r"Using \w+ device", s):
            devices.append(s.split("device", 1)[1].strip())
        elif s.startswith("Function"):
            table += 1
            factor = 1048576 / 1e9 if "MiBytes" in s else 1e-3
        elif table >= 0 and s.split()[:1] and s.split()[0].rstrip(":") in KERNELS:
            toks = s.split()
            kernel = toks[0].rstrip(":")
            vals = [to_float(t) for t in toks[1:5]]
            if len(vals) < 4 or any(v is None for v in vals):
                continue
            rate, t_min, t_max, t_avg = vals[0], vals[1], vals[2], vals[3]
            if mccalpin:  # Best Rate MB/s, Avg time, Min time, Max time
                t_avg, t_min, t_max = vals[1], vals[2], vals[3]
            params = {"kernel": kernel, "dtype": dtype, "device": str(table)}
            if array:
                params["array_size"] = array
            ms.append(BANDWIDTH(BENCHMARK, rate * factor, params))
            for stat, sec in (("min", t_min), ("max", t_max), ("avg", t_avg)):
                ms.append(TIME(BENCHMARK, sec * 1e6, {**params, "stat": stat}))
    if not ms:
        return None
    tool = "stream" if mccalpin and impl == "STREAM" else "babelstream"
    run.source = f"{tool} {version}".strip()
    run.meta["tool"] = tool
    if version:
        run.versions[tool] = version
    if impl:
        run.meta["implementation"] = impl
    if array and not exact:
        run.meta["array_size_approx"] = "from the rounded 'Array size' in MB"
    # one entry per result table; an elided log may show fewer 'Using ... device' lines than tables
    run.devices = [devices[min(i, len(devices) - 1)] if devices else f"device {i}" for i in range(table + 1)]
    run.meta["tables"] = table + 1
    return ImportedRun(run, ms)


def _csv(text: str, name: str) -> ImportedRun | None:
    run = new_run("babelstream", name)
    ms: list[Measurement] = []
    header: list[str] = []
    table = -1
    devices = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("function,"):
            header = s.split(",")
            table += 1
            continue
        if s.startswith(("phase,", "Using ")) or not header or "," not in s:
            if s.startswith("Using "):
                devices.append(s.split("device", 1)[-1].strip())
            continue
        row = next(csv.DictReader(io.StringIO(s), fieldnames=header))
        kernel = row.get("function", "")
        rate_key = next((k for k in header if k.startswith("max_m")), "")
        rate = to_float(row.get(rate_key, ""))
        if kernel not in KERNELS or rate is None:
            continue
        dtype = _DTYPE.get(row.get("sizeof", ""), row.get("sizeof", ""))
        params = {"kernel": kernel, "dtype": dtype, "device": str(table),
                  "array_size": to_int(row.get("n_elements", "")) or 0}
        factor = 1048576 / 1e9 if "mibytes" in rate_key else 1e-3
        ms.append(BANDWIDTH(BENCHMARK, rate * factor, params))
        for stat in ("min", "max", "avg"):
            sec = to_float(row.get(f"{stat}_runtime", ""))
            if sec is not None:
                ms.append(TIME(BENCHMARK, sec * 1e6, {**params, "stat": stat}))
    if not ms:
        return None
    run.source = "babelstream"
    run.devices = devices or [f"device {i}" for i in range(table + 1)]
    return ImportedRun(run, ms)


def parse(text: str, name: str = "") -> list[ImportedRun]:
    lines = list(clean_lines(text.splitlines()))
    if any(line.strip().startswith("function,") for line in lines):
        result = _csv("\n".join(lines), name)
    else:
        result = _text(lines, name)
    if result is None:
        return []
    if any(line.strip() == ". . ." for line in lines):
        # a document quoting the output left parts out; the tables it shows are whole
        result.run.meta["elided"] = "the log shows '. . .' where output was left out"
    return [result]


IMPORTERS = (
    Importer("babelstream", re.compile(r"BabelStream|GPU-STREAM|^\s*function,num_times,n_elements|STREAM version"
                                       r"|Function\s+(MBytes|MiBytes)/sec", re.M), whole(parse), order=60,
             aliases=("stream",)),
)
