"""Which figures a report has: one list built from the findings, rendered by HTML and saved to files."""

from __future__ import annotations

import re
from dataclasses import dataclass

from matplotlib.figure import Figure

from clusterbench.judge.findings import Findings
from clusterbench.records import Measurement
from clusterbench.report import plots

COLLECTIVE_METRICS = ("busbw", "algbw")


@dataclass
class FigureEntry:
    section: str  # collectives, transfer, stream, gemm, validation
    slug: str  # file name stem
    title: str
    figure: Figure


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60] or "figure"


def _by(rows: list[Measurement], benchmark: str, metric: str) -> list[Measurement]:
    return [m for m in rows if m.benchmark == benchmark and m.metric == metric]


def collective_benchmarks(f: Findings) -> list[str]:
    seen = []
    for r in f.all_rows:
        if r.m.metric in COLLECTIVE_METRICS and "bytes" in r.m.params and r.m.benchmark not in seen:
            seen.append(r.m.benchmark)
    return seen


def build_figures(f: Findings) -> list[FigureEntry]:
    out: list[FigureEntry] = []
    groups = [(g.label, [r.m for r in g.rows]) for g in f.groups]
    for bench in collective_benchmarks(f):
        for metric in COLLECTIVE_METRICS:
            series = []
            for label, ms in groups:
                rows = _by(ms, bench, metric)
                for placement in dict.fromkeys(str(m.params.get("placement", "")) for m in rows):
                    sel = [m for m in rows if str(m.params.get("placement", "")) == placement]
                    name = label if not placement else f"{label} ({placement}-place)"
                    series.append((name, sel))
            if not series:
                continue
            theory = f.theory.get((bench, metric))
            tl = f"optimal {metric} {theory:.2f} GB/s ({f.link or 'link_speed tag'})" if theory else ""
            out.append(FigureEntry("collectives", _slug(f"{bench}-{metric}"), f"{bench} {metric} vs message size",
                                   plots.collective_figure(bench, metric, series, theory, tl)))
    for label, ms in groups:
        pair_rows = [m for m in ms if m.benchmark == "transfer" and m.metric == "bandwidth"
                     and m.params.get("stat") == "pair" and m.params.get("src") and m.params.get("dst")
                     and not m.params.get("leg")]  # bidirectional: the combined <-> figure only
        kinds: dict[tuple[str, str, str], list[Measurement]] = {}
        for m in pair_rows:
            if str(m.params.get("test")) == "config":
                continue  # config tests are a handful of named transfers: a table, not a matrix
            k = (str(m.params.get("test", "")), str(m.params.get("direction", "")), str(m.params.get("method", "")))
            kinds.setdefault(k, []).append(m)
        for (test, direction, method), rows in kinds.items():
            if len(rows) < 2:
                continue
            title = " ".join(x for x in (f"transfer {test}", direction, method) if x) + f" ({label})"
            out.append(FigureEntry("transfer", _slug(f"transfer-{test}-{direction}-{method}-{label}"), title,
                                   plots.transfer_heatmap(rows, title)))
    stream = [(label, _by(ms, "stream", "bandwidth")) for label, ms in groups]
    if any(rows for _, rows in stream):
        out.append(FigureEntry("stream", "stream-bandwidth", "stream bandwidth",
                               plots.stream_figure([s for s in stream if s[1]])))
    gemm = [(label, _by(ms, "gemm", "tflops")) for label, ms in groups]
    if any(rows for _, rows in gemm):
        out.append(FigureEntry("gemm", "gemm-tflops", "GEMM TFLOP/s by dtype",
                               plots.gemm_figure([g for g in gemm if g[1]])))
    if f.outcomes:
        out.append(FigureEntry("validation", "validation", "validation margins", plots.validation_figure(
            [o.criterion.name for o in f.outcomes], [o.margin_pct for o in f.outcomes],
            [o.status for o in f.outcomes])))
    return out
