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

from clusterbench.families.collectives.spec import AVG_BUSBW, OUT_OF_BOUNDS, op_in_text, op_name
from clusterbench.ingest.collectives import infer_op, ranks_from_ratio
from clusterbench.ingest.common import (
    MAX_ERROR_LINES,
    ImportedRun,
    add_error,
    clean_lines,
    new_run,
    to_float,
    to_int,
)
from clusterbench.ingest.nccl_rows import (
    DEFAULT_LAYOUT,
    Layout,
    NcclTable,
    TableRow,
    best_bandwidths,
    parse_row,
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
_ERROR_RE = re.compile("|".join(re.escape(mark) for mark in _ERROR_MARKS))
_PROGRAM = re.compile(r"\b([a-z_]+_perf)(?:_mpi)?\b")


def nccl_version_from_code(code: int) -> str:
    """NCCL_VERSION_CODE (22907, or 2708 before 2.9) as text: 2.29.7."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


@dataclass
class _State:
    name: str
    tool: str = "nccl-tests"
    version: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    op: str | None = None
    op_hint: str | None = None  # from a command line quoted in the log (x_perf ...)
    layout: Layout = DEFAULT_LAYOUT
    ranks: dict[int, tuple[str, str, int, int, str]] = field(default_factory=dict)  # host, name, pid, dev, bus
    rows: list[TableRow] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    header: str = ""
    avg_busbw: float | None = None
    avg_ok: str = ""
    oob: int | None = None
    oob_ok: str = ""
    partial_row: bool = False
    errors_dropped: int = 0
    seen: bool = False  # any nccl-tests line at all

    @property
    def has_results(self) -> bool:
        return bool(self.rows) or self.avg_busbw is not None


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
            row = parse_row(toks, self.state.layout)
            if row is not None:
                self.state.rows.append(row)
                self.state.seen = True
                self.state.partial_row = False
                return None
            if len(toks) < 3 + self.state.layout.ntail and to_int(toks[0]) is not None \
                    and (len(toks) < 2 or to_int(toks[1]) is not None):
                self.state.partial_row = True  # a row cut short: the log ends mid-sweep
            return None
        if " NCCL INFO " in stripped:  # most lines of a NCCL_DEBUG=INFO log: only versions matter
            if "ersion" in stripped:
                self._versions(stripped)
            return None
        if _ERROR_RE.search(stripped):
            st = self.state
            if len(st.errors) < MAX_ERROR_LINES:  # every rank may print the same failure
                st.errors.append(stripped)
            else:
                st.errors_dropped += 1
            st.seen = True
            return None
        body = stripped.lstrip("#").strip()
        return self._header_or_footer(body)

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

    def _header_or_footer(self, body: str) -> ImportedRun | None:
        # Cheap substring tests first: in large logs most lines are rank lines or NCCL INFO.
        st = self.state
        if body.startswith("Rank"):
            m = _RANK.match(body)
            if m:
                st.ranks[int(m.group(1))] = (m.group(3), m.group(6).strip(), int(m.group(2) or -1),
                                             int(m.group(4)), m.group(5))
                st.seen = True
            return None
        if "algbw" in body:
            return self._columns(body)
        if body.startswith("Out of bounds"):
            m = _OOB.search(body)
            if m:
                st.oob, st.oob_ok = int(m.group(1)), m.group(2)
                st.seen = True
            return None
        if body.startswith("Avg bus bandwidth"):
            m = _AVG.search(body)
            if m:
                st.avg_busbw, st.avg_ok = to_float(m.group(1)), m.group(2)
                st.seen = True
            return None
        if "Collective test" in body:
            return self._start_or_end(body)
        if "nGpus" in body and _NTHREAD.search(body):
            finished = self._new_run_if_busy()
            self.state.header = body
            self.state.seen = True
            return finished
        if "ersion" in body or body.startswith("NCCL Tests compiled"):
            return self._version_line(body)
        if "_perf" in body and st.op_hint is None:
            m = _PROGRAM.search(body)
            st.op_hint = op_name(m.group(1)) if m else None
        return None

    def _start_or_end(self, body: str) -> ImportedRun | None:
        m = _START.search(body)
        if not m:
            return None
        if m.group(1) == "starting":
            finished = self._new_run_if_busy()
            self.state.op = op_name(m.group(2)) or self.state.op
            self.state.seen = True
            return finished
        self.state.op = op_name(m.group(2)) or self.state.op
        done = self._build()
        self.state = _State(self.name)
        return done

    def _version_line(self, body: str) -> ImportedRun | None:
        tv = _TESTS_VERSION.search(body)
        rv = _RCCL_TESTS_VERSION.search(body)
        if not (tv or rv or body.startswith("NCCL Tests compiled")):
            self._versions(body)  # NCCL/RCCL library version lines
            return None
        finished = self._new_run_if_busy()
        st = self.state
        st.seen = True
        if tv:
            st.version = tv.group(1)
            if tv.group(2):
                st.versions["nccl"] = nccl_version_from_code(int(tv.group(2)))
        elif rv:
            st.tool, st.version = "rccl-tests", rv.group(1)
        return finished

    def _columns(self, body: str) -> ImportedRun | None:
        toks = body.split()
        if not (("size" in toks or "bytes" in toks) and "algbw" in toks):
            return None
        finished = None
        if self.state.has_results:  # a second table without a new header line: a new run
            finished = self._new_run_if_busy()
        st = self.state
        first_time = next((i for i, t in enumerate(toks) if t in ("time", "cputime")), None)
        if first_time is not None:
            tail = toks[first_time:]
            st.layout = Layout(tail[:-1] if tail[-1] == "timestamp" else tail, from_header=True)
        st.seen = True
        return finished

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
        if st.errors_dropped:
            run.meta["errors_dropped"] = st.errors_dropped
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
        pair = best_bandwidths(st.rows, st.layout)
        ratio = pair[1] / pair[0] if pair else None
        op = st.op or st.op_hint or op_in_text(self.name)
        if op is None and st.rows:
            first = st.rows[0]
            op = infer_op(first[3] not in ("", "none"), first[4], ratio, ranks)
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
        extra: list[Measurement] = []
        if st.avg_busbw is not None:
            extra.append(AVG_BUSBW(op, st.avg_busbw, {"ranks": run.ranks}))
        if st.oob is not None:
            extra.append(OUT_OF_BOUNDS(op, float(st.oob), {"ranks": run.ranks}))
        if st.avg_busbw is None:
            run.status = INCOMPLETE
            run.meta["truncated"] = "no footer (Avg bus bandwidth): the log ends mid-sweep"
        else:
            run.status = COMPLETE
        if st.oob_ok == "FAILED" or st.avg_ok == "FAILED":
            run.status = FAILED
        if st.partial_row:
            run.meta["partial_last_row"] = True
        return ImportedRun(run, table=NcclTable(op, run.ranks, st.layout, st.rows, extra))


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
