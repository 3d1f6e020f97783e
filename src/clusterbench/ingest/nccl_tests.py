"""nccl-tests / rccl-tests text output -> the records a native ``clusterbench coll`` run produces.

The parser is a line-by-line state machine, so a file of many concatenated runs streams through
in constant memory: ``parse_lines`` yields each run as soon as its footer (or the next run's
header) is seen. Rows are split on whitespace, never on columns; the column header, when present,
says which values follow the leading size/count/type[/redop][/root] fields. Old formats (an
``error`` column, no redop or root column, an empty redop), NCCL INFO lines anywhere, a ``#``
stripped by a log viewer, and logs cut mid-row are all read; see tests/data/nccl-tests/README.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from clusterbench.ingest.collectives import (
    BUSBW_FACTOR,
    infer_op,
    normalize_op,
    op_from_filename,
    ranks_from_ratio,
)
from clusterbench.ingest.common import (
    ImportedRun,
    add_error,
    clean_lines,
    new_run,
    to_float,
    to_int,
)
from clusterbench.records import COMPLETE, FAILED, INCOMPLETE, Measurement

BENCH_UNKNOWN = "collective"  # a table whose collective cannot be named (see docs/import.md)

_RANK = re.compile(
    r"Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+(\d+)\s+)?on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$")
_SWEEP_INTS = {"nthread": r"nThread:?\s+(\d+)", "ngpus": r"nGpus:?\s+(\d+)", "minbytes": r"minBytes:?\s+(\d+)",
               "maxbytes": r"maxBytes:?\s+(\d+)", "validation": r"validation:\s+(\d+)", "graph": r"graph:\s+(\d+)",
               "warmup_iters": r"warmupIters:\s+(\d+)"}
_NTHREAD = re.compile(r"nThread:?\s+(\d+)\s+nGpus:?\s+(\d+)")
_TESTS_VERSION = re.compile(r"nccl-tests version (\S+)(?:.*nccl-library=(\d+))?")
_RCCL_TESTS_VERSION = re.compile(r"rccl-tests:\s*Version\s+(\S+)", re.IGNORECASE)
_LIB_VERSION = re.compile(r"\b([NR]CCL) version (\S+)")
_START = re.compile(r"Collective test (starting|concluded):\s*(\S+)")
_OOB = re.compile(r"Out of bounds values\s*:\s*(\d+)\s*(\w*)")
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)\s*(\w*)")
_ERROR_MARKS = ("NCCL WARN", "Test NCCL failure", "Test CUDA failure", "Test HIP failure", "Test failure",
                "NCCL failure", "CUDA failure", "HIP failure", "# error:", "Segmentation fault",
                "terminate called", "Aborted")
_PROGRAM = re.compile(r"\b([a-z_]+_perf)(?:_mpi)?\b")
DEFAULT_TAIL = ["time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"]
_PLACEMENTS = ("out", "in")


def nccl_version_from_code(code: int) -> str:
    """NCCL_VERSION_CODE (22907, or 2708 before 2.9) as text: 2.29.7."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


@dataclass
class _Row:
    size: int
    count: int
    dtype: str
    redop: str
    root: int
    values: list[tuple[str, list[tuple[str, float, str, str]]]]  # (placement, [(metric, value, unit, stat)])


@dataclass
class _State:
    name: str
    tool: str = "nccl-tests"
    version: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    op: str | None = None
    op_hint: str | None = None  # from a command line quoted in the log (x_perf ...)
    tail: list[str] = field(default_factory=lambda: list(DEFAULT_TAIL))
    ranks: dict[int, tuple[str, str, int, int, str]] = field(default_factory=dict)  # host, name, pid, dev, bus
    rows: list[_Row] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    header: str = ""
    avg_busbw: float | None = None
    avg_ok: str = ""
    oob: int | None = None
    oob_ok: str = ""
    partial_row: bool = False
    seen: bool = False  # any nccl-tests line at all

    @property
    def has_results(self) -> bool:
        return bool(self.rows) or self.avg_busbw is not None


def _tail_blocks(tail: list[str]) -> list[list[tuple[int, str]]]:
    """Split the value columns into one block per placement: [(offset, column name), ...]."""
    blocks: list[list[tuple[int, str]]] = []
    for i, name in enumerate(tail):
        if name in ("time", "cputime"):
            blocks.append([])
        if blocks:
            blocks[-1].append((i, name))
    return blocks


_COLUMN_METRICS = {"time": ("time_us", "us", ""), "cputime": ("time_us", "us", "cpu"),
                   "algbw": ("algbw", "GB/s", ""), "busbw": ("busbw", "GB/s", ""),
                   "#wrong": ("wrong", "", ""), "wrong": ("wrong", "", ""), "error": ("max_error", "", ""),
                   "res": ("max_error", "", ""), "i_min": ("iter_time_us", "us", "min"),
                   "i_max": ("iter_time_us", "us", "max"), "i_p99": ("iter_time_us", "us", "p99"),
                   "i_cv%": ("iter_cv_pct", "%", "")}


def _parse_row(toks: list[str], tail: list[str]) -> _Row | None:
    n_tail = len(tail)
    lead = toks[: len(toks) - n_tail]
    if not 3 <= len(lead) <= 5:
        return None
    size, count = to_int(lead[0]), to_int(lead[1])
    if size is None or count is None or not lead[2][:1].isalpha():
        return None
    redop, root = "", -1
    for tok in lead[3:]:
        value = to_int(tok)
        if value is None:
            redop = tok
        else:
            root = value
    values = []
    for placement, block in zip(_PLACEMENTS, _tail_blocks(tail)):
        out = []
        for offset, column in block:
            token = toks[len(lead) + offset]
            metric, unit, stat = _COLUMN_METRICS.get(column, (column, "", ""))
            if metric == "wrong" and ("." in token or "e" in token) and to_float(token) is not None \
                    and to_float(token) != int(to_float(token) or 0):
                metric = "max_error"  # an old-style relative error under a #wrong-less header
            value = to_float(token)
            if value is not None:
                out.append((metric, value, unit, stat))
        values.append((placement, out))
    return _Row(size, count, lead[2], redop, root, values)


class NcclTextParser:
    """Feed cleaned lines; collect finished runs from ``feed`` and ``finish``."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self.state = _State(name)

    # -- lines --------------------------------------------------------------------------
    def feed(self, line: str) -> ImportedRun | None:
        stripped = line.strip()
        if not stripped:
            return None
        first = stripped[0]
        if first.isdigit() and " NCCL INFO " not in stripped:
            toks = stripped.split()
            row = _parse_row(toks, self.state.tail)
            if row is not None:
                self.state.rows.append(row)
                self.state.seen = True
                self.state.partial_row = False
                return None
            if len(toks) < 3 + len(self.state.tail) and to_int(toks[0]) is not None \
                    and (len(toks) < 2 or to_int(toks[1]) is not None):
                self.state.partial_row = True  # a row cut short: the log ends mid-sweep
            return None
        if " NCCL INFO " in stripped:
            self._versions(stripped)
            return None
        if any(mark in stripped for mark in _ERROR_MARKS):
            self.state.errors.append(stripped)
            self.state.seen = True
            return None
        body = stripped.lstrip("#").strip()
        return self._header_or_footer(stripped, body)

    def _versions(self, text: str) -> None:
        m = _LIB_VERSION.search(text)
        if m:
            lib = m.group(1).lower()
            self.state.versions.setdefault(lib, m.group(2))
            if lib == "rccl":
                self.state.tool = "rccl-tests"

    def _new_run_if_busy(self) -> ImportedRun | None:
        if self.state.has_results or self.state.errors:
            done = self._build()
            self.state = _State(self.name)
            return done
        return None

    def _header_or_footer(self, stripped: str, body: str) -> ImportedRun | None:
        st = self.state
        finished: ImportedRun | None = None
        m = _START.search(body)
        if m:
            if m.group(1) == "starting":
                finished = self._new_run_if_busy()
                self.state.op = normalize_op(m.group(2)) or self.state.op
                self.state.seen = True
                return finished
            st.op = normalize_op(m.group(2)) or st.op
            done = self._build()
            self.state = _State(self.name)
            return done
        if body.startswith(("nccl-tests version", "NCCL Tests compiled")) or _RCCL_TESTS_VERSION.search(body):
            finished = self._new_run_if_busy()
            st = self.state
            st.seen = True
            tv = _TESTS_VERSION.search(body)
            rv = _RCCL_TESTS_VERSION.search(body)
            if tv:
                st.version = tv.group(1)
                if tv.group(2):
                    st.versions["nccl"] = nccl_version_from_code(int(tv.group(2)))
            elif rv:
                st.tool, st.version = "rccl-tests", rv.group(1)
            return finished
        if _NTHREAD.search(body):
            finished = self._new_run_if_busy()
            self.state.header = body
            self.state.seen = True
            return finished
        m = _RANK.search(body)
        if m and body.startswith("Rank"):
            st.ranks[int(m.group(1))] = (m.group(3), m.group(6).strip(), int(m.group(2) or -1),
                                         int(m.group(4)), m.group(5))
            st.seen = True
            return None
        toks = body.split()
        if ("size" in toks or "bytes" in toks) and "algbw" in toks:
            if st.has_results:  # a second table without a new header line: a new run
                finished = self._new_run_if_busy()
                st = self.state
            first_time = next((i for i, t in enumerate(toks) if t in ("time", "cputime")), None)
            if first_time is not None:
                tail = toks[first_time:]
                st.tail = tail[:-1] if tail[-1] == "timestamp" else tail
            st.seen = True
            return finished
        m = _OOB.search(body)
        if m:
            st.oob, st.oob_ok = int(m.group(1)), m.group(2)
            st.seen = True
            return None
        m = _AVG.search(body)
        if m:
            st.avg_busbw, st.avg_ok = to_float(m.group(1)), m.group(2)
            st.seen = True
            return None
        if "version" in body:
            self._versions(body)
        if "_perf" in body and st.op_hint is None:
            m = _PROGRAM.search(body)
            st.op_hint = normalize_op(m.group(1)) if m else None
        return None

    def finish(self) -> ImportedRun | None:
        if not (self.state.seen and (self.state.has_results or self.state.errors)):
            return None
        done = self._build()
        self.state = _State(self.name)
        return done

    # -- records ------------------------------------------------------------------------
    def _build(self) -> ImportedRun:
        st = self.state
        run = new_run(st.tool, self.name)
        run.source = f"{st.tool} {st.version}".strip()
        run.versions = dict(st.versions)
        if st.version:
            run.versions[st.tool] = st.version
        for line in st.errors:
            add_error(run, line)
        ranks = len(st.ranks) or None
        if st.ranks:
            order = sorted(st.ranks)
            run.meta["rank_hosts"] = [st.ranks[r][0] for r in order]
            run.devices = [st.ranks[r][1] for r in order]
            run.hosts = list(dict.fromkeys(run.meta["rank_hosts"]))
            run.meta["rank_pids"] = [st.ranks[r][2] for r in order]
            run.meta["rank_device_index"] = [st.ranks[r][3] for r in order]
            run.meta["rank_bus_id"] = [st.ranks[r][4] for r in order]
        if st.header:
            run.meta["header"] = st.header
        pair = _best_pair(st.rows)
        ratio = pair[1] / pair[0] if pair else None
        op = st.op or st.op_hint or op_from_filename(self.name)
        if op is None and st.rows:
            first = st.rows[0]
            op = infer_op(first.redop not in ("", "none"), first.root, ratio, ranks)
            if op:
                run.meta["op_inferred"] = "redop/root columns and busbw/algbw"
        if ranks is None and op and pair:
            ranks = ranks_from_ratio(op, *pair)
            if ranks:
                run.meta["ranks_inferred"] = "busbw/algbw"
        op = op or BENCH_UNKNOWN
        run.meta["op"] = op
        if st.header:
            run.meta[f"coll_sweep.{op}"] = sweep_from_header(st.header)
        run.ranks = ranks or 0
        ms: list[Measurement] = []
        for row in st.rows:
            for placement, values in row.values:
                params = {"bytes": row.size, "count": row.count, "dtype": row.dtype,
                          "redop": row.redop or "none", "root": row.root, "placement": placement,
                          "ranks": run.ranks}
                for metric, value, unit, stat in values:
                    p = params if not stat else {**params, "stat": stat}
                    ms.append(Measurement(op, metric, value, unit, p))
        if st.avg_busbw is not None:
            ms.append(Measurement(op, "avg_busbw", st.avg_busbw, "GB/s", {"ranks": run.ranks}))
        if st.oob is not None:
            ms.append(Measurement(op, "out_of_bounds", float(st.oob), "", {"ranks": run.ranks}))
        if st.avg_busbw is None:
            run.status = INCOMPLETE
            run.meta["truncated"] = "no footer (Avg bus bandwidth): the log ends mid-sweep"
        else:
            run.status = COMPLETE
        if st.oob_ok == "FAILED" or st.avg_ok == "FAILED":
            run.status = FAILED
        if st.partial_row:
            run.meta["partial_last_row"] = True
        return ImportedRun(run, ms)


def sweep_from_header(header: str) -> dict[str, object]:
    """The nThread line's settings, under the keys the collective table renderer reads."""
    sweep: dict[str, object] = {}
    for key, pattern in _SWEEP_INTS.items():
        m = re.search(pattern, header)
        if m:
            sweep[key] = int(m.group(1))
    m = re.search(r"step:\s+(\d+)\((\w+)\)", header)
    if m:
        sweep["step"], sweep["step_kind"] = int(m.group(1)), m.group(2)
    for word, value in re.findall(r"(?:(warmup|agg)\s+)?iters:\s+(\d+)", header):
        sweep[{"warmup": "warmup_iters", "agg": "agg_iters"}.get(word, "iters")] = int(value)
    return sweep


def _best_pair(rows: list[_Row]) -> tuple[float, float] | None:
    """(algbw, busbw) of the row with the largest algbw (its two-decimal rounding matters least)."""
    best: tuple[float, float] | None = None
    for row in rows:
        for _placement, values in row.values:
            d = {metric: value for metric, value, _unit, _stat in values}
            alg, bus = d.get("algbw"), d.get("busbw")
            if alg and bus and (best is None or alg > best[0]):
                best = (alg, bus)
    return best if best and best[0] >= 1.0 else None


def parse_lines(lines: Iterable[str], name: str = "") -> Iterator[ImportedRun]:
    """Runs in an nccl-tests/rccl-tests text log, each yielded as soon as it is complete."""
    parser = NcclTextParser(name)
    for line in clean_lines(lines):
        done = parser.feed(line)
        if done is not None:
            yield done
    done = parser.finish()
    if done is not None:
        yield done


def factor_for(op: str, ranks: int) -> float | None:
    f = BUSBW_FACTOR.get(op)
    return f(ranks) if f and ranks > 0 else None
