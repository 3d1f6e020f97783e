"""Terminal tables. Each benchmark family registers a renderer; unknown ones get a generic table.

A renderer turns a run's header and measurements into lines, so the same code prints rows live
while a benchmark runs and re-prints a stored run (``clusterbench results show``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from typing import IO, Protocol

from clusterbench.dist.driver import Event
from clusterbench.records import Measurement, Run


class Renderer(Protocol):
    def header(self, run: Run) -> list[str]: ...

    def rows(self, measurements: list[Measurement]) -> list[str]: ...

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]: ...


# measurement.benchmark -> "module:Class" of its renderer. Families add their line here.
RENDERERS: dict[str, str] = {
    "train": "clusterbench.report.workload_tables:TrainRenderer",
    "ddp_comm": "clusterbench.report.workload_tables:DdpCommRenderer",
    "infer_tp": "clusterbench.report.workload_tables:InferTpRenderer",
    "stream": "clusterbench.report.stream_table:StreamRenderer",
    "gemm": "clusterbench.report.gemm_table:GemmRenderer",
    "transfer": "clusterbench.report.transfer_table:TransferRenderer",
    "net": "clusterbench.net.render:NetRenderer",
    "all_reduce": "clusterbench.report.coll_table:AllReduceTable",
    "all_gather": "clusterbench.report.coll_table:AllGatherTable",
    "reduce_scatter": "clusterbench.report.coll_table:ReduceScatterTable",
    "broadcast": "clusterbench.report.coll_table:BroadcastTable",
    "reduce": "clusterbench.report.coll_table:ReduceTable",
    "alltoall": "clusterbench.report.coll_table:AlltoallTable",
    "sendrecv": "clusterbench.report.coll_table:SendrecvTable",
    "gather": "clusterbench.report.coll_table:GatherTable",
    "scatter": "clusterbench.report.coll_table:ScatterTable",
    "hypercube": "clusterbench.report.coll_table:HypercubeTable",
}


def renderer_for(benchmark: str) -> Renderer:
    target = RENDERERS.get(benchmark)
    if target is None:
        return GenericRenderer()
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)()


def _fmt_value(v: float) -> str:
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.4g}" if abs(v) < 1e-3 or abs(v) >= 1e6 else f"{v:.3f}"


def run_header_lines(run: Run) -> list[str]:
    lines = [f"# {run.benchmark}: {run.ranks} rank(s) on {len(run.hosts)} host(s)"]
    for i, dev in enumerate(run.devices):
        hosts = run.meta.get("rank_hosts") or run.hosts
        host = hosts[i] if i < len(hosts) else "?"
        lines.append(f"#  Rank {i:2d} on {host:>12s} device {dev}")
    return lines


class GenericRenderer:
    """benchmark, metric, value, unit and the params, one measurement per line."""

    def header(self, run: Run) -> list[str]:
        return run_header_lines(run)

    def rows(self, measurements: list[Measurement]) -> list[str]:
        out = []
        for m in measurements:
            params = " ".join(f"{k}={v}" for k, v in m.params.items())
            out.append(f"{m.benchmark:>16s} {m.metric:>14s} {_fmt_value(m.value):>14s} {m.unit:<8s} {params}")
        return out

    def footer(self, run: Run, measurements: list[Measurement]) -> list[str]:
        return []


def render_run(run: Run, measurements: list[Measurement]) -> list[str]:
    """All lines for a stored run, grouped by benchmark in first-seen order."""
    groups: dict[str, list[Measurement]] = {}
    for m in measurements:
        groups.setdefault(m.benchmark, []).append(m)
    lines: list[str] = []
    if not groups:
        return run_header_lines(run) + ["# no measurements"]
    for bench, ms in groups.items():
        r = renderer_for(bench)
        lines += r.header(run) + r.rows(ms) + r.footer(run, ms)
    return lines


class TablePrinter:
    """Prints a run as it happens: header at the start, rows as they arrive, footer at the end."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out
        self._run = Run(benchmark="")
        self._renderers: dict[str, Renderer] = {}
        self._seen: dict[str, list[Measurement]] = {}
        self._closed: set[str] = set()
        self._header_data: dict | None = None

    def _write(self, lines: Iterable[str]) -> None:
        out = self.out or sys.stdout
        for line in lines:
            out.write(line + "\n")
        out.flush()

    def on_event(self, event: Event) -> None:
        if event.kind == "header":
            d = event.data
            self._run.ranks = d.get("ranks", 0)
            self._run.hosts = list(dict.fromkeys(d.get("hosts", [])))
            self._run.devices = list(d.get("devices", []))
            self._run.meta["rank_hosts"] = list(d.get("hosts", []))
            self._run.meta.update({k: d[k] for k in ("device_type", "backend") if k in d})
            self._run.versions = dict(d.get("versions", {}))
        elif event.kind == "measurements":
            batch: list[Measurement] = list(event.data)
            by_bench: dict[str, list[Measurement]] = {}
            for m in batch:
                by_bench.setdefault(m.benchmark, []).append(m)
            for bench, ms in by_bench.items():
                if bench not in self._renderers:
                    self._close_tables()  # a new table starts: finish the ones before it
                    self._renderers[bench] = renderer_for(bench)
                    self._run.benchmark = bench
                    self._write(self._renderers[bench].header(self._run))
                self._seen.setdefault(bench, []).extend(ms)
                self._write(self._renderers[bench].rows(ms))
        elif event.kind == "note":
            self._write([f"# {event.data}"])
        elif event.kind == "meta":  # e.g. per-rank pids a table header shows
            self._run.meta.update(event.data)

    def _close_tables(self, run: Run | None = None) -> None:
        for bench, r in self._renderers.items():
            if bench not in self._closed:
                self._closed.add(bench)
                self._write(r.footer(run or self._run, self._seen.get(bench, [])))

    def finish(self, run: Run, measurements: list[Measurement]) -> None:
        self._close_tables(run)
