"""nccl-tests / rccl-tests text output -> the records a native ``clusterbench coll`` run produces.

The parser is a line-by-line state machine, so a file of many concatenated runs streams through
in constant memory: ``parse_lines`` yields each run once the next one starts (or the log ends),
so failure lines printed after a run's footer stay with that run. Rows are split on whitespace,
never on columns; the column header, when present, says which values follow the leading
size/count/type[/redop][/root] fields. Old formats (an ``error`` column, no redop or root column,
an empty redop), NCCL INFO lines anywhere, a ``#`` stripped by a log viewer, and logs cut mid-row
are all read; see tests/data/nccl-tests/README.md.

What a run's status says (docs/import.md):

- ``failed``: the tool reported a failure (``Test NCCL failure``, ``Test CUDA failure``,
  ``Test failure``, an abort, ``Out of bounds values : N FAILED``);
- ``incomplete``: no footer (the log ends mid-sweep), or rows missing: the header promises sizes
  min..max and the table stops short or skips some, or the footer's average busbw is not the
  mean of the rows printed (an author elided rows);
- ``complete`` otherwise.

The collective comes from the log (``Collective test starting``, the ``x_perf`` program of a
command line, a wrapper's ``-t all_gather``), else the file name, else the redop/root columns
with busbw/algbw when only one op fits; a table whose op nothing names is refused. The rank
count comes from busbw/algbw where the rounding allows, else from a complete rank list
(ranks 0..n-1) or NCCL's own ``nranks``; a truncated list only bounds it from below.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache

from clusterbench.families.base import Metric
from clusterbench.families.collectives.spec import AVG_BUSBW, DTYPE_SIZES, OUT_OF_BOUNDS
from clusterbench.families.collectives.spec import op_name as _op_name
from clusterbench.ingest.collectives import (
    FILE_NAME,
    NRANKS,
    OLD_ALGBW_OPS,
    PRINTED,
    RANK_LIST,
    Evidence,
    Ranks,
    decide_op,
    ops_in_name,
    rank_count,
    ratio_bounds,
    unknown_ranks_note,
)
from clusterbench.ingest.common import (
    MAX_ERROR_LINES,
    ImportedRun,
    LogFormatError,
    add_error,
    add_warning,
    clean_lines,
    new_run,
    shown,
    strip_wrappers,
    text_chunks,
    to_float,
)
from clusterbench.ingest.nccl_rows import DEFAULT_LAYOUT, Layout, RowTable, layout_of
from clusterbench.ingest.registry import ForeignOutput
from clusterbench.records import COMPLETE, FAILED, INCOMPLETE, Run
from clusterbench.store.packs import number

# Imports before this release stored a table whose op no line named under this benchmark name;
# such tables are refused now (docs/import.md), but stored runs keep it.
LEGACY_UNNAMED_OP = "collective"

# (rank lines are kept stripped: the device name after the bus id ends where the line does)
_RANK = re.compile(r"^Rank +(\d+) +(?:Group +\d+ +)?(?:Pid +(\d+) +)?on +(\S+) +device +(\d+) +\[([^\]\n]*)\]"
                   r"[^\S\n]*(.*)", re.M)
_SWEEP_INTS = {"nthread": r"nThread:?\s+(\d+)", "ngpus": r"nGpus:?\s+(\d+)", "minbytes": r"minBytes:?\s+(\d+)",
               "maxbytes": r"maxBytes:?\s+(\d+)", "validation": r"validation:\s+(\d+)", "graph": r"graph:\s+(\d+)",
               "warmup_iters": r"warmupIters:\s+(\d+)"}
_NTHREAD = re.compile(r"nThread:?\s+(\d+)\s+nGpus:?\s+(\d+)")
_TESTS_VERSION = re.compile(r"nccl-tests version (\S+)(?:.*nccl-library=(\d+))?")
_RCCL_TESTS_VERSION = re.compile(r"rccl-tests:\s*Version\s+(\S+)", re.IGNORECASE)
_LIB_VERSION = re.compile(r"\b([NR]CCL) version (\S+)")
_NRANKS = re.compile(r"\bn[Rr]anks (\d+)")
_START = re.compile(r"Collective test (starting|concluded):\s*(\S+)")
_CYCLE = re.compile(r"Testing (\d+) cycle")
_OOB = re.compile(r"Out of bounds values\s*:\s*(\d+)\s*(\w*)")
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)\s*(\w*)")
# The tool (or the shell, or the C++ runtime) reporting that the test failed.
_FAILURE = re.compile(r"Test (?:NCCL|CUDA|HIP) failure|\bTest failure\b|\b(?:NCCL|CUDA|HIP) failure\b"
                      r"|Segmentation fault|terminate called|\bAborted\b|^# error:|exited on signal")
_ERROR_RE = re.compile(_FAILURE.pattern + r"|NCCL WARN")
# nccl-tests -S 1 (2.17.5 on): the local time ("%Y-%m-%d %H:%M:%S", right-aligned in 21 columns)
# after a row's out-of-place values (2.17.5-2.18) or at its end (2.19 on); not a record
_TIMESTAMP = re.compile(r"[ \t]+\d{4}-\d\d-\d\d[ \t]+\d\d:\d\d:\d\d(?=[ \t]|$)", re.M)
_PROGRAM = re.compile(r"\b([a-z_]+_perf)(?:_mpi)?\b")
_WRAPPER_OP = re.compile(r"(?:^|\s)(?:-t|--test|--collective|--coll)[ =]([A-Za-z_]+)\b")
MAX_SWEEP_SIZES = 100_000
CONTEXT_LINES = 3   # lines before another tool's first line handed over with it (its command line)
_SAMPLE = 2   # the (algbw, busbw) pairs of a table's last rows (its largest) its evidence reads
OLD_ALGBW_NOTE = ("algbw not stored: this nccl-tests (before 2020-06) printed busbw in its algbw column for "
                  "all_gather/reduce_scatter, not size/time")
op_name = lru_cache(maxsize=1024)(_op_name)   # the same program names, run after run   # a header promising more sizes than this is not checked


def nccl_version_from_code(code: int) -> str:
    """NCCL_VERSION_CODE (22907, or 2708 before 2.9) as text: 2.29.7."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


Shape = tuple[str, ...]   # what follows size/count/type in a row: ("redop", "root"), ("root",), ...


@dataclass
class _State:
    name: str
    tool: str = "nccl-tests"
    version: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    op: str | None = None
    op_hint: str | None = None   # from a command line quoted in the log (x_perf ..., -t op)
    hint_line: str = ""          # ... that line
    named: list[tuple[str, str]] = field(default_factory=list)   # (op, line): Collective test lines
    layout: Layout = DEFAULT_LAYOUT
    rank_lines: list[str] = field(default_factory=list)  # parsed when the run ends
    nranks: int | None = None    # NCCL INFO "nranks N"
    # The rows, as text: (shape, rows) parts in order, and per row its size, its group's
    # columns and its algbw/busbw tokens (kept as text; converted in bulk when the run ends).
    parts: list[list] = field(default_factory=list)   # [shape, text, rows]
    nrows: int = 0
    sizes: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    redops: list[str] = field(default_factory=list)
    roots: list[str] = field(default_factory=list)
    alg: list[str] = field(default_factory=list)
    bus: list[str] = field(default_factory=list)
    cycles: list[int] = field(default_factory=list)   # part index where each cycle starts
    errors: list[str] = field(default_factory=list)
    failures: int = 0
    header: str = ""
    avg_busbw: float | None = None
    avg_ok: str = ""
    oob: int | None = None
    oob_ok: str = ""
    partial_row: bool = False
    concluded: bool = False
    errors_dropped: int = 0
    seen: bool = False  # any nccl-tests line at all
    # rows whose lead columns differ from the table's (a row cut short, its last values gone,
    # would otherwise be read right-aligned: its time as algbw, its root as a time)
    misfits: list[str] = field(default_factory=list)
    nmisfits: int = 0
    timestamps: bool = False   # rows carried -S timestamps (removed from their text)
    repeats: bool = False      # every table's sweep printed several times over (nccl-tests -N)
    in_place_only: bool = False   # the table's title names only in-place (rccl-tests -O 0)

    @property
    def has_results(self) -> bool:
        return bool(self.nrows) or self.avg_busbw is not None

    def add_part(self, shape: Shape, text: str, rows: int, blank: bool = True) -> None:
        """``blank``: whether ``text`` may hold empty lines (its reader did not count them)."""
        if blank and ("\n\n" in text or text[:1] == "\n"):   # blank lines between rows (a document's quote)
            text = "\n".join(filter(None, text.split("\n")))
        elif blank and text.endswith("\n"):   # a block cut at a chunk's end: stored the same however cut
            text = text.rstrip("\n")
        last = self.parts[-1] if self.parts else None
        if last is not None and last[0] == shape and (not self.cycles or self.cycles[-1] != len(self.parts)):
            last[1] += "\n" + text
            last[2] += rows
        else:
            self.parts.append([shape, text, rows])


# Lines that start anything but rows or comment lines (rows start with a digit or blanks,
# nccl-tests' own lines with '#'): split there, the text between is read a block at a time.
_SEGMENT = re.compile(r"\n(?=[^ \t\d\n#])")
_ROW_OR_HASH = frozenset(" \t0123456789#")
_PLAIN = ("Using devices", "(B)", "out-of-place", "in-place", "NCCL version")
# words in the first line of every other tool's output (registry.Importer.starts): only a line
# holding one is matched against those patterns
_FOREIGN_WORDS = ("STREAM", "Stream", "function,", "OSU", " Test", "host,", "listening", "hipBLASLt", "Gflops",
                  "TransferBench", "Serving")


class NcclTextParser:
    """Feed text (``feed_text``, cleaned blocks of whole lines) or lines (``feed``); collect the
    finished runs they yield, then ``finish``."""

    def __init__(self, name: str = "", foreign: re.Pattern[str] | None = None) -> None:
        self.name = name
        self.state = _State(name)
        self._done: list[ImportedRun] = []
        self.foreign = foreign   # where another tool's output begins (see parse_lines)

    # -- blocks of text -----------------------------------------------------------------
    def feed_text(self, text: str) -> Iterator[ImportedRun]:
        """Runs finished by this text. Consecutive rows are read as one block with a few calls
        that work in C (split, slices, joins); a block that does not read as clean rows of the
        table's shape is read line by line."""
        segs = _SEGMENT.split(text)
        for i, seg in enumerate(segs):
            try:
                self._segment(seg)
            except ForeignLine as f:   # another tool's output from this line on, with its command line
                k = seg.find(f.line)
                line = seg.rfind("\n", 0, k) + 1 if k >= 0 else 0
                before = [ln for ln in "\n".join([*segs[:i], seg[:line]]).split("\n") if ln.strip()]
                context = before[-CONTEXT_LINES:] if before else []
                yield from self._done
                self._done.clear()
                raise ForeignLine(f.line, "\n".join([*context, seg[line:], *segs[i + 1:]])) from None
            except LogFormatError:   # a run that cannot be stored: the runs before it first, as feed gives them
                yield from self._done
                self._done.clear()
                raise
            if self._done:
                yield from self._done
                self._done.clear()

    def _segment(self, seg: str) -> None:
        if seg[:1] not in _ROW_OR_HASH:
            head, _, seg = seg.partition("\n")
            self._line(head)
            if not seg:
                return
        # Each piece is one '#' line (without its '#') and the rows after it.
        pieces = seg.split("\n#")
        first = pieces[0]
        if first[:1] == "#":
            pieces[0] = first[1:]
        elif first:
            if not first.isspace() and not self._block(first):
                self._lines(first)
            pieces[0] = ""
        for piece in pieces:
            nl = piece.find("\n")
            if nl < 0:
                self._comment(piece)
                continue
            self._comment(piece[:nl])
            rows = piece[nl + 1:]
            if rows and not rows.isspace() and not self._block(rows):
                self._lines(rows)

    def _lines(self, block: str) -> None:
        for line in block.split("\n"):
            self._line(line)

    def _comment(self, line: str) -> None:
        """An nccl-tests '#' line, without its first '#'."""
        body = line.lstrip("#").strip()
        if not body:
            return
        st = self.state
        if body[:4] == "Rank" and not st.concluded:
            st.rank_lines.append(body)
            st.seen = True
        elif body.startswith("error:"):
            self._error("# " + body)
        else:
            self._header_or_footer(body)

    def feed(self, line: str) -> ImportedRun | None:
        """One line; the run it finishes, if any."""
        self._line(line)
        if self._done:
            return self._done.pop(0)
        return None

    def _block(self, block: str) -> bool:
        st = self.state
        lay = st.layout
        if ":" in block:   # (rows hold no ':' but in a -S timestamp)
            block = self._untimed(block)
        first = block.lstrip()
        toks1 = first[:first.find("\n")].split() if "\n" in first else first.split()
        nlead = len(toks1) - lay.ntail
        if not 3 <= nlead <= 5:
            return False
        shape = _shape(toks1, nlead)
        if shape is None or (st.parts and st.parts[-1][0] != shape and not st.concluded and st.avg_busbw is None):
            return False   # (another shape than the table's rows: read row by row, see _row_line)
        toks = block.split()
        ncols = nlead + lay.ntail
        nrows = len(toks) // ncols
        lines = block.split("\n")
        empty = lines.count("")
        if nrows * ncols != len(toks) or len(lines) - empty != nrows:
            return False
        sizes, counts, dtypes = toks[0::ncols], toks[1::ncols], toks[2::ncols]
        # isdecimal, not isdigit: int() takes only decimal digits ('²' is a digit, not decimal)
        if not ("".join(sizes).isdecimal() and "".join(counts).isdecimal() and "".join(dtypes).isalnum()):
            return False
        redops = toks[3 + shape.index("redop")::ncols] if "redop" in shape else ["none"] * nrows
        roots = toks[3 + shape.index("root")::ncols] if "root" in shape else ["-1"] * nrows
        if "redop" in shape and not "".join(redops).isalpha():
            return False
        if "root" in shape and not all(map(_integer, set(roots))):
            return False
        if st.concluded or st.avg_busbw is not None or self._died_before_table():  # the next run's rows
            st = self._rows_after_footer()
        st.add_part(shape, block, nrows, blank=empty > 0)
        st.nrows += nrows
        st.sizes += sizes
        st.dtypes += dtypes
        st.redops += redops
        st.roots += roots
        pairs = list(zip(lay.alg, lay.bus))
        if len(pairs) == 1:
            (ia, ib), = pairs
            st.alg += toks[nlead + ia::ncols]
            st.bus += toks[nlead + ib::ncols]
        else:
            # in row order, as feed appends them (out-of-place, in-place, next row): the last
            # rows' values and the footer's mean are then the same however the text was cut
            k = len(pairs)
            alg, bus = [""] * (nrows * k), [""] * (nrows * k)
            for j, (ia, ib) in enumerate(pairs):
                alg[j::k] = toks[nlead + ia::ncols]
                bus[j::k] = toks[nlead + ib::ncols]
            st.alg += alg
            st.bus += bus
        st.seen = True
        st.partial_row = False
        return True

    # -- single lines -------------------------------------------------------------------
    def _line(self, line: str) -> None:
        stripped = line.strip()
        if not stripped:
            return
        c = stripped[0]
        # a launcher's prefix the log's start did not show (so the cleaner left it): a tag, a
        # label, a timestamp (its first ':' after the date)
        if c in "[(" or (c.isdigit() and ":" in stripped[:16]):
            unwrapped = strip_wrappers(stripped).strip()
            if unwrapped != stripped:
                self._line(unwrapped)
                return
        if c.isdigit():
            self._row_line(stripped)
            return
        if c == "#":
            body = stripped.lstrip("#").strip()
            if body.startswith("error:"):
                self._error(stripped)
            else:
                self._header_or_footer(body)
            return
        if " NCCL INFO " in stripped:  # most lines of a NCCL_DEBUG=INFO log
            self._info(stripped)
            return
        if _maybe_error(stripped) and _ERROR_RE.search(stripped):
            self._error(stripped)
            return
        self._header_or_footer(stripped)

    def _row_line(self, stripped: str) -> None:
        st = self.state
        if ":" in stripped:
            stripped = self._untimed(stripped)
        toks = stripped.split()
        nlead = len(toks) - st.layout.ntail
        if 3 <= nlead <= 5 and toks[0].isdecimal() and toks[1].isdecimal() and toks[2][:1].isalpha():
            shape = _shape(toks, nlead)
            if shape is not None:
                if st.concluded or st.avg_busbw is not None or self._died_before_table():  # the next run's
                    st = self._rows_after_footer()
                elif st.parts and st.parts[-1][0] != shape:
                    # one table's rows all have its columns: this one lost some (cut short)
                    st.nmisfits += 1
                    if len(st.misfits) < 3:
                        st.misfits.append(stripped)
                    st.partial_row = False
                    return
                st.add_part(shape, stripped, 1, blank=False)
                st.nrows += 1
                st.sizes.append(toks[0])
                st.dtypes.append(toks[2])
                st.redops.append(toks[3 + shape.index("redop")] if "redop" in shape else "none")
                st.roots.append(toks[3 + shape.index("root")] if "root" in shape else "-1")
                for ia, ib in zip(st.layout.alg, st.layout.bus):
                    st.alg.append(toks[nlead + ia])
                    st.bus.append(toks[nlead + ib])
                st.seen = True
                st.partial_row = False
                return
        if " NCCL INFO " in stripped:
            self._info(stripped)
            return
        m = _ERROR_RE.search(stripped) if _maybe_error(stripped) else None
        if m:  # a row cut by a failure message on the same line: the message from its host on
            st.partial_row = True
            start = m.start()
            word = stripped.rfind(" ", 0, max(start - 1, 0)) + 1
            if stripped[word:start].rstrip().endswith(":"):
                start = word
            self._error(stripped[start:])
            return
        if toks[0].isdigit() and len(toks) < 3 + st.layout.ntail and (len(toks) < 2 or toks[1].isdigit()):
            st.partial_row = True  # a row cut short: the log ends mid-sweep

    def _untimed(self, text: str) -> str:
        """Rows without their -S timestamps: the time of day is no measurement, and where it
        stands (mid-row before 2.19) would shift the values after it."""
        untimed = _TIMESTAMP.sub("", text)
        if len(untimed) != len(text):
            self.state.timestamps = True
        return untimed

    def _info(self, text: str) -> None:
        if "ersion" in text:
            self._versions(text)
        elif "ranks " in text:
            m = _NRANKS.search(text)
            if m:
                self.state.nranks = max(self.state.nranks or 0, int(m.group(1)))

    def _error(self, text: str) -> None:
        st = self.state
        if len(st.errors) < MAX_ERROR_LINES:  # every rank may print the same failure
            st.errors.append(text)
        else:
            st.errors_dropped += 1
        if _FAILURE.search(text):
            st.failures += 1
        st.seen = True

    def _versions(self, text: str) -> None:
        m = _LIB_VERSION.search(text)
        if m:
            lib = m.group(1).lower()
            self.state.versions.setdefault(lib, m.group(2))
            if lib == "rccl":
                self.state.tool = "rccl-tests"

    def _next_run(self, keep_layout: bool = False) -> None:
        """End the current run (if it holds anything) and start the next."""
        st = self.state
        if st.has_results or st.errors and not _only_warnings(st):
            self._done.append(self._build())
            self.state = _State(self.name)
            if keep_layout:
                self.state.layout = st.layout
        elif st.errors:   # a library's warnings before anything of a run: the next run's, not a run
            self.state = _State(self.name, errors=st.errors, errors_dropped=st.errors_dropped, seen=True,
                                op_hint=st.op_hint, hint_line=st.hint_line)

    def _died_before_table(self) -> bool:
        """Whether the run so far is a command line and the tool's failure, nothing else: it died
        before its table, so rows now are another invocation's (whose op the command does not name)."""
        st = self.state
        return bool(st.failures) and not st.nrows and st.op_hint is not None and not st.header \
            and not st.rank_lines and not st.named

    def _rows_after_footer(self) -> _State:
        """The state rows read after a footer go to: the next run's, or this one's when it holds
        nothing to end (a ``Collective test concluded`` line with no table before it). Left
        concluded, that state would end after one row, so where a block was cut would decide
        how its rows are split into runs."""
        st = self.state
        if st.has_results or st.errors:
            self._next_run(keep_layout=True)
            return self.state
        st.concluded = False
        return st

    def _header_or_footer(self, body: str) -> None:
        # Cheap substring tests first: in large logs most of these lines are rank lines.
        st = self.state
        if body.startswith(_PLAIN):   # the header's other lines: nothing to read
            if body.startswith("in-place") and body.split()[0] == "in-place":   # rccl-tests -O 0's title
                st.in_place_only = True
            return
        if body.startswith("Rank"):
            if st.concluded:
                self._next_run()
                st = self.state
            st.rank_lines.append(body)
            st.seen = True
            return
        if "algbw" in body:
            self._columns(body)
            return
        if body.startswith("Out of bounds"):
            m = _OOB.search(body)
            if m and len(m.group(1)) <= 18:   # more digits: a damaged line, no count a run could have
                st.oob, st.oob_ok = int(m.group(1)), m.group(2)
                st.seen = True
            return
        if body.startswith("Avg bus bandwidth"):
            m = _AVG.search(body)
            if m:
                st.avg_busbw, st.avg_ok = to_float(m.group(1)), m.group(2)
                st.seen = True
            return
        if "Collective test" in body:
            self._start_or_end(body)
            return
        if "nGpus" in body and _NTHREAD.search(body):
            self._next_run()
            self.state.header = body
            self.state.seen = True
            return
        if body.startswith("Testing") and "cycle" in body:
            if _CYCLE.match(body):
                st.cycles.append(len(st.parts))
            return
        if "ersion" in body or body.startswith("NCCL Tests compiled"):
            self._version_line(body)
            return
        self._command(body)

    def _command(self, body: str) -> None:
        """A command line quoted in the log names the op of the table that follows it; another
        tool's first line ends nccl-tests' part of the log."""
        if self.foreign is not None and any(w in body for w in _FOREIGN_WORDS) \
                and (self.foreign.search(body) or self.foreign.search("#" + body)):
            raise ForeignLine(body)
        op = None
        if "_perf" in body:
            m = _PROGRAM.search(body)
            op = op_name(m.group(1)) if m else None
        elif "nccl" in body.lower() or "rccl" in body.lower():
            m = _WRAPPER_OP.search(body)   # run_nccl_tests.sh -t all_gather
            op = op_name(m.group(1)) if m else None
        if op is None:
            return
        if self.state.has_results:
            self._next_run()
        self.state.op_hint, self.state.hint_line = op, body

    def _start_or_end(self, body: str) -> None:
        m = _START.search(body)
        if not m:
            return
        if m.group(1) == "starting":
            self._next_run()
        op = op_name(m.group(2))
        if op is not None:
            self.state.op = op
            self.state.named.append((op, "# " + body))
        if m.group(1) == "starting":
            self.state.seen = True
            return
        self.state.concluded = True  # built when the next run starts: failure lines may follow

    def _version_line(self, body: str) -> None:
        tv = _TESTS_VERSION.search(body)
        rv = _RCCL_TESTS_VERSION.search(body)
        if not (tv or rv or body.startswith("NCCL Tests compiled")):
            self._versions(body)  # NCCL/RCCL library version lines
            return
        self._next_run()
        st = self.state
        st.seen = True
        if tv:
            st.version = tv.group(1)
            if tv.group(2):
                st.versions["nccl"] = nccl_version_from_code(int(tv.group(2)))
        elif rv:
            st.tool, st.version = "rccl-tests", rv.group(1)

    def _columns(self, body: str) -> None:
        found, layout = _column_header(body)
        if not found:
            return
        in_only = self.state.in_place_only
        if self.state.has_results:  # a second table without a new header line: a new run
            self._next_run()
        st = self.state
        if layout is not None:
            st.layout = layout_of(tuple(layout.names), ("in",)) if in_only and _blocks(layout) == 1 else layout
        st.seen = True

    def closes_before(self, kind: str) -> bool:
        """Whether a line of ``kind`` ("header" or "command") read now would leave nothing of
        the current state to the next run (nccl_parallel cuts a log there). A header line
        (``# nThread``, ``# Collective test starting``, a version line) ends a run that holds
        results or errors; a command line naming an op (``x_perf``) ends one that holds
        results; either starts afresh from nothing."""
        st = self.state
        if st == _State(self.name):
            return True
        if kind == "command":
            return st.has_results
        return st.has_results or bool(st.errors) and not _only_warnings(st)

    def finish(self) -> ImportedRun | None:
        if self._done:
            raise RuntimeError("collect the runs feed_text yields before finish")
        if not (self.state.seen and (self.state.has_results or self.state.errors)) or _only_warnings(self.state):
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
        ranks_listed = _rank_list(st.rank_lines)   # {rank: index in its columns}; columns below
        if ranks_listed:
            cols = ranks_listed.pop(-1)  # type: ignore[call-overload]
            numbers = ranks_listed.pop(-2)  # type: ignore[call-overload]
            hosts, names, pids, devs, buses = cols
            if numbers != list(range(len(numbers))):   # a list cut or elided: which ranks it shows
                run.meta["rank_numbers"] = numbers
            run.meta["rank_hosts"] = hosts
            run.devices = names
            run.hosts = list(dict.fromkeys(hosts))
            run.meta["rank_pids"] = pids
            run.meta["rank_device_index"] = devs
            run.meta["rank_bus_id"] = buses
        if st.header:
            run.meta["header"] = st.header
        listed = len(ranks_listed) if ranks_listed and list(ranks_listed) == list(range(len(ranks_listed))) \
            else None
        stated = (RANK_LIST, listed) if listed else (NRANKS, st.nranks) if st.nranks else None
        highest = max(ranks_listed) if ranks_listed else None
        groups = self._groups() if st.nrows else {}
        evidence = self._evidence() if st.nrows else Evidence()
        listing = "\n".join(st.rank_lines)
        if listing.count("Group ") == listing.count("Group  0"):   # no rank of a split communicator (whose
            evidence.min_ranks = stated[1] if stated else highest + 1 if highest is not None else None   # count is its own)
        op = self._op(run, evidence)
        if evidence.ratio_disagrees:
            add_warning(run, "busbw/algbw differs between rows by more than their rounding (no one bus factor fits "
                             "them all): no rank count is read from it")
        if op is not None and st.nrows:
            found = rank_count(op, evidence, highest, stated)
        else:   # no table: what the rank lines say
            found = Ranks(stated[1], [stated[0]]) if stated else \
                Ranks(None, at_least=highest + 1 if highest is not None else None)
        ranks = found.value
        for text in found.warnings:
            add_warning(run, text)
        if ranks is not None and found.proof:
            run.meta["ranks_from"] = found.proof
        elif ranks is None:
            if found.at_least:
                run.meta["ranks_at_least"] = found.at_least
            if found.at_most:
                run.meta["ranks_at_most"] = found.at_most
            if st.nrows:
                add_warning(run, unknown_ranks_note(found))
        if op:
            run.meta["op"] = op
        sweep = _sweep(st.header) if st.header else {}
        if op and sweep:
            run.meta[f"coll_sweep.{op}"] = dict(sweep)
        run.ranks = ranks
        footer: list[tuple[Metric, float]] = []
        if op and st.avg_busbw is not None:
            footer.append((AVG_BUSBW, st.avg_busbw))
        if op and st.oob is not None:
            footer.append((OUT_OF_BOUNDS, float(st.oob)))
        missing = self._missing_rows(groups, sweep, ranks or 0) if st.nrows else []
        run.status = COMPLETE
        if st.avg_busbw is None and st.has_results:
            run.status = INCOMPLETE
            run.meta["truncated"] = "no footer (Avg bus bandwidth): the log ends mid-sweep"
        if missing:
            run.status = INCOMPLETE
            run.meta["rows_missing"] = missing
            for text in missing:
                add_warning(run, text)
        for text in st.misfits:
            add_warning(run, f"a row whose columns are not the table's (cut short?), not read: {shown(text)}")
        if st.nmisfits > len(st.misfits):
            add_warning(run, f"{st.nmisfits - len(st.misfits)} more such row(s) not read")
        if st.nmisfits:
            run.status = INCOMPLETE
        if st.failures or st.oob_ok == "FAILED" or st.avg_ok == "FAILED":
            run.status = FAILED
        if st.oob_ok == "FAILED":   # the run's own verdict: say it where a failed run's errors are read
            add_error(run, f"# Out of bounds values : {st.oob} FAILED")
        if st.avg_ok == "FAILED":
            add_error(run, f"# Avg bus bandwidth : {st.avg_busbw} FAILED")
        if not st.has_results:   # only failure lines: the test died before its first row
            run.status = FAILED if st.failures else INCOMPLETE
        if st.partial_row:
            run.meta["partial_last_row"] = True
        if st.layout.ignored or st.timestamps:
            run.meta["columns_not_stored"] = st.layout.ignored + (["timestamp"] if st.timestamps else [])
        old_algbw = op in OLD_ALGBW_OPS and self._algbw_is_busbw()
        if old_algbw:
            run.meta["algbw_not_stored"] = OLD_ALGBW_NOTE
            add_warning(run, OLD_ALGBW_NOTE)
        parts, part_cycles = _split_cycles(st) if st.repeats else (st.parts, None)
        if part_cycles:
            run.meta["cycles"] = max(c for c in part_cycles if c is not None) + 1
        error_column = self._error_column()
        if error_column or st.layout.error:   # results show names the column as the log did
            run.meta["error_column"] = True
        table = RowTable(op or "", ranks, st.layout, parts, st.cycles, footer, error_column, old_algbw,
                         part_cycles)
        packs = table.packs()
        bad = table.unreadable
        if bad.count:
            # a cell no number is read from (4x4.41, 44.41.7, bytes that were not UTF-8) is not
            # stored, nor counted: the run says so, and is not complete without it
            for cell, row in bad.first:
                add_warning(run, f"a value that is no number, not stored: {shown(cell)} in the row {shown(row)}")
            if bad.count > len(bad.first):
                add_warning(run, f"{bad.count - len(bad.first)} more such value(s) not stored")
            run.meta["values_not_read"] = bad.count
            if run.status == COMPLETE:
                run.status = INCOMPLETE
        return ImportedRun(run, packs=packs, benchmark=op)

    def _op(self, run: Run, evidence: Evidence) -> str | None:
        """The run's op, from what its lines name and what its table shows (``decide_op``), with
        its provenance in run meta ``op_from``."""
        st = self.state
        named = list(st.named)
        if st.op_hint is not None:
            named.insert(0, (st.op_hint, st.hint_line))
        file_ops = ops_in_name(self.name)
        if st.has_results:
            op, run.meta["op_from"] = decide_op(evidence, named, file_ops, st.nrows)
            return op
        # no table (a run that died first): a name if the log or the file gives one
        ops = list(dict.fromkeys(op for op, _ in named))
        if len(ops) == 1:
            run.meta["op_from"] = [PRINTED]
            return ops[0]
        if not ops and len(file_ops) == 1:
            run.meta["op_from"] = [FILE_NAME]
            return file_ops[0]
        return None

    def _evidence(self) -> Evidence:
        """What the table's columns show about its op (``ingest.collectives``), read from its
        last rows (its largest): the redop and root columns, the count against the size,
        busbw/algbw and which placements' #wrong the tool checked. (Done once per run of a log
        of thousands: a few C calls over the whole table, Python over two rows.)"""
        st = self.state
        ev = Evidence(old_algbw="#wrong" not in st.layout.names and not st.version)
        shape, text, _rows = st.parts[-1]
        sample = [toks for toks in map(str.split, text.rsplit("\n", 2)[-2:]) if toks]
        if not sample:
            return ev
        ev.row = " ".join(sample[-1])
        # (st.redops holds 'none' and st.roots -1 for rows without the column: old nccl-tests
        # printed only the columns of the op's parameters)
        shapes = {part[0] for part in st.parts} if len(st.parts) > 1 else {shape}
        if len({"redop" in sh for sh in shapes}) == 1:   # every part with the column, or none
            ev.redops = frozenset(st.redops)
            ev.redop_column = "redop" in shape
        if len({"root" in sh for sh in shapes}) == 1:
            ev.roots = frozenset(map(int, set(st.roots)))
            ev.root_column = "root" in shape
        for toks in reversed(sample):   # the largest row with a size and a count
            size, count, elt = int(toks[0]), int(toks[1]), DTYPE_SIZES.get(toks[2])
            if size and count and elt:
                k, rest = divmod(size, count * elt)
                ev.split, ev.split_unit = (k if k >= 1 and not rest else None), elt
                break
        # the last two rows' pairs (both placements): the largest values, the tightest intervals
        bounds = ratio_bounds(zip(st.alg[-_SAMPLE:], st.bus[-_SAMPLE:]))
        if bounds is not None and bounds[0] <= bounds[1]:
            ev.ratio = bounds
        ev.ratio_disagrees = bounds is not None and bounds[0] > bounds[1]
        # (two rows: the last may be a log's cut one, its in-place values N/A)
        nlead = 3 + len(shape)
        checked: dict[str, set[bool]] = {"out": set(), "in": set()}   # per placement: a number, or N/A
        for i in st.layout.wrong:
            col = st.layout.cols[i]
            for toks in sample:
                if col is not None and nlead + i < len(toks):
                    checked[col[3]].add(toks[nlead + i] != "N/A")
        if checked["in"] == {True} and st.version:   # (see ingest.collectives: 2.13.1 on)
            ev.in_place_checked = True
        elif checked["in"] == {False} and checked["out"] == {True}:
            ev.in_place_checked = False
        return ev

    def _groups(self) -> dict[tuple[str, str, str], list[list[int]]]:
        """Each (dtype, redop, root) table's sizes, one list per sweep (several with rccl-tests'
        cycles); refuses rows of several runs interleaved in one table."""
        st = self.state
        sizes = list(map(int, st.sizes))
        if st.dtypes.count(st.dtypes[0]) == len(st.dtypes) and st.redops.count(st.redops[0]) == len(st.redops) \
                and st.roots.count(st.roots[0]) == len(st.roots):
            by_key = {(st.dtypes[0], st.redops[0], st.roots[0]): sizes}
        else:
            by_key = {}
            for size, key in zip(sizes, zip(st.dtypes, st.redops, st.roots)):
                by_key.setdefault(key, []).append(size)
        groups: dict[tuple[str, str, str], list[list[int]]] = {}
        for key, got in by_key.items():
            runs = [got] if _one_sweep(got) else _sweeps(got)
            if len(runs) > 1 and not st.cycles and st.avg_busbw is not None and _repeated(runs, bool(st.header)):
                st.repeats = True   # nccl-tests -N: the same sweep again, no line between
            elif len(runs) > 1 and not st.cycles:
                raise LogFormatError(
                    f"sizes repeat out of order in the {key[0]} {key[1]} table ({', '.join(map(str, got[:4]))}, "
                    "...): the output of several runs is interleaved (e.g. nccl-tests built without MPI=1 "
                    "under mpirun), and its rows cannot be told apart (a sweep repeated whole, as -N prints "
                    "it, is read only with the run's footer)")
            groups[key] = runs
        return groups

    def _missing_rows(self, groups: dict[tuple[str, str, str], list[list[int]]], sweep: dict[str, object],
                      ranks: int) -> list[str]:
        """Why the rows are not the whole run the header and footer describe (empty when they are)."""
        st = self.state
        problems: list[str] = []
        expected = _expected(st.header) if st.header else None
        for key, runs in groups.items():
            if expected is None:
                break
            for one in runs:   # one per cycle (rccl-tests -N)
                if one != expected and not _covers(one, expected, ranks):
                    problems.append(
                        f"the header promises {len(expected)} sizes {expected[0]}..{expected[-1]} per table; "
                        f"the {key[0]} {key[1]} table shows {len(one)} ({one[0]}..{one[-1]})")
                    break
        if st.avg_busbw is not None and st.bus:
            try:
                total, count = sum(map(float, st.bus)), len(st.bus)
            except ValueError:   # N/A in the column
                total = math.nan
            tolerance = max(0.01 * abs(st.avg_busbw), 0.01)
            if math.isfinite(total):
                mean = total / count
                if abs(mean - st.avg_busbw) > tolerance:
                    problems.append(f"the footer's average busbw {st.avg_busbw:g} GB/s is not the mean "
                                    f"{mean:.6g} GB/s of the {count} busbw values shown: rows are missing")
            else:
                # N/A, nan or inf shown: the footer counted a value there that the log does not show
                # (any from 0 up), so only a footer below the mean the numbers give with those as 0
                # cannot be the mean of these rows
                values = [v for v in map(number, st.bus) if v is not None]
                floor = sum(values) / len(st.bus)
                if values and st.avg_busbw < floor - tolerance:
                    problems.append(f"the footer's average busbw {st.avg_busbw:g} GB/s is below the mean "
                                    f"{floor:.6g} GB/s of the {len(st.bus)} busbw values shown, counting "
                                    f"the {len(st.bus) - len(values)} that are not numbers as 0: rows are missing")
        return problems

    def _algbw_is_busbw(self) -> bool:
        """Whether the algbw column equals busbw on every row fast enough for the rounding not to
        hide the op's (n-1)/n: nccl-tests before 2020-06 printed busbw there for all_gather and
        reduce_scatter (commit ec1b5e2 'Change all_gather/reduce_scatter algbw to match the
        documentation'), so that column is not size/time."""
        st = self.state
        if "#wrong" in st.layout.names or st.version:
            return False
        try:
            pairs = [(a, b) for a, b in zip(map(float, st.alg), map(float, st.bus)) if a >= 10.0]
        except ValueError:
            return False
        return len(pairs) >= 3 and all(a == b for a, b in pairs)

    def _error_column(self) -> bool:
        """Whether a log without a column header has old nccl-tests' error column (1e-07) where
        newer ones print #wrong (an integer)."""
        st = self.state
        if st.layout.from_header or not st.layout.wrong:
            return False
        for shape, text, _rows in st.parts[:2]:
            for line in text.split("\n")[:16]:
                toks = line.split()
                n = 3 + len(shape)
                if any("." in toks[n + i] or "e" in toks[n + i] for i in st.layout.wrong if n + i < len(toks)):
                    return True
        return False


@lru_cache(maxsize=256)
def _column_header(body: str) -> tuple[bool, Layout | None]:
    """Whether a line is a table's column header, and the layout of its values after the leading
    size/count/type[/redop][/root] columns (None when it names no time column)."""
    toks = body.split()
    if not (("size" in toks or "bytes" in toks) and "algbw" in toks):
        return False, None
    first_time = next((i for i, t in enumerate(toks) if t in ("time", "cputime")), None)
    if first_time is None:
        return True, None
    tail = toks[first_time:]
    return True, layout_of(tuple(tail[:-1] if tail[-1] == "timestamp" else tail))


def _blocks(layout: Layout) -> int:
    return sum(1 for n in layout.names if n in ("time", "cputime"))


def _repeated(runs: list[list[int]], header: bool) -> bool:
    """Whether a table's sizes are one sweep printed again and again, as nccl-tests -N prints its
    cycles (since 2024-07, with nothing between them), not the rows of several runs interleaved.
    Asked only of a run with its footer: processes writing into one stream each print their own
    footer, which ends a run. A one-size sweep repeated is that only under a header line."""
    first = runs[0]
    return all(r == first for r in runs) and (len(first) > 1 or header)


def _split_cycles(st: _State) -> tuple[list[list], list[int | None]]:
    """The parts cut where a repeated sweep (nccl-tests -N) starts again, and each part's cycle:
    within each (dtype, redop, root) table, a size not above the one before starts a cycle."""
    last: dict[tuple[str, str, str], int] = {}
    cycle: dict[tuple[str, str, str], int] = {}
    parts: list[list] = []
    cycles: list[int | None] = []
    i = 0
    for shape, text, _rows in st.parts:
        for line in text.split("\n"):
            key = (st.dtypes[i], st.redops[i], st.roots[i])
            size = int(st.sizes[i])
            i += 1
            if key in last and (size < last[key] or size == last[key] != 0):
                cycle[key] += 1
            cycle.setdefault(key, 0)
            last[key] = size
            if parts and parts[-1][0] == shape and cycles[-1] == cycle[key]:
                parts[-1][1].append(line)
                parts[-1][2] += 1
            else:
                parts.append([shape, [line], 1])
                cycles.append(cycle[key])
    return [[shape, "\n".join(lines), n] for shape, lines, n in parts], cycles


def _only_warnings(st: _State) -> bool:
    """Whether a state holds nothing but warning lines (``NCCL WARN`` without a failure) and
    perhaps the command line before them: a library's warnings are never a run of their own,
    nor change one's status; they go with the run that follows."""
    return bool(st.errors) and not st.failures and \
        replace(st, errors=[], errors_dropped=0, seen=False, layout=DEFAULT_LAYOUT, op_hint=None,
                hint_line="") == _State(st.name)


def _integer(tok: str) -> bool:
    """Whether ``int`` reads ``tok`` (a root: ``-1``, ``0``; not ``--1``)."""
    return (tok[1:] if tok[:1] == "-" else tok).isdecimal()


def _shape(toks: list[str], nlead: int) -> Shape | None:
    """What a row's lead tokens after size/count/type are. Old formats leave out the root
    column, the redop column, or print an empty redop: a number there is the root, a word the redop."""
    if nlead == 5:
        if toks[3][:1].isalpha() and _integer(toks[4]):
            return ("redop", "root")
        return None
    if nlead == 3:
        return ()
    tok = toks[3]
    if _integer(tok):
        return ("root",)
    return ("redop",) if tok[:1].isalpha() else None


def _maybe_error(text: str) -> bool:
    """A cheap test before the error pattern: every failure or warning line holds one of these."""
    return "ail" in text or "WARN" in text or "bort" in text or "ault" in text or "termin" in text \
        or "signal" in text or "error" in text


def _rank_list(lines: list[str]) -> dict:
    """The rank lines as {rank: position} in rank order, plus at key -1 the columns (hosts, device
    names, pids, device indexes, bus ids) in that order and at key -2 the rank numbers of those
    lines; {} without rank lines. Built with calls
    that loop in C: a large log has a rank list per run."""
    if not lines:
        return {}
    found = _RANK.findall("\n".join(lines))
    if not found:
        return {}
    ranks_s, pids_s, hosts, devs_s, buses, names = zip(*found)
    ranks = list(map(int, ranks_s))
    order = sorted(range(len(ranks)), key=ranks.__getitem__) if ranks != sorted(ranks) else None
    try:
        pids = list(map(int, pids_s))
    except ValueError:   # old rank lines print no pid
        pids = [int(p) if p else -1 for p in pids_s]
    cols = [list(hosts), list(names), pids, list(map(int, devs_s)), list(buses)]
    if order is not None:
        cols = [[c[i] for i in order] for c in cols]
        ranks = [ranks[i] for i in order]
    out: dict = dict.fromkeys(ranks)
    out[-1] = cols
    out[-2] = ranks
    return out


def _max_number(tokens: list[str]) -> float:
    return max((v for v in map(number, tokens) if v is not None), default=0.0)


def _all_zero(tokens: list[str]) -> bool:
    return all(number(t) == 0.0 for t in tokens)


def _one_sweep(sizes: list[int]) -> bool:
    """Sizes increasing, except that gather ops print several 0s for tiny requested sizes
    (done with calls that loop in C: this runs once per table of a large log)."""
    if sizes != sorted(sizes):
        return False
    zeros = sizes.count(0)
    return len(set(sizes)) == len(sizes) - zeros + (1 if zeros else 0)


def _sweeps(sizes: list[int]) -> list[list[int]]:
    """The increasing runs of sizes (a new one starts where a size is not larger than the one
    before; tiny sizes of gather ops round down to 0 several times)."""
    runs: list[list[int]] = [[]]
    for s in sizes:
        cur = runs[-1]
        if cur and (s < cur[-1] or (s == cur[-1] and s != 0)):
            runs.append([])
        runs[-1].append(s)
    return runs


@lru_cache(maxsize=1024)
def _expected(header: str) -> list[int] | None:
    sweep = _sweep(header)
    return expected_sizes(sweep.get("minbytes"), sweep.get("maxbytes"), sweep.get("step"), sweep.get("step_kind"))


@lru_cache(maxsize=256)
def expected_sizes(lo: object, hi: object, step: object, kind: object) -> list[int] | None:
    """The sizes nccl-tests' header line promises (minBytes..maxBytes by step), or None."""
    if not isinstance(lo, int) or not isinstance(hi, int) or lo > hi or not isinstance(step, int):
        return None
    if lo == hi:
        return [lo]
    sizes: list[int] = []
    s = lo
    if kind == "factor" and step >= 2 and lo > 0:
        while s <= hi and len(sizes) < MAX_SWEEP_SIZES:
            sizes.append(s)
            s *= step
    elif kind == "bytes" and step > 0 and (hi - lo) // step < MAX_SWEEP_SIZES:
        sizes = list(range(lo, hi + 1, step))
    return sizes or None


def _covers(got: list[int], expected: list[int], ranks: int) -> bool:
    """Whether the printed sizes are the requested ones, each rounded down as nccl-tests does
    (to whole elements, and for gather-type ops to a multiple of the rank count)."""
    if len(got) != len(expected):
        return False
    slack = max(8 * ranks if ranks else 8 * 4096, 8)
    short = list(map(operator.sub, expected, got))
    return min(short) >= 0 and max(short) < slack


@lru_cache(maxsize=1024)   # concatenated logs repeat the same header line
def _sweep(header: str) -> dict[str, object]:
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


def names_op(line: str) -> bool:
    """Whether ``line``, read alone, is a command line naming an op and nothing else a run holds
    (not a ``Collective test`` line in a document's markup, a failure naming the program):
    nccl_parallel cuts a log before such a line, where one pass starts the next run too."""
    parser = NcclTextParser()
    for text in clean_lines([line]):
        parser.feed(text)
    st = parser.state
    return st.op_hint is not None and st == _State(parser.name, op_hint=st.op_hint, hint_line=st.hint_line)


class ForeignLine(Exception):
    """Another tool's output begins at ``line`` (``text``: from there on, with its command line)."""

    def __init__(self, line: str, text: str = "") -> None:
        super().__init__(line)
        self.line, self.text = line, text


def parse_lines(lines: Iterable[str], name: str = "") -> Iterator[ImportedRun]:
    """Runs in an nccl-tests/rccl-tests text log, each yielded once the next one starts.

    Given ``Lines`` that say where other tools' output begins (``Lines.foreign``), a line of
    another tool ends the nccl-tests part: its runs are finished and the rest of the log is
    handed back (``ForeignOutput``) to be read by the tool that wrote it."""
    yield from parse_chunks(NcclTextParser(name, getattr(lines, "foreign", None)), text_chunks(lines))


def parse_chunks(parser: NcclTextParser, chunks: Iterator[str]) -> Iterator[ImportedRun]:
    """The runs in cleaned blocks of text (``text_chunks``), read by ``parser`` from the state it
    is in; see ``parse_lines``."""
    for text in chunks:
        try:
            yield from parser.feed_text(text)
        except ForeignLine as f:
            done = parser.finish()
            if done is not None:
                yield done
            raise ForeignOutput(f.text + "".join(chunks)) from None
    done = parser.finish()
    if done is not None:
        yield done
