"""Which figures a report has: one list built from the findings and the families' figure specs
(and telemetry's ``TIMELINE`` spec), rendered by HTML and saved to files.

Size curves are per benchmark, one line per group (and split value) with a 95% confidence band
over the group's runs, so an A/B report shows A and B on one plot per op; a metric the family
declares redundant with another one the spec plots (algbw with busbw) is not drawn again.

An entry says what a figure is and draws it when asked: the report draws, saves and closes one
figure at a time (hundreds of groups would otherwise hold hundreds of figures in memory), and a
figure that cannot be drawn costs that figure only. Each entry's ``slug`` (its file name) is
unique in the list: labels that differ only in punctuation ("a-b", "a_b") or past the slug's
length would otherwise write one file and show one image twice."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from clusterbench.families import FAMILIES, Family, family_of
from clusterbench.families.base import Figure as FigureSpec
from clusterbench.judge.findings import Findings
from clusterbench.judge.history import Series, parse_time
from clusterbench.records import Measurement
from clusterbench.report import plots
from clusterbench.telemetry import TIMELINE

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass
class FigureEntry:
    section: str  # the family's name, or validation
    slug: str  # file name stem, unique among a report's figures
    title: str
    draw: Callable[[], Figure]  # makes the figure (the caller closes it)


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
    # each benchmark asked once, not each row (a fleet's night is 400,000 rows of a few benchmarks)
    return [b for b in dict.fromkeys(r.m.benchmark for r in f.all_rows) if family.owns(b)]


def curve_metrics(family: Family, spec: FigureSpec, present: set[str]) -> list[str]:
    """The spec's metrics to draw: those with rows, less any the family declares redundant with
    another drawn one (algbw when busbw is drawn)."""
    drawn = [m for m in spec.metrics if m in present]
    out = []
    for name in drawn:
        metric = family.metric(name)
        if metric is not None and metric.redundant_with in drawn:
            continue
        out.append(name)
    return out


def _size_curves(f: Findings, family: Family, spec: FigureSpec) -> list[FigureEntry]:
    out = []
    benches = benchmarks_of(f, family)
    present_of: dict[str, set[str]] = {b: set() for b in benches}
    for r in f.all_rows:   # one pass for every benchmark's metrics
        if r.m.benchmark in present_of:
            present_of[r.m.benchmark].add(r.m.metric)
    for bench in benches:
        for metric in curve_metrics(family, spec, present_of[bench]):
            curves: list[plots.Curve] = []
            unit = ""
            for gi, g in enumerate(f.groups):
                # rows off the log axis (0 bytes) draw nothing: a benchmark with only those gets no empty figure
                runs = [[m for m in _by(ms, bench, metric) if plots.on_size_axis(m.params.get(spec.x))]
                        for _, ms in g.runs]
                runs = [rows for rows in runs if rows]
                parts = list(dict.fromkeys(tuple(str(m.params.get(k, "")) for k in spec.split)
                                           for rows in runs for m in rows))
                for pi, part in enumerate(parts):
                    sel = [[m for m in rows if tuple(str(m.params.get(k, "")) for k in spec.split) == part]
                           for rows in runs]
                    sel = [rows for rows in sel if rows]
                    shown = " ".join(p for p in part if p)
                    curves.append(plots.Curve(f"{g.label} ({shown}-place)" if shown else g.label, sel,
                                              color=gi, dashed=pi > 0))
                    unit = unit or sel[0][0].unit
            if not curves:
                continue
            theory = f.theory.get((bench, metric))
            tl = f"optimal {metric} {theory:.2f} GB/s ({f.link or 'link_speed tag'})" if theory else ""
            title = f"{bench} {metric}" + (f": {' vs '.join(g.label for g in f.groups)}"
                                           if len(f.groups) > 1 else "")
            out.append(FigureEntry(family.name, _slug(f"{bench}-{metric}"),
                                   f"{bench} {metric} vs message size (mean and 95% CI over each group's runs)",
                                   partial(plots.size_curve, title, f"{metric} ({unit})", curves, spec.x,
                                           spec.x_label, theory, tl)))
    return out


def _telemetry(f: Findings) -> list[FigureEntry]:
    """Per group, the TIMELINE metrics against seconds since each run started: a line per run,
    host and device."""
    spec = TIMELINE
    out = []
    for g in f.groups:
        panels = []
        for metric in spec.metrics:
            lines, unit = [], ""
            for run, _ in g.runs:
                samples = [s for s in g.telemetry.get(run.id or -1, []) if s.metric == metric]
                if not samples:
                    continue
                t0 = min(s.t for s in g.telemetry[run.id or -1])
                unit = samples[0].unit
                for who in dict.fromkeys((s.host, s.device) for s in samples):
                    mine = [s for s in samples if (s.host, s.device) == who]
                    name = " ".join(x for x in (f"run {run.id}", *who) if x)
                    lines.append((name, [s.t - t0 for s in mine], [s.value for s in mine]))
            if lines:
                panels.append((metric, unit, lines))
        if panels:
            out.append(FigureEntry("telemetry", _slug(f"telemetry-{g.label}"), f"telemetry of {g.label}",
                                   partial(plots.timeline, f"{spec.title}: {g.label}", panels, spec.x_label)))
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
                                           partial(plots.matrix, rows, title, rows[0].unit)))
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
        out.append(FigureEntry(family.name, _slug(f"{family.name}-{metric}"), title, partial(
            plots.bars, title, f"{metric} ({unit})", series, partial(_row_label, family), spec.x, spec.x_label)))
    return out


def _row_label(family: Family, m: Measurement) -> str:
    return family.row_label(m.params)


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
    # With groups to compare (A/B), each host's points are drawn per group, a colour each and the
    # 95% confidence band of the group's mean across its span: one line through both groups
    # would read as one setup that changed over time.
    group_of: dict[int | None, int] = {}
    for gi, g in enumerate(f.groups if len(f.groups) > 1 else []):
        for run, _ in g.runs:
            group_of.setdefault(run.id, gi)   # a run two selectors pick is drawn with the first
    out = []
    for (_, metric, label), series in ranked[:HISTORY_FIGURES]:
        shown = sorted(series, key=_worst_first)[:HISTORY_LINES]
        times = [[parse_time(p.started_at) for p in s.points] for s in shown]
        dated = all(t is not None for ts in times for t in ts)
        lines: list[plots.HistoryLine] = []
        marks = []
        for s, ts in zip(shown, times):
            xs = ts if dated else list(range(len(s.points)))
            marks += [(xs[c.index], s.points[c.index].value, s.kind(c)) for c in s.changes]
            if not group_of:
                lines.append(plots.HistoryLine(s.entity, xs, [p.value for p in s.points]))
                continue
            for gi, g in enumerate(f.groups):
                mine = [k for k, p in enumerate(s.points) if group_of.get(p.run) == gi]
                if mine:
                    lines.append(plots.HistoryLine(f"{g.label} on {s.entity}", [xs[k] for k in mine],
                                                   [s.points[k].value for k in mine], color=gi, band=True))
        title = f"{label} {metric} over time"
        caption = title
        if group_of:
            title += ": " + " vs ".join(g.label for g in f.groups)
            caption = (f"{title} (a colour per group; dashed: the group's mean, shaded: its 95% "
                       "confidence interval)")
        out.append(FigureEntry("history", _slug(f"history-{label}-{metric}"), caption,
                               partial(plots.history, title, f"{metric} ({series[0].unit})", lines, marks)))
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
            out += _size_curves(f, family, spec)
        elif spec.kind == "matrix":
            out += _matrices(family, spec, groups)
        elif spec.kind == "bars":
            out += _bars(family, spec, groups)
    out += _history(f)
    if f.outcomes:
        out.append(FigureEntry("validation", "validation", "validation margins", partial(
            plots.validation_figure, [o.criterion.name for o in f.outcomes], [o.margin_pct for o in f.outcomes],
            [o.status for o in f.outcomes])))
    out += _telemetry(f)
    return _unique_slugs(out)


def _unique_slugs(entries: list[FigureEntry]) -> list[FigureEntry]:
    """A slug already taken gets the first free ``-2``, ``-3``... suffix."""
    taken: set[str] = set()
    for e in entries:
        slug, n = e.slug, 1
        while slug in taken:
            n += 1
            slug = f"{e.slug}-{n}"
        e.slug = slug
        taken.add(slug)
    return entries
