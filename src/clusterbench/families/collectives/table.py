"""The nccl-tests table, rendered from records alone (a native run, a stored run, or an imported
nccl-tests/rccl-tests log all print the same way).

Reads: measurements ``time_us``/``algbw``/``busbw``/``wrong`` per row and placement, per-run
``avg_busbw``/``out_of_bounds``; and, when present, run meta ``coll_sweep.<op>`` (the values of
nccl-tests' first header line), ``rank_pids``/``rank_device_index``/``rank_bus_id``,
``rank_numbers`` (the ranks a cut or elided list of an import shows) and ``op_from`` (what an
import read the op from).
Missing values print ``N/A``, as nccl-tests does for an unchecked ``#wrong``. Old nccl-tests'
``max_error`` prints in the #wrong column as it did (``4e-07``); a row above nccl-tests' own
tolerance (``error_tolerance``) counts as out of bounds and the footer says so.
"""

from __future__ import annotations

import math
from typing import Any

from clusterbench.families.collectives.spec import (
    ALGBW,
    AVG_BUSBW,
    BUSBW,
    MAX_ERROR,
    OUT_OF_BOUNDS,
    ROW_METRICS,
    TIME,
    WRONG,
    error_tolerance,
)
from clusterbench.records import Measurement, Run
from clusterbench.units import fit, fixed

IMPORTED = "import"   # the benchmark of an imported run's record (ingest.common.IMPORT_BENCHMARK)

_ROW_NAMES = frozenset(m.name for m in ROW_METRICS) | {MAX_ERROR.name}


def format_time(us: float) -> str:
    """nccl-tests' time column: %7.0f from 10 ms, %7.1f from 100 us, else %7.2f; %g where even
    %7.0f is wider than the column."""
    if us >= 10000.0:
        return fixed(us, 7, 0)
    if us >= 100.0:
        return fixed(us, 7, 1)
    return fixed(us, 7, 2)


def _exact(value: float, text: str, width: int) -> str:
    """An imported value's cell: ``text`` (the value as nccl-tests' column formats it) where that
    fits the column and reads back as the same number, else the shortest text that reads back as
    it, in the column's width where one fits (``557.18`` in a %7.1f time column of a 2.17+ log,
    ``1807.9`` where %6.2f is too wide, a #wrong of ``131072``, never ``1e+05``; rccl-tests' JSON
    values with all their digits). A value read back from ``results show`` is then the value
    stored, and a column never claims more decimals than the log printed."""
    if len(text) <= width and float(text) == value:
        return text
    candidates = [f"{value:.{digits}g}" for digits in range(1, 18)]
    if abs(value) < 1e16:
        candidates += [f"{value:.{decimals}f}" for decimals in range(0, 18)]
    exact = [c for c in candidates if float(c) == value] or [repr(float(value))]
    return min(exact, key=lambda c: (len(c) > width, len(c), "e" in c)).rjust(width)


def _exact_count(value: float, width: int) -> str:
    """An imported count (#wrong) as it reads back, never rounded (``_exact``)."""
    return _exact(value, f"{int(value):{width}d}" if value == int(value) else repr(value), width)


def _row_key(params: dict[str, Any]) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in params.items() if k != "placement"))


def _cell(values: dict[str, float] | None, exact: bool = False) -> str:
    """One placement's columns, N/A for each value not stored: a placement not run, an old log
    without algbw, or a log that printed nan or inf there. ``exact``: an imported run's values,
    each printed so that it reads back as stored (``_exact``)."""
    values = values or {}
    time = format_time(values[TIME.name]) if TIME.name in values else f"{'N/A':>7s}"
    if WRONG.name in values:
        v = values[WRONG.name]
        wrong = _exact_count(v, 5) if exact else fit(f"{int(v):5d}", v, 5)
    elif MAX_ERROR.name in values:
        v = values[MAX_ERROR.name]
        wrong = _exact(v, f"{v:5.0e}", 5) if exact else fit(f"{v:5.0e}", v, 5)
    else:
        wrong = f"{'N/A':>5s}"
    alg = fixed(values[ALGBW.name], 6, 2) if ALGBW.name in values else f"{'N/A':>6s}"
    bus = fixed(values[BUSBW.name], 6, 2) if BUSBW.name in values else f"{'N/A':>6s}"
    if exact:
        time = _exact(values[TIME.name], time, 7) if TIME.name in values else time
        alg = _exact(values[ALGBW.name], alg, 6) if ALGBW.name in values else alg
        bus = _exact(values[BUSBW.name], bus, 6) if BUSBW.name in values else bus
    return f"  {time}  {alg}  {bus}  {wrong}"


def _int(v: Any, default: int = -1) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def engine_line(sweep: dict[str, Any]) -> str:
    """Which engine measured the op (runs stored before ``--engine`` existed say nothing):
    ``# Engine: torch (torch.distributed, gloo backend)``, ``# Engine: nccl (NCCL 2.30.7 called
    directly, /path/libnccl.so.2)``."""
    engine = sweep.get("engine")
    if engine == "torch":
        backend = sweep.get("backend")
        return f"# Engine: torch (torch.distributed{f', {backend} backend' if backend else ''})"
    if engine:
        library = sweep.get("library")
        return f"# Engine: {engine} ({sweep.get('version') or engine} called directly{f', {library}' if library else ''})"
    return ""


class CollTable:
    """The nccl-tests table of one collective."""

    # Notes print after the table (its footer), never between the column header and the rows:
    # the parsers of nccl-tests output read what follows the header as rows (docs/collectives.md)
    notes_after_table = True

    def __init__(self, op: str) -> None:
        self.op = op
        # an imported run (set by ``header``): its values print so that they read back as stored,
        # its footer only as the log printed it
        self.exact = False

    def header(self, run: Run) -> list[str]:
        self.exact = run.benchmark == IMPORTED
        lines = [f"# Collective test: {self.op}"]
        op_from = run.meta.get("op_from")
        if isinstance(op_from, list) and op_from:   # an import: what it read the op from
            lines.append(f"# op from: {', '.join(map(str, op_from))}")
        sweep = run.meta.get(f"coll_sweep.{self.op}")
        if isinstance(sweep, dict):
            lines.append(
                f"# nThread {sweep.get('nthread', 1)} nGpus {sweep.get('ngpus', 1)} minBytes "
                f"{sweep.get('minbytes', '?')} maxBytes {sweep.get('maxbytes', '?')} step: "
                f"{sweep.get('step', '?')}({sweep.get('step_kind', 'factor')}) warmup iters: "
                f"{sweep.get('warmup_iters', '?')} iters: {sweep.get('iters', '?')} agg iters: "
                f"{sweep.get('agg_iters', 1)} validation: {sweep.get('validation', 1)} graph: "
                f"{sweep.get('graph', 0)}")
            engine = engine_line(sweep)
            if engine:
                lines.append(engine)
        lines += ["#", "# Using devices"]
        hosts = run.meta.get("rank_hosts") or run.hosts
        pids = run.meta.get("rank_pids") or []
        index = run.meta.get("rank_device_index") or []
        bus = run.meta.get("rank_bus_id") or []
        # the ranks an imported list shows, where it was cut or elided (run meta rank_numbers)
        numbers = run.meta.get("rank_numbers") or []
        for r, name in enumerate(run.devices):
            host = hosts[r] if r < len(hosts) else "?"
            pid = _int(pids[r]) if r < len(pids) else -1
            dev = _int(index[r]) if r < len(index) else -1
            where = f"device {dev:2d} [{bus[r] if r < len(bus) and bus[r] else '?'}]" if dev >= 0 \
                else "device cpu"
            shown = _int(numbers[r], r) if r < len(numbers) else r
            lines.append(f"#  Rank {shown:2d} Group  0 Pid {pid if pid >= 0 else '?':>6} on {host:>10s} {where} {name}")
        # old nccl-tests' error column (max_error) keeps its name: read back, it is no count
        wrong = "error" if self.exact and run.meta.get("error_column") else "#wrong"
        lines += [
            "#",
            f"# {'':>10s}  {'':>12s}  {'':>8s}  {'':>6s}  {'':>6s}           out-of-place"
            "                       in-place          ",
            f"# {'size':>10s}  {'count':>12s}  {'type':>8s}  {'redop':>6s}  {'root':>6s}  {'time':>7s}  "
            f"{'algbw':>6s}  {'busbw':>6s} {wrong:>6s}  {'time':>7s}  {'algbw':>6s}  {'busbw':>6s} {wrong:>6s}",
            f"# {'(B)':>10s}  {'(elements)':>12s}  {'':>8s}  {'':>6s}  {'':>6s}  {'(us)':>7s}  "
            f"{'(GB/s)':>6s}  {'(GB/s)':>6s}  {'':>5s}  {'(us)':>7s}  {'(GB/s)':>6s}  {'(GB/s)':>6s}  {'':>5s}",
        ]
        return lines

    def rows(self, measurements: list[Measurement]) -> list[str]:
        # Rows in the order the records come, one per line nccl-tests printed: a row with the
        # params of an earlier one (the size-0 rows of gather-type ops on many ranks, a size run
        # twice) is a row of its own as soon as a value it already holds comes again.
        rows: list[dict[str, Any]] = []
        last: dict[tuple, dict[str, Any]] = {}
        for m in measurements:
            if m.metric not in _ROW_NAMES:
                continue
            key = _row_key(m.params)
            place = "in" if str(m.params.get("placement", "out")) == "in" else "out"
            row = last.get(key)
            if row is None or m.metric in row[place]:
                row = last[key] = {"params": m.params, "out": {}, "in": {}}
                rows.append(row)
            row[place][m.metric] = m.value
        lines = []
        for row in rows:
            p = row["params"]
            lines.append(f"{_int(p.get('bytes'), 0):12d}  {_int(p.get('count'), 0):12d}  "
                         f"{str(p.get('dtype', '?')):>8s}  {str(p.get('redop', 'none')):>6s}  "
                         f"{_int(p.get('root')):6d}" + _cell(row["out"], self.exact) + _cell(row["in"], self.exact))
        return lines

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]:
        oob = [m.value for m in measurements if m.metric == OUT_OF_BOUNDS.name]
        avg = [m.value for m in measurements if m.metric == AVG_BUSBW.name]
        over = errors_over_tolerance(run, measurements)
        if self.exact:
            # an imported log: its footer as it printed it; a line it did not print (a log cut
            # short) is not made up, or read back it would be stored as the tool's
            lines = [f"# Out of bounds values : {_count(sum(oob))} {'FAILED' if sum(oob) else 'OK'}" if oob
                     else "# Out of bounds values : N/A"]
            lines += [f"# Avg bus bandwidth    : {a:g} " if float(f"{a:g}") == a else f"# Avg bus bandwidth    : {a!r} "
                      for a in avg] or ["# Avg bus bandwidth    : N/A"]
            if over:
                lines.append(self._over_line(run, over))
            return lines + ["#", f"# Collective test concluded: {self.op}"]
        if not oob:  # an incomplete run: count from the rows that finished
            oob = [float(sum(1 for m in measurements if m.metric == WRONG.name and m.value > 0) + len(over))]
        if not avg:
            bws = [m.value for m in measurements if m.metric == BUSBW.name]
            avg = [_mean(bws)] if bws else []
        bad = _count(sum(oob))
        lines = [f"# Out of bounds values : {bad} {'FAILED' if bad != '0' else 'OK'}"]
        for a in avg or [None]:
            lines.append(f"# Avg bus bandwidth    : {a:g} " if a is not None else "# Avg bus bandwidth    : N/A")
        if over:
            lines.append(self._over_line(run, over))
        lines += ["#", f"# Collective test concluded: {self.op}"]
        return lines

    @staticmethod
    def _over_line(run: Run, over: list[Measurement]) -> str:
        worst = max(over, key=lambda m: m.value)
        tol = error_tolerance(str(worst.params.get("dtype", "")), _ranks(run, worst))
        return (f"# Max error above nccl-tests' tolerance on {len(over)} rows (worst {worst.value:g} at "
                f"{_int(worst.params.get('bytes'), 0)} B, tolerance {tol:g}): FAILED")


def _mean(values: list[float]) -> float:
    """The mean, also of values whose sum passes the float limit (two of 1e308)."""
    total = sum(values)
    return total / len(values) if math.isfinite(total) else sum(v / len(values) for v in values)


def _count(total: float) -> str:
    """A count of values as nccl-tests prints it (%d), or %g where it is no exact whole number
    of sensible size: a stored count of 1e308 (or two that sum past the float limit)."""
    return str(int(total)) if abs(total) < 2 ** 53 else f"{total:g}"


def _ranks(run: Run, m: Measurement) -> int:
    return _int(m.params.get("ranks"), 0) or run.ranks or 0


def errors_over_tolerance(run: Run, measurements: list[Measurement]) -> list[Measurement]:
    """The ``max_error`` records above nccl-tests' tolerance for their type and rank count."""
    out = []
    for m in measurements:
        if m.metric != MAX_ERROR.name:
            continue
        tol = error_tolerance(str(m.params.get("dtype", "")), _ranks(run, m))
        if tol is not None and m.value > tol:
            out.append(m)
    return out
