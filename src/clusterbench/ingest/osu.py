"""OSU Micro-Benchmarks output (osu_bw, osu_bibw, osu_latency, osu_allreduce, ...) -> records.

The benchmark is named by its program, as OSU ships it: from the command line printed before
the test when there is one (``osu_xccl_allreduce``), else from the title OSU prints for that
program (``# OSU MPI-CUDA Bi-Directional Bandwidth Test`` -> ``osu_bibw``; NCCL/RCCL variants are
the ``osu_xccl_*`` programs). OSU's MB/s is 10^6 bytes per second. Every title line starts a run;
``export K=V`` lines and the launch command printed before it are kept with that run.

Buffer placement is a parameter (``buffers``: ``D D``, ``H H``, ``H D``, send then receive):
from OSU's ``# Send Buffer on DEVICE (D) and Receive Buffer on HOST (H)`` line, else from the
command line (``-d cuda D D``; ``-d`` alone puts both on the device). Launcher and MPI chatter
inside the table (Open MPI help messages, MVAPICH2's performance warnings, libfabric warnings)
is not a row; warnings are kept with the run, failures make it incomplete, and a table with no
row at all (a hung test) is incomplete, never a bandwidth of 0.

OSU 7.x columns are found by name (osu-micro-benchmarks c/util/osu_util_mpi.c, print_only_header):
``-c`` adds ``Validation`` (``Pass``/``Fail`` on each row): a ``Fail`` row's figures are not stored
and the run is ``failed``, as is one that printed ``DATA VALIDATION ERROR``; ``--full`` adds Min/Max
latency and ``Iterations``; ``-z`` adds ``P50 Tail Lat(us)`` / ``P99 Tail BW(MB/s)`` (stored with
``stat`` p50, p99...); ``-D`` adds ``Transmit Size`` (not stored). ``-T`` prints one table per
datatype under one title, each after its ``# Datatype: MPI_INT.`` line: the rows carry ``dtype``
(``int``) whenever a run's datatype is not OSU's default MPI_CHAR or it has several, so a
default run compares with those of OSU versions that printed no datatype.

``osu_mbw_mr -v`` (vary the window size; osu-micro-benchmarks osu_mbw_mr.c, 5.3 to 7.x) prints no
``# Size`` header: under ``# [ pairs: N ] [ window size: varied ]`` come two matrices, each after
its title (``# Uni-directional Bandwidth (MB/sec)``, then ``# Message Rate Profile`` unless
``-r 0``) and a ``#`` line of the window sizes (1 2 4 ... 128); each row is a message size and its
figure at every window. Each cell is one record with the window as its ``window`` param, as a
single-window run's rows carry it.

``-G tty`` (OSU 7.x, osu_util_graph.c) has gnuplot draw one ASCII graph per message size after
the whole table, each titled ``Size: N, Avg:X``: from that line on, up to the next test's title,
nothing is a row (the graphs' tick labels are numbers at a line's start).
"""

from __future__ import annotations

import re

from clusterbench.families.net.spec import LATENCY, MSG_RATE, OSU_BANDWIDTH, OSU_PREFIX
from clusterbench.ingest.common import (
    ImportedRun,
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
from clusterbench.records import FAILED, INCOMPLETE, Measurement

_TITLE = re.compile(r"^#\s*OSU\s+(\S+)\s+(.*?)\s+Test(?:\s+v?([\d.]+))?\s*$")
_LABEL = re.compile(r"(?:(Avg|Min|Max|P\d+(?:\.\d+)?)\s+)?(?:Tail\s+)?Lat(?:ency)?\s*\(us\)"
                    r"|(?:(P\d+(?:\.\d+)?)\s+Tail\s+BW\s*)?\(MB/s\)|Bandwidth\s*\(MB/s\)"
                    r"|MB/s|Messages/s|Iterations|Validation|Transmit Size")
_DATATYPE = re.compile(r"^Datatype:\s*(\S+?)\.?$")
_VALIDATION_ERROR = re.compile(r"DATA VALIDATION ERROR", re.IGNORECASE)
# the title osu_util_graph.c gives each -G graph ("Size: %zu, Avg:%.*f"), which gnuplot draws
_GRAPH_TITLE = re.compile(r"^Size:\s*\d+,\s*Avg:\s*\S+$")
# osu_mbw_mr -v: the titles of its two matrices -> the metric of their cells
_MATRICES = {"Uni-directional Bandwidth (MB/sec)": "bandwidth", "Message Rate Profile": "msg_rate"}
# OSU's titles -> its programs (osu-micro-benchmarks c/mpi/*/*.c, print_header)
_NAMES = {"bandwidth": "osu_bw", "bi-directional bandwidth": "osu_bibw", "latency": "osu_latency",
          "multi-threaded latency": "osu_latency_mt", "multi-process latency": "osu_latency_mp",
          "multi latency": "osu_multi_lat", "broadcast latency": "osu_bcast", "barrier latency": "osu_barrier",
          "multiple bandwidth / message rate": "osu_mbw_mr", "multiple bandwidth/message rate": "osu_mbw_mr",
          "non-blocking broadcast latency": "osu_ibcast", "non-blocking barrier latency": "osu_ibarrier"}
# one-sided tests name their MPI call where the others name the library (``# OSU MPI_Put
# Bandwidth Test``): the call -> the program's stem (osu-micro-benchmarks c/mpi/one-sided/*.c)
_ONE_SIDED = {"mpi_put": "put", "mpi_get": "get", "mpi_accumulate": "acc", "mpi_fetch_and_op": "fop",
              "mpi_compare_and_swap": "cas", "mpi_get_accumulate": "get_acc"}
_ONE_SIDED_KIND = {"latency": "latency", "bandwidth": "bw", "bi-directional bandwidth": "bibw"}
_PROGRAM = re.compile(r"\b(osu_\w+)")
# a line the program (or the loader, on its behalf) prints about itself: ``.../osu_bibw: message``
_MESSAGE = re.compile(r"\bosu_\w+:\s")
# buffers in a banner or note: ``--- osu_bw (D D, up to 4 MiB) ---``
_BUFFER_NOTE = re.compile(r"\(([HDM]{1,2})\s+([HDM]{1,2})\s*[,)]")
_BUFFER = re.compile(r"\b([HDM]{1,2})\s+([HDM]{1,2})\s*$")
_DEVICE = re.compile(r"(?:^|\s)(?:-d|--accelerator)[ =](cuda|rocm|openacc|sycl)\b")
_FATAL = re.compile(r"\babort|Segmentation fault|\bkilled\b|exited on signal|\bterminated\b|timed? ?out|CANCELLED",
                    re.IGNORECASE)
_NOISE = re.compile(r"help message|orte_base_help_aggregate|to see all help")   # Open MPI's help aggregation
_WARNING = re.compile(r"\bwarn(?:ing)?\b|<warn>|\bfail(?:ed|ure)?\b|\berror\b", re.IGNORECASE)


def bench_name(variant: str, title: str) -> str:
    """The OSU program that prints this title (osu-micro-benchmarks c/mpi/*/*.c, ``BENCHMARK``):
    ``Non-blocking X`` is osu_iX, ``Neighborhood X`` osu_neighbor_X, ``X Persistent`` osu_X_persistent,
    ``All-to-All Personalized Exchange`` osu_alltoall, ``Broadcast`` osu_bcast."""
    key = " ".join(title.strip().lower().split())
    call = _ONE_SIDED.get(variant.lower())
    if call and key in _ONE_SIDED_KIND:
        return f"{OSU_PREFIX}{call}_{_ONE_SIDED_KIND[key]}"
    prefix = OSU_PREFIX + ("xccl_" if variant.upper().startswith(("NCCL", "RCCL", "XCCL")) else "")
    if key in _NAMES:
        return prefix + _NAMES[key][len(OSU_PREFIX):]
    suffix = ""
    if " persistent" in key:
        key, suffix = key.replace(" persistent", ""), "_persistent"
    if key in _NAMES:
        return prefix + _NAMES[key][len(OSU_PREFIX):] + suffix
    for word, stem in (("non-blocking ", "i"), ("neighborhood ", "neighbor_")):
        if key.startswith(word):
            key, prefix = key[len(word):], prefix + stem
    key = key.removesuffix(" latency").removesuffix(" bandwidth").replace(" personalized exchange", "")
    key = {"broadcast": "bcast"}.get(key, key.replace("all-to-all", "alltoall"))
    return prefix + key.replace("-", "_").replace(" ", "_") + suffix


class _Run:
    def __init__(self, name: str, m: re.Match[str] | None, env: dict[str, str], command: str) -> None:
        """``m``: the test's title; None for a table printed without one, after a command line
        or banner naming its program (a script that kept only the first title)."""
        self.run = new_run("osu", name)
        program = _PROGRAM.search(command) if command else None
        if m is None:
            assert program is not None
            titled = program.group(1)
            self.run.meta["untitled"] = "no OSU title: the test named by the line before its table"
        else:
            titled = bench_name(m.group(1), m.group(2))
            self.run.meta["variant"] = m.group(1)
        # the program on the command line, when it is this test's (a title names its family)
        self.bench = program.group(1) if program and _same_test(program.group(1), titled) else titled
        version = (m.group(3) or "") if m is not None else ""
        self.run.source = f"osu {version}".strip()
        if version:
            self.run.versions["osu"] = version
        self.run.meta["benchmark"] = self.bench
        self.run.env = env
        self.params: dict[str, object] = {}
        if command:
            self.run.meta["log_command"] = command
            self.params.update(_buffers_of_command(command))
        self.cols: list[tuple[str, str]] = []
        self.ms: list[Measurement] = []
        self.rows = 0
        self.elided = 0
        self.fatal = False
        self.failed = False   # OSU's own data validation (-c) failed
        self.header_text = ""
        self.unread = 0   # rows of a table none of whose columns is one clusterbench stores
        self.invalid: list[int] = []   # sizes whose row says Fail (-c)
        self.dtype = ""
        self.dtype_of: list[str] = []   # the datatype of each of self.ms
        self.matrix = ""   # osu_mbw_mr -v: the metric of the matrix being read
        self.windows: list[int] = []   # ... and the window size of each of its columns
        self.graphs = False   # -G tty: the graphs after the table have begun
        self.varied = False   # osu_mbw_mr -v
        self.done = False     # a command line after its rows: the next table is another test's

    def header(self, line: str) -> None:
        cols = []
        for m in _LABEL.finditer(line):
            label = m.group(0)
            if label in ("Iterations", "Validation", "Transmit Size"):
                cols.append((label.lower().replace(" ", "_"), ""))
            elif "Lat" in label:
                stat = (m.group(1) or "avg").lower()
                cols.append(("latency_us", stat))
            elif "Messages" in label:
                cols.append(("msg_rate", ""))
            else:
                cols.append(("bandwidth", (m.group(2) or "").lower()))
        self.cols = cols
        self.header_text = line
        self.matrix, self.windows = "", []

    def start_matrix(self, metric: str) -> None:
        self.matrix, self.windows = metric, []
        self.cols = []

    def matrix_row(self, toks: list[str]) -> None:
        """A row of osu_mbw_mr -v: a size, then its figure at each window size."""
        size = to_int(toks[0])
        if size is None:
            return
        cells = toks[1:]
        if len(cells) < len(self.windows):
            add_warning(self.run, f"a row with {len(cells)} of its {len(self.windows)} values (the log is cut "
                                  f"short?), its last value not stored: {shown(' '.join(toks))}")
            cells = cells[:-1]
        added = False
        for window, raw in zip(self.windows, cells):
            value = to_float(raw)
            if value is None:
                continue
            params = {**self.params, "bytes": size, "window": window}
            if self.matrix == "bandwidth":
                self.keep(OSU_BANDWIDTH(self.bench, value / 1000.0, params))
            else:
                self.keep(MSG_RATE(self.bench, value / 1e6, params))
            added = True
        self.rows += added

    def row(self, toks: list[str]) -> None:
        size = to_int(toks[0])
        if size is None:
            return
        if not self.cols:
            self.unread += bool(self.header_text)
            return
        params = {**self.params, "bytes": size}
        cells = toks[1:]
        if len(cells) < len(self.cols):
            # the log was cut in this row (a killed job): its last cell may be the start of a number
            add_warning(self.run, f"a row with {len(cells)} of its {len(self.cols)} values (the log is cut "
                                  f"short?), its last value not stored: {shown(' '.join(toks))}")
            cells = cells[:-1]
        row = list(zip(self.cols, cells))
        verdict = next((raw for (metric, _), raw in row if metric == "validation"), None)
        if verdict is not None and verdict != "Pass":
            # OSU checked the data it moved (-c) and it was wrong: a figure of a broken transfer
            self.invalid.append(size)
            return
        added = False
        for (metric, stat), raw in row:
            value = to_float(raw)
            if value is None or metric in ("iterations", "validation", "transmit_size"):
                continue
            added = True
            if metric == "bandwidth":
                self.keep(OSU_BANDWIDTH(self.bench, value / 1000.0, {**params, "stat": stat} if stat else params))
            elif metric == "msg_rate":
                self.keep(MSG_RATE(self.bench, value / 1e6, params))
            else:
                self.keep(LATENCY(self.bench, value, {**params, "stat": stat}))
        self.rows += added

    def keep(self, m: Measurement) -> None:
        self.ms.append(m)
        self.dtype_of.append(self.dtype)

    def datatype(self, name: str) -> None:
        self.dtype = name
        self.run.meta.setdefault("datatypes", [])
        if name not in self.run.meta["datatypes"]:
            self.run.meta["datatypes"].append(name)

    def finish_datatypes(self) -> None:
        """``dtype`` on the rows where the datatype is not OSU's only one before 7.x (see the module doc)."""
        seen = self.run.meta.get("datatypes", [])
        if not seen or seen == ["MPI_CHAR"]:
            return
        for m, name in zip(self.ms, self.dtype_of):
            if name:
                m.params["dtype"] = name.lower().removeprefix("mpi_")

    def chatter(self, line: str) -> None:
        """A launcher's or MPI library's line inside the test's output."""
        if _NOISE.search(line):
            return
        # a line that says it is a warning is one, whatever it is about ('WARNING: ... timed
        # out, retrying'): a library's or launcher's warning never changes a run's status
        if _FATAL.search(line) and not is_warning(line):
            self.fatal = True
            add_error(self.run, line)
        elif _WARNING.search(line):
            add_warning(self.run, line)


def _same_test(program: str, titled: str) -> bool:
    return program == titled or program.replace("xccl_", "") == titled.replace("xccl_", "") \
        or program.startswith(titled) or titled.startswith(program)


def _buffers_of_command(command: str) -> dict[str, str]:
    """``buffers`` from the command line: ``osu_bw -d cuda D H`` -> ``D H``; ``-d`` alone: ``D D``;
    a script's banner ``--- osu_bw (D D) ---``."""
    m = _BUFFER.search(command) or _BUFFER_NOTE.search(command)
    if m and (_DEVICE.search(command) or m.group(1) != m.group(2) or m.group(1) in ("D", "M")):
        return {"buffers": f"{m.group(1)} {m.group(2)}"}
    if _DEVICE.search(command):
        return {"buffers": "D D"}
    return {}


def parse(text: str, name: str = "") -> list[ImportedRun]:
    runs: list[_Run] = []
    cur: _Run | None = None
    env: dict[str, str] = {}
    command = ""
    for line in clean_lines(text_lines(text)):
        s = line.strip()
        if not s:
            continue
        m = _TITLE.match(s)
        if m:
            cur = _Run(name, m, env, command)
            runs.append(cur)
            env, command = {}, ""
            continue
        if s.startswith("export ") and "=" in s:
            key, _, value = s[len("export "):].partition("=")
            env[key.strip()] = value.strip()
            continue
        if _VALIDATION_ERROR.search(s):
            # 'DATA VALIDATION ERROR: .../osu_allreduce exited with status 1 on message size 16.'
            # names the program's path: it is not a command line
            if cur is not None:
                cur.fatal = cur.failed = True
                add_error(cur.run, s)
            continue
        if OSU_PREFIX in s and not s.startswith("#") and not _MESSAGE.search(s):
            # the launch command (or a script's banner naming the test) of the test that follows
            command = s.lstrip("$> ")
            if cur is not None and cur.rows:
                cur.done = True   # the next table is another invocation's, titled or not
            continue
        if cur is None:
            continue
        if cur.graphs or _GRAPH_TITLE.match(s):
            cur.graphs = True   # -G tty: gnuplot's graphs follow the whole table
            continue
        if s.startswith("#"):
            body = s.lstrip("#").strip()
            dtype = _DATATYPE.match(body)
            if body.startswith("Size") and cur.done and command:
                # a table without its title after another test's command or banner: its own run
                # (never the rows of the test before it), named by that line's program
                cur = _Run(name, None, env, command)
                runs.append(cur)
                env, command = {}, ""
                cur.header(body)
            elif body.startswith("Size"):
                cur.header(body)
            elif body in _MATRICES:
                cur.start_matrix(_MATRICES[body])
            elif cur.matrix and body and all(t.isdigit() for t in body.split()):
                cur.windows = [int(t) for t in body.split()]
            elif dtype:
                cur.datatype(dtype.group(1))
                if cur.varied:
                    # 7.x -v -T: the bandwidth title is printed once, before the first datatype;
                    # each datatype's bandwidth matrix starts after its own Datatype line
                    cur.start_matrix("bandwidth")
            elif "Buffer on" in body:
                cur.params["buffers"] = " ".join(re.findall(r"\((\w{1,2})\)", body))
            elif body.startswith(("Window creation:", "Synchronization:")):
                # a one-sided test's window and synchronization calls change its figures
                key, _, value = body.partition(":")
                cur.params[key.strip().lower().replace(" ", "_")] = value.strip()
            elif body.startswith("[ pairs:"):
                cur.varied = "window size: varied" in body
                for key, value in re.findall(r"(pairs|window size):\s*(\d+)", body):
                    cur.params["window" if key == "window size" else key] = int(value)
            continue
        toks = s.split()
        if toks[0].isdigit():
            if cur.windows:
                cur.matrix_row(toks)
            else:
                cur.row(toks)
        elif s.strip("[]. ") == "":   # '[...]' where a document left rows out
            cur.elided += 1
        else:
            cur.chatter(s)
    out = []
    for r in runs:
        r.finish_datatypes()
        if r.invalid:
            r.failed = True
            sizes = ", ".join(str(n) for n in r.invalid)
            add_error(r.run, f"data validation (-c) failed at message size{'s' if len(r.invalid) > 1 else ''} "
                             f"{sizes}: {'that row is' if len(r.invalid) == 1 else 'those rows are'} not stored")
            r.run.meta["validation_failed_sizes"] = r.invalid
        if r.unread:   # e.g. the non-blocking tests' Overall/Compute/Pure Comm./Overlap table
            add_warning(r.run, f"{r.unread} row{'s' if r.unread != 1 else ''} not stored: no column of "
                               f"'{r.header_text}' is one clusterbench "
                               "reads (latency, bandwidth, message rate)")
        if not r.ms and not r.run.errors and not r.run.meta.get("warnings"):
            continue
        if r.elided:
            r.run.meta["rows_elided"] = r.elided
            add_warning(r.run, "the log leaves rows out ('[...]'): not every size is stored")
        if not r.rows:
            r.run.status = INCOMPLETE
            if not r.unread:
                add_error(r.run, "no result row: the test printed its header and nothing after it")
        if r.fatal or r.elided:
            r.run.status = INCOMPLETE
        if r.failed:
            r.run.status = FAILED
        out.append(ImportedRun(r.run, r.ms))
    return out


IMPORTERS = (Importer("osu", re.compile(r"^\s*#\s*OSU\s+\S+.*Test", re.M), whole(parse), order=40,
                      starts=re.compile(r"^\s*#\s*OSU\s+\S+.*Test", re.M)),)
