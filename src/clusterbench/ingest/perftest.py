"""perftest (ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw and the _lat tools) -> RDMA records.

perftest's ``MB/sec`` (before 2024) and ``MiB/sec`` (after, the same unit renamed) are 2^20
bytes per second (its source divides by 0x100000; its own output agrees: bytes x MsgRate = BW x
2^20) and ``--report_gbits`` prints ``Gb/sec`` = 10^9 bits per second; all become GB/s (10^9
bytes per second). A unit not known is refused, never guessed.

``BW peak`` is not measured in duration mode (``-D``), in infinite runs, on the server side of
send tests and with more than 20000 iterations: perftest then says ``WARNING: BW peak won't be
measured in this run`` and prints 0.00, which is not a bandwidth of zero; no ``bw_peak`` record
is stored (a peak of 0.00 beside a non-zero average is the same case, its warning lost in a copy).
``Conflicting CPU frequency values detected`` is kept as a warning with the run.

Server and client output is often interleaved in one log, which repeats header lines and result
rows; a row whose message size was already read is not read again.

``--out_json`` files (perftest_parameters.c, write_test_info_to_file and write_*_report_to_file)
hold one test's ``test_info`` and its ``results`` (``MsgSize``, ``n_iterations``, ``BW_peak``,
``BW_average``, ``MsgRate``; the ``t_*`` and ``percentile_*`` figures of a latency test), read into
the records a text log's row gives. perftest opens the file anew for every result, so an ``-a``
run leaves only its last size. Standard JSON since perftest 24.01.0-0.38; before, from 4.5-0.11,
the same lines without quotes around keys and with trailing commas, read line by line. The file
names no bandwidth unit: perftest computes ``BW_average`` = ``MsgSize`` x ``MsgRate`` x 10^6 / F,
F = 2^20 (MiB/sec) or 1.25 x 10^8 (``--report_gbits``), so the file's own figures tell which F
it used (they differ 119-fold); where they cannot (no message rate), no bandwidth is stored.
"""

from __future__ import annotations

import json
import math
import re

from clusterbench.families.net.spec import BW_AVG, BW_PEAK, LATENCY, MSG_RATE
from clusterbench.ingest.common import (
    ImportedRun,
    LogFormatError,
    add_error,
    add_warning,
    clean_lines,
    is_warning,
    new_run,
    shown,
    text_lines,
    to_float,
    to_int,
)
from clusterbench.ingest.registry import Importer, whole
from clusterbench.records import INCOMPLETE, Measurement

_TITLE = re.compile(r"^(RDMA_Write|RDMA_Read|Send|Atomic\w*|Write|Read)\b([\w /]*?)\s*\b(BW|Latency)\s+Test",
                    re.IGNORECASE)
_BENCH = {"rdma_write": "ib_write", "write": "ib_write", "rdma_read": "ib_read", "read": "ib_read",
          "send": "ib_send"}
_BW_UNITS = {"MB/sec": 1048576 / 1e9, "MiB/sec": 1048576 / 1e9, "Gb/sec": 1e9 / 8 / 1e9}
NO_PEAK = "BW peak not measured (perftest prints 0.00: duration mode, -n above 20000 or a send server)"
_LAT_STATS = {"t_min": "min", "t_max": "max", "t_typical": "typical", "t_avg": "avg", "t_stdev": "stdev",
              "99%": "p99", "99.9%": "p99.9"}
_SETTINGS = re.compile(r"([A-Za-z][\w .*-]*?)\s*:\s*(\S+)")


_TWO_WORDS = re.compile(r"\b(BW|MsgRate) (peak|average|Port\d)\b|\b(tps) (average)\b")


def _columns(line: str) -> list[str]:
    """Column keys of a result header: '#bytes #iterations BW peak[MB/sec] ...' -> names.

    Names of two words are joined (perftest_parameters.h RESULT_FMT*): ``BW peak``, the per-port
    ``BW Port1[MiB/sec]``/``MsgRate Port1[Mpps]`` (dual port), ``tps average`` (latency in duration
    mode): split, each would shift the columns after it and the row would not be read.
    """
    text = _TWO_WORDS.sub(lambda m: "_".join(g for g in m.groups() if g), line)
    text = text.replace("99% percentile", "99%").replace("99.9% percentile", "99.9%")
    return text.split()


class _Run:
    def __init__(self, name: str, title: str) -> None:
        self.run = new_run("perftest", name)
        m = _TITLE.match(title)
        op = m.group(1).lower() if m else "rdma_write"
        base = "ib_atomic" if op.startswith("atomic") else _BENCH.get(op, "ib_" + op)
        self.kind = "lat" if m and m.group(3).lower() == "latency" else "bw"
        self.bench = f"{base}_{self.kind}"
        self.bidir = bool(m and "bidirectional" in m.group(2).lower())
        if m and m.group(2).strip():
            self.run.meta["variant"] = m.group(2).strip()  # e.g. "Post List"
        self.run.meta["test"] = title.strip()
        self.params: dict[str, object] = {}
        self.cols: list[str] = []
        self.seen: set[int] = set()
        self.ms: list[Measurement] = []
        self.no_peak = False   # perftest said it will not measure BW peak

    def setting(self, line: str) -> None:
        for key, value in _SETTINGS.findall(line):
            key = key.strip()
            if key == "Device":
                self.params["device"] = value
                if value not in self.run.devices:
                    self.run.devices.append(value)
            elif key == "Number of qps":
                self.params["qps"] = to_int(value)
            elif key in ("Link type", "Transport type", "Connection type", "Mtu"):
                self.run.meta[key.lower().replace(" ", "_")] = value

    def row(self, toks: list[str]) -> None:
        size = to_int(toks[0])
        if size is None or size in self.seen or len(toks) < len(self.cols):
            return
        vals = dict(zip(self.cols, toks))
        params = {**self.params, "bytes": size, "bidirectional": self.bidir}
        iters = to_int(vals.get("#iterations", ""))
        if iters is not None:
            params["iterations"] = iters
        added = False
        avg = next((to_float(v) for c, v in vals.items() if c.startswith("BW_average")), None)
        for col, raw in vals.items():
            value = to_float(raw)
            if value is None:
                continue
            if col.startswith(("BW_peak", "BW_average")):
                unit = col[col.find("[") + 1: col.find("]")]
                if unit not in _BW_UNITS:
                    raise LogFormatError(f"perftest bandwidth in an unknown unit {unit!r} ({col})")
                peak = col.startswith("BW_peak")
                if peak and value == 0.0 and (self.no_peak or (avg or 0.0) > 0.0):
                    self.run.meta["bw_peak"] = NO_PEAK
                    continue
                metric = BW_PEAK if peak else BW_AVG
                self.ms.append(metric(self.bench, value * _BW_UNITS[unit], params))
                added = True
            elif col.startswith("MsgRate["):   # not a port's own MsgRate_Port1
                self.ms.append(MSG_RATE(self.bench, value, params))
            else:
                key = col.split("[", 1)[0]
                if key in _LAT_STATS:
                    self.ms.append(LATENCY(self.bench, value, {**params, "stat": _LAT_STATS[key]}))
                    added = True
        if added:
            self.seen.add(size)


# --out_json: a key and its value on a line, as perftest writes them (keys quoted since 24.01)
_JSON_LINE = re.compile(r'^\s*"?([A-Za-z][\w .]*?)"?\s*:\s*(.*?)\s*,?\s*$')
_JSON_SIGNATURE = re.compile(r'^\s*\{?\s*"?test_info"?\s*:\s*\{', re.M)
_JSON_TESTS = {"send": "ib_send", "send_imm": "ib_send", "rdma_write": "ib_write", "rdma_write_imm": "ib_write",
               "rdma_read": "ib_read", "atomic": "ib_atomic"}
_JSON_LAT = {"t_min": "min", "t_max": "max", "t_typical": "typical", "t_avg": "avg", "t_stdev": "stdev",
             "percentile_99": "p99", "percentile_99.9": "p99.9"}
# perftest's bandwidth divisors (print_report_bw's format_factor), by the unit they give
_FACTORS = {"MiB/sec": 1048576.0, "Gb/sec": 125e6}


def _json_sections(text: str) -> dict[str, dict[str, object]]:
    """``test_info`` and ``results`` of an --out_json file, standard JSON or perftest's older
    lines (``test: RDMA_Write_BW_Test,``)."""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and all(isinstance(doc.get(k), dict) for k in ("test_info", "results")):
        return {k: doc[k] for k in ("test_info", "results")}
    sections: dict[str, dict[str, object]] = {}
    current: dict[str, object] | None = None
    for line in text_lines(text):
        s = line.strip()
        if s in ("", "{", "}", "},"):
            continue
        m = _JSON_LINE.match(s)
        if m is None:
            raise LogFormatError(f"perftest --out_json file with a line it does not write: {shown(s)}")
        key, value = m.group(1).strip(), m.group(2)
        if value == "{":
            current = sections.setdefault(key, {})
        elif current is not None:
            current[key] = value.strip('"')
    if "results" not in sections:
        raise LogFormatError("perftest --out_json file without its \"results\"")
    sections.setdefault("test_info", {})
    return sections


def _json_number(results: dict[str, object], key: str) -> float | None:
    value = results.get(key)
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else to_float(str(value))
    return float(number) if number is not None and math.isfinite(number) else None


def _bw_factor(size: int, bw: float, rate: float | None) -> str | None:
    """The unit of the file's bandwidths, from its own figures (see the module doc), or None."""
    if not rate or rate <= 0 or bw <= 0:
        return None
    divisor = size * rate * 1e6 / bw
    unit, factor = min(_FACTORS.items(), key=lambda kv: abs(math.log(divisor / kv[1])))
    # the two candidates are 119x apart: a ratio not within 2x of one is no perftest file's
    return unit if abs(math.log(divisor / factor)) < math.log(2) else None


def parse_json(text: str, name: str = "") -> list[ImportedRun]:
    """One --out_json file -> its one run."""
    sections = _json_sections(text)
    info, results = sections["test_info"], sections["results"]
    test = str(info.get("test", ""))
    words = test.split("_")
    kind = "lat" if "Latency" in words else "bw" if "BW" in words else ""
    head = "_".join(words[:2]).lower() if words[:2] in (["RDMA", "Write"], ["RDMA", "Read"], ["Send", "imm"]) \
        else words[0].lower()
    if head == "rdma_write" and words[2:3] == ["imm"]:
        head = "rdma_write_imm"
    base = _JSON_TESTS.get(head)
    if base is None or not kind:
        raise LogFormatError(f"perftest --out_json file of a test it does not name: {shown(test)}")
    size = to_int(str(results.get("MsgSize", "")))
    if size is None:
        # --output=bandwidth|message_rate|latency writes one figure and no message size
        raise LogFormatError("perftest --out_json file without a message size (run with --output=...?): "
                             "no result row to store")
    r = _Run(name, "")
    r.bench = f"{base}_{kind}"
    r.bidir = "Bidirectional" in words
    r.run.meta["test"] = test
    device = info.get("Device")
    if isinstance(device, str) and device:
        r.params["device"] = device
        r.run.devices.append(device)
    qps = to_int(str(info.get("Number_of_qps", "")))
    if qps is not None:
        r.params["qps"] = qps
    for key in ("Link_type", "Transport_type", "Connection_type", "Mtu"):
        if key in info:
            r.run.meta[key.lower()] = str(info[key])
    params: dict[str, object] = {**r.params, "bytes": size, "bidirectional": r.bidir}
    iters = to_int(str(results.get("n_iterations", "")))
    if iters is not None:
        params["iterations"] = iters
    if kind == "bw":
        avg, peak = _json_number(results, "BW_average"), _json_number(results, "BW_peak")
        rate = _json_number(results, "MsgRate")
        unit = _bw_factor(size, avg, rate) if avg is not None else None
        if unit is None and (avg or peak):
            add_warning(r.run, "bandwidth not stored: an --out_json file names no unit, and its message rate "
                               "does not tell MiB/sec from Gb/sec")
        elif unit is not None and avg is not None:
            r.run.meta["bw_unit"] = unit
            scale = _BW_UNITS[unit]
            r.ms.append(BW_AVG(r.bench, avg * scale, params))
            if peak is not None and peak == 0.0 and avg:
                r.run.meta["bw_peak"] = NO_PEAK
            elif peak is not None:
                r.ms.append(BW_PEAK(r.bench, peak * scale, params))
        if rate is not None:
            r.ms.append(MSG_RATE(r.bench, rate, params))
    else:
        for key, stat in _JSON_LAT.items():
            value = _json_number(results, key)
            if value is not None:
                r.ms.append(LATENCY(r.bench, value, {**params, "stat": stat}))
    if not r.ms:
        raise LogFormatError("perftest --out_json file without a figure to store")
    r.run.source = "perftest"
    r.run.meta["benchmark"] = r.bench
    r.run.meta["format"] = "out_json"
    return [ImportedRun(r.run, r.ms)]


def parse(text: str, name: str = "") -> list[ImportedRun]:
    """A perftest log, or an --out_json file."""
    if _JSON_SIGNATURE.search(text[:4096]) and not _TITLE_LINE.search(text):
        return parse_json(text, name)
    return parse_text(text, name)


def parse_text(text: str, name: str = "") -> list[ImportedRun]:
    runs: list[_Run] = []
    cur: _Run | None = None
    errors: list[str] = []
    no_peak = False   # the warning comes before the test's title
    for line in clean_lines(text_lines(text)):
        s = line.strip()
        if not s:
            continue
        if "BW peak won't be measured" in s:
            no_peak = True
            continue
        if _TITLE.match(s):
            if cur is None or (cur.ms and cur.run.meta["test"] != s):
                cur = _Run(name, s)
                runs.append(cur)
            cur.no_peak = cur.no_peak or no_peak
            no_peak = False
            continue
        if s.startswith("Conflicting CPU frequency values detected"):
            if cur is not None:
                add_warning(cur.run, s)
            continue
        if cur is None:
            if "error" in s.lower() or "fail" in s.lower():
                errors.append(s)
            continue
        if s.startswith("#bytes"):
            cur.cols = _columns(s)
        elif cur.cols and s[0].isdigit():
            cur.row(s.split())
        elif ":" in s and not s.startswith(("local address", "remote address", "*")):
            cur.setting(s)
        if re.search(r"\b(error|failed|Couldn't|Unable)\b", s, re.IGNORECASE) and "Data ex. method" not in s:
            if is_warning(s):   # 'libibverbs: Warning: couldn't load driver ...': a warning, not a failure
                add_warning(cur.run, s)
            else:
                add_error(cur.run, s)
    out = []
    for r in runs:
        if not r.ms:
            continue
        r.run.source = "perftest"
        for e in errors:
            add_error(r.run, e)
        if r.run.errors:
            r.run.status = INCOMPLETE
        r.run.meta["benchmark"] = r.bench
        out.append(ImportedRun(r.run, r.ms))
    return out


_TITLE_LINE = re.compile(r"^\s*(?:RDMA_Write|RDMA_Read|Send|Atomic\w*|Write|Read)\b[\w /]*?\b(?:BW|Latency)"
                         r"\s+Test\s*$", re.M)

IMPORTERS = (
    Importer("perftest", re.compile(r"(RDMA_Write|RDMA_Read|Send|Atomic\w*)\b[\w /]*?\b(BW|Latency)\s+Test"
                                    r"|#bytes\s+#iterations\s+(BW peak|t_min)|" + _JSON_SIGNATURE.pattern, re.M),
             whole(parse), order=90, starts=_TITLE_LINE),
)
