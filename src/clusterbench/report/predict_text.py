"""``clusterbench predict``'s output: the step's communication plan with each collective's time,
one row per fabric (compute, communication, the two bounds, the prediction, throughput, what
bounds it), the checks against measured steps; as text lines and as JSON lines
(``prediction``, ``predicted_collective``, ``prediction_check``: docs/json.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterbench.bench.workloads.model import param_count
from clusterbench.judge.fabric import GemmPoint
from clusterbench.judge.predict import Prediction
from clusterbench.judge.predict_runs import Check, PredictReport
from clusterbench.judge.workload import DDP_COMM, Workload
from clusterbench.printable import printable
from clusterbench.report.jsonl import (
    PREDICTED_COLLECTIVE,
    PREDICTION,
    PREDICTION_CHECK,
    line,
    note_line,
)
from clusterbench.units import format_size


@dataclass(frozen=True)
class Row:
    """Identical collectives of one step, counted once."""

    op: str
    bytes: int
    ranks: int
    nodes: int
    placement: str
    phase: str
    dtype: str
    where: str
    seconds: float       # each
    runs: tuple[int, ...]
    count: int


def grouped(p: Prediction) -> list[Row]:
    rows: dict[tuple[Any, ...], Row] = {}
    for t in p.collectives:
        c = t.collective
        key = (c.op, c.bytes, c.ranks, c.nodes, c.placement, c.phase, c.dtype, t.where, t.seconds, t.curve.runs)
        old = rows.get(key)
        rows[key] = Row(*key, count=1 if old is None else old.count + 1)
    return list(rows.values())


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def workload_fields(w: Workload) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": w.kind, "strategy": w.layout.strategy, "ranks": w.layout.world,
                           "nodes": w.layout.nodes, "ranks_per_node": w.layout.ranks_per_node,
                           "shard_size": w.layout.shard_size, "dtype": w.dtype}
    if w.shape is not None:
        out.update(model=w.model or "custom", batch=w.batch, seq=w.shape.seq, layers=w.shape.layers,
                   hidden=w.shape.hidden, params=param_count(w.shape), shape=w.shape.to_dict())
    if w.kind == DDP_COMM:
        out.update(layers=w.layers, bytes=w.size_bytes)
    if w.bucket_cap_mb is not None or w.layout.strategy == "ddp":
        out["bucket_cap_mb"] = w.bucket_cap_mb
    return out


def prediction_line(p: Prediction) -> dict[str, Any]:
    return line(PREDICTION, fabric=p.fabric.label, what_if=p.fabric.what_if or None, link=p.fabric.link_text or None,
                runs=list(p.fabric.runs), workload=workload_fields(p.workload), compute_ms=_ms(p.compute_s),
                compute_source=p.compute.source, compute_parts={k: v * 1e3 for k, v in p.compute.parts},
                gemm_compute_ms=_ms(p.compute.from_gemm_s), comm_ms=_ms(p.comm_s),
                no_overlap_ms=_ms(p.no_overlap_s), full_overlap_ms=_ms(p.full_overlap_s), step_ms=_ms(p.step_s),
                overlap=p.overlap, tokens_per_s=p.tokens_per_s, samples_per_s=p.samples_per_s,
                algbw=p.algbw_gbs, mfu=p.mfu, comm_share=p.comm_share, bound=p.bound,
                collectives=len(p.collectives), notes=list(p.notes))


def collective_lines(p: Prediction) -> list[dict[str, Any]]:
    return [line(PREDICTED_COLLECTIVE, fabric=p.fabric.label, op=r.op, bytes=r.bytes, ranks=r.ranks, nodes=r.nodes,
                 placement=r.placement, phase=r.phase, dtype=r.dtype, count=r.count, time_ms=r.seconds * 1e3,
                 total_ms=r.seconds * r.count * 1e3, where=r.where, curve_runs=list(r.runs))
            for r in grouped(p)]


def check_line(c: Check) -> dict[str, Any]:
    p = c.prediction
    return line(PREDICTION_CHECK, run=c.run.id, benchmark=p.workload.kind, fabric=p.fabric.label,
                measured_step_ms=c.measured.step_s * 1e3, predicted_step_ms=p.step_s * 1e3, error=c.error,
                measured_comm_share=c.measured.comm_share, predicted_comm_share=p.comm_share,
                measured_bound=c.measured.bound, predicted_bound=p.bound, bound_right=c.bound_right)


def report_objects(report: PredictReport) -> list[dict[str, Any]]:
    """Per prediction its collectives then its row; then the checks; notes once each."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for p in report.predictions:
        out += collective_lines(p)
        out.append(prediction_line(p))
    out += [check_line(c) for c in report.checks]
    for p in report.predictions:
        for text in p.notes:
            if text not in seen:
                seen.add(text)
                out.append(note_line(text))
    return out


# -- text ------------------------------------------------------------------------------------------

def _gemm_text(used: dict[GemmPoint, float]) -> str:
    total = sum(used.values()) or 1.0
    return "; ".join(f"{g.m}x{g.n}x{g.k} {g.dtype} {g.tflops:.4g} TFLOP/s ({g.where}) for "
                     f"{100 * f / total:.0f}% of the FLOPs" for g, f in sorted(used.items(), key=lambda kv: -kv[1]))


def _cell(value: float | None, width: int, fmt: str = ".1f") -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}{fmt}}"


def plan_lines(p: Prediction) -> list[str]:
    rows = grouped(p)
    if not rows:
        return [f"# no collectives: {p.workload.layout.world} rank(s) exchange nothing"]
    out = [f"# communication per step on {p.fabric.label}:",
           f"#   {'op':<15} {'size':>10} {'ranks':>5} {'nodes':>5} {'place':>5} {'phase':<8} {'count':>5} "
           f"{'each_ms':>10} {'total_ms':>10}  curve"]
    for r in rows:
        mark = "" if r.where == "inside" else f" ({r.where} the curve)"
        out.append(f"    {r.op:<15} {format_size(r.bytes):>10} {r.ranks:>5} {r.nodes:>5} {r.placement:>5} "
                   f"{r.phase:<8} {r.count:>5} {r.seconds * 1e3:>10.3f} {r.seconds * r.count * 1e3:>10.3f}  "
                   f"run {','.join(map(str, r.runs))}{mark}")
    return out


def compute_lines(p: Prediction) -> list[str]:
    c = p.compute
    stream = f" (stream {p.bandwidth_gbs:.4g} GB/s, {p.bandwidth_where})" if p.bandwidth_gbs else ""
    out = [f"# compute ({c.source}): {c.seconds * 1e3:.1f} ms = "
           + " + ".join(f"{name} {sec * 1e3:.1f} ms" for name, sec in c.parts) + stream]
    if c.gemm_used:
        what = "from" if c.source == "GEMM rate" else "for comparison, from"
        out.append(f"# compute {what} the GEMM rate: {c.from_gemm_s * 1e3:.1f} ms, products at "
                   f"{_gemm_text(c.gemm_used)}")
    return out


def table_lines(preds: list[Prediction]) -> list[str]:
    width = max(16, *(len(p.fabric.label) for p in preds))
    out = [f"# {'fabric':<{width - 2}} {'compute_ms':>11} {'comm_ms':>10} {'no_overlap':>11} {'full_overlap':>12} "
           f"{'predicted':>10} {'tokens/s':>10} {'mfu':>6} {'comm':>5} bound"]
    for p in preds:
        rate = p.tokens_per_s if p.tokens_per_s is not None else None
        out.append(f"  {p.fabric.label:<{width - 2}} {p.compute_s * 1e3:>11.1f} {p.comm_s * 1e3:>10.1f} "
                   f"{p.no_overlap_s * 1e3:>11.1f} {p.full_overlap_s * 1e3:>12.1f} {p.step_s * 1e3:>10.1f} "
                   f"{_cell(rate, 10)} {_cell(p.mfu, 6, '.3f')} {p.comm_share:>5.2f} {p.bound}")
    return out


def check_lines(checks: list[Check]) -> list[str]:
    if not checks:
        return []
    out = [f"# check: {'run':>5} {'benchmark':<9} {'measured_ms':>11} {'predicted_ms':>12} {'error':>7} "
           f"{'comm meas':>9} {'comm pred':>9}  bound (measured / predicted)"]
    for c in checks:
        p = c.prediction
        share = c.measured.comm_share
        bound = f"{c.measured.bound or '-'} / {p.bound}" + ("" if c.bound_right is None else
                                                             " (right)" if c.bound_right else " (wrong)")
        out.append(f"         {c.run.id:>5} {p.workload.kind:<9} {c.measured.step_s * 1e3:>11.1f} "
                   f"{p.step_s * 1e3:>12.1f} {100 * c.error:>+6.1f}% {_cell(share, 9, '.2f')} "
                   f"{p.comm_share:>9.2f}  {bound}")
    return out


def report_lines(report: PredictReport) -> list[str]:
    """What ``predict`` prints: per workload its plan and compute, the fabrics' table, checks."""
    out: list[str] = []
    by_workload: dict[Workload, list[Prediction]] = {}
    for p in report.predictions:
        by_workload.setdefault(p.workload, []).append(p)
    for w, preds in by_workload.items():
        first = preds[0]
        out.append(f"# predict {w.describe()}")
        traffic = w.memory()
        flops = sum(m.flops for m in w.matmuls())
        out.append(f"# per rank and step: {len(first.collectives)} collectives, {flops / 1e9:.4g} GFLOP of matrix "
                   f"products, {traffic.total / 1e6:.4g} MB of memory-bound work ("
                   + ", ".join(f"{k} {b / 1e6:.3g} MB" for k, b in traffic.parts) + ")")
        out += plan_lines(first)
        out += compute_lines(first)
        out += table_lines(preds)
        out.append(f"# overlap: {first.overlap}")
    out += check_lines(report.checks)
    seen: list[str] = []
    for p in report.predictions:
        seen += [n for n in p.notes if n not in seen]
    out += [f"# note: {n}" for n in seen]
    return [printable(x) for x in out]
