"""Which figures a report has: one list built from the findings and the families' figure specs,
rendered by HTML and saved to files."""

from __future__ import annotations

import re
from dataclasses import dataclass

from matplotlib.figure import Figure

from clusterbench.families import FAMILIES, Family, family_of
from clusterbench.families.base import Figure as FigureSpec
from clusterbench.judge.findings import Findings
from clusterbench.judge.history import Series, parse_time
from clusterbench.records import Measurement
from clusterbench.report import plots


@dataclass
class FigureEntry:
    section: str  # the family's name, or validation
    slug: str  # file name stem
    title: str
    figure: Figure


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60] or "figure"


def _by(rows: list[Measurement], benchmark: str, metric: str) -> list[Measurement]:
    return [m for m in rows if m.benchmark == benchmark and m.metric == metric]


def _kept(m: Measurement, spec: FigureSpec) -> bool:
    if any(str(m.params.get(k)) != v for k, v in spec.select.items()):
        return False
    return not any(k in m.params and (not values or str(m.params[k]) in values)
                   for k, values in spec.skip.items())


def benchmarks_of(f: Findings, family: Family) -> list[str]:
    """The family's benchmarks present in the findings, in first-seen order."""
    return list(dict.fromkeys(r.m.benchmark for r in f.all_rows if family.owns(r.m.benchmark)))


def _size_curves(f: Findings, family: Family, spec: FigureSpec,
                 groups: list[tuple[str, list[Measurement]]]) -> list[FigureEntry]:
    out = []
    for bench in benchmarks_of(f, family):
        for metric in spec.metrics:
            series = []
            for label, ms in groups:
                rows = [m for m in _by(ms, bench, metric) if spec.x in m.params]
                for part in dict.fromkeys(tuple(str(m.params.get(k, "")) for k in spec.split) for m in rows):
                    sel = [m for m in rows if tuple(str(m.params.get(k, "")) for k in spec.split) == part]
                    shown = " ".join(p for p in part if p)
                    series.append((f"{label} ({shown}-place)" if shown else label, sel))
            if not series:
                continue
            theory = f.theory.get((bench, metric))
            tl = f"optimal {metric} {theory:.2f} GB/s ({f.link or 'link_speed tag'})" if theory else ""
            unit = series[0][1][0].unit if series[0][1] else ""
            out.append(FigureEntry(family.name, _slug(f"{bench}-{metric}"), f"{bench} {metric} vs message size",
                                   plots.size_curve(f"{bench} {metric}", f"{metric} ({unit})", series,
                                                    spec.x, spec.x_label, theory, tl)))
    return out


def _matrices(family: Family, spec: FigureSpec,
              groups: list[tuple[str, list[Measurement]]]) -> list[FigureEntry]:
    out = []
    for label, ms in groups:
        for bench in dict.fromkeys(m.benchmark for m in ms if family.owns(m.benchmark)):
            for metric in spec.metrics:
                cells: dict[tuple[str, ...], list[Measurement]] = {}
                for m in _by(ms, bench, metric):
                    if _kept(m, spec) and m.params.get("src") and m.params.get("dst"):
                        cells.setdefault(tuple(str(m.params.get(k, "")) for k in spec.split), []).append(m)
                for part, rows in cells.items():
                    if len(rows) < 2:
                        continue
                    title = " ".join(x for x in (f"{bench} {part[0]}" if part else bench, *part[1:]) if x) \
                        + f" ({label})"
                    out.append(FigureEntry(family.name, _slug(f"{bench}-{'-'.join(part)}-{label}"), title,
                                           plots.matrix(rows, title, rows[0].unit)))
    return out


def _bars(family: Family, spec: FigureSpec, groups: list[tuple[str, list[Measurement]]]) -> list[FigureEntry]:
    out = []
    for metric in spec.metrics:
        series = [(label, [m for m in ms if family.owns(m.benchmark) and m.metric == metric])
                  for label, ms in groups]
        series = [s for s in series if s[1]]
        if not series:
            continue
        unit = series[0][1][0].unit
        title = spec.title or f"{family.title} {metric}"
        out.append(FigureEntry(family.name, _slug(f"{family.name}-{metric}"), title, plots.bars(
            title, f"{metric} ({unit})", series, lambda m: family.row_label(m.params),
            spec.x, spec.x_label)))
    return out


HISTORY_FIGURES = 6    # rows plotted over time, those with changes first
HISTORY_LINES = 10     # hosts per figure: those with changes first, then the lowest


def _worst_first(s: Series) -> tuple[bool, float]:
    latest = s.points[-1].value
    return not s.changes, latest if s.higher_is_better else -latest


def _history(f: Findings) -> list[FigureEntry]:
    """Each row's headline over time, one line per host, changes marked."""
    rows: dict[tuple[str, str, str], list[Series]] = {}
    for s in f.history:
        rows.setdefault((s.benchmark, s.metric, s.label), []).append(s)
    ranked = sorted(rows.items(), key=lambda kv: -sum(len(s.changes) for s in kv[1]))
    out = []
    for (_, metric, label), series in ranked[:HISTORY_FIGURES]:
        shown = sorted(series, key=_worst_first)[:HISTORY_LINES]
        times = [[parse_time(p.started_at) for p in s.points] for s in shown]
        dated = all(t is not None for ts in times for t in ts)
        lines, marks = [], []
        for s, ts in zip(shown, times):
            xs = ts if dated else list(range(len(s.points)))
            lines.append((s.entity, xs, [p.value for p in s.points]))
            marks += [(xs[c.index], s.points[c.index].value, s.kind(c)) for c in s.changes]
        title = f"{label} {metric} over time"
        out.append(FigureEntry("history", _slug(f"history-{label}-{metric}"), title,
                               plots.history(title, f"{metric} ({series[0].unit})", lines, marks)))
    return out


def build_figures(f: Findings) -> list[FigureEntry]:
    out: list[FigureEntry] = []
    groups = [(g.label, [r.m for r in g.rows]) for g in f.groups]
    present = {getattr(family_of(r.m.benchmark), "name", None) for r in f.all_rows}
    for family in FAMILIES:
        spec = family.figure
        if spec is None or family.name not in present:
            continue
        if spec.kind == "size_curve":
            out += _size_curves(f, family, spec, groups)
        elif spec.kind == "matrix":
            out += _matrices(family, spec, groups)
        elif spec.kind == "bars":
            out += _bars(family, spec, groups)
    out += _history(f)
    if f.outcomes:
        out.append(FigureEntry("validation", "validation", "validation margins", plots.validation_figure(
            [o.criterion.name for o in f.outcomes], [o.margin_pct for o in f.outcomes],
            [o.status for o in f.outcomes])))
    return out
