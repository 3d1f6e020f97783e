"""Figures with matplotlib (Agg, no display): a metric against a size with confidence bands,
src x dst matrices, bars per row, validation margins, telemetry against time; which family uses
which is its ``Figure`` spec. Each returns a Figure; ``render`` draws it as PNG or SVG.

Bars and matrices take series as ``(label, rows)`` where rows are measurements from one run or a
group of runs; points at the same x are averaged and their standard deviation drawn as an error
bar, none where a single value backs the point (its spread is unknown; the legend gives n as a
size curve's does). Size curves take each group's runs apart (``Curve``): the line is the mean
over the runs at each size, the band its 95% confidence interval (Student's t over the runs'
values); a size that a single run measured has no band, and the legend says n=1.
"""

from __future__ import annotations

import base64
import io
import math
import statistics
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clusterbench.judge.stats import summarize, t_ppf
from clusterbench.printable import printable
from clusterbench.records import Measurement
from clusterbench.units import compact, format_size

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# An install whose matplotlib cannot be imported (missing, or built against another numpy)
# still writes the page and the summary: the report says in one line that it has no figures.
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter
except ImportError as e:
    MISSING: str | None = f"matplotlib cannot be imported ({e})"
else:
    MISSING = None
    # Labels are host names, tags and other text from logs: two '$' in one would be parsed as
    # TeX (a ParseException at draw time for "$\\frac{$"), never the text it is.
    plt.rcParams["text.parse_math"] = False

Series = tuple[str, Sequence[Measurement]]
LABEL_CHARS = 80   # a longer label (a host name of thousands of characters) is cut: it would fill the figure


def _text(label: object) -> str:
    """A label from a run or a log as a figure shows it: control characters as ``printable``'s
    escapes (raw, they are missing glyphs in a PNG and make an SVG invalid XML), cut to
    ``LABEL_CHARS``."""
    s = printable(label)
    return s if len(s) <= LABEL_CHARS else s[:LABEL_CHARS - 3] + "..."


@dataclass(frozen=True)
class Curve:
    """One line of a size curve: a group's runs (each a list of rows) and how it is drawn."""

    label: str
    runs: Sequence[Sequence[Measurement]]
    color: int = 0          # index into the colour cycle: one colour per group
    dashed: bool = False    # a second split value (in-place) of the same group
PASS_COLOR, FAIL_COLOR, SKIP_COLOR = "#2e7d32", "#c62828", "#9e9e9e"
DPI = 110
# Hundreds of groups would each take a legend line and push the axes out of the figure.
LEGEND_ENTRIES = 20
# A figure grows with what it shows (criteria, matrix endpoints) up to this side: past 2^16
# pixels matplotlib refuses to draw at all, and far below that a PNG is tens of megabytes.
MAX_INCHES = 30.0
# Criteria in the validation figure: the failed ones and those closest to their threshold.
VALIDATION_BARS = 60
# Endpoints per side up to which a matrix prints each cell's number (beyond, the colour alone:
# thousands of texts take a minute to draw and cannot be read).
MATRIX_NUMBERS = 40


# Matplotlib pads an axis' span (max - min) and steps ticks across it: near the float limit that
# span is infinite and the figure cannot be drawn. A value beyond this bound is drawn at it (the
# tables print it as stored); no measured quantity comes anywhere near it.
PLOT_LIMIT = 1e250
# Above this the squares in a standard deviation pass the float limit: such values are scaled first.
_SCALE_FROM = 1e150


def drawable(value: float) -> float:
    """``value`` clamped to what an axis can hold (NaN stays NaN: a gap)."""
    return max(-PLOT_LIMIT, min(PLOT_LIMIT, value)) if value == value else value


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value) of any finite values: two of 1e308
    overflow a plain sum and the squares of 1e200 overflow a variance, so huge values are
    divided by the largest one first (ordinary values are summed as they are)."""
    big = max(abs(v) for v in values)
    scale = big if big > _SCALE_FROM else 1.0
    xs = [v / scale for v in values] if scale != 1.0 else list(values)
    mean = statistics.fmean(xs) * scale
    sd = statistics.stdev(xs) * scale if len(xs) > 1 else 0.0
    return mean, sd


def _mean_sd(values: list[float]) -> tuple[float, float]:
    mean, sd = mean_sd([drawable(v) for v in values])
    return drawable(mean), drawable(sd)


def on_size_axis(x: object) -> bool:
    """Whether a size param's value has a place on a log axis (nccl-tests' 0-byte rows do not)."""
    return isinstance(x, (int, float)) and x > 0


def _by_x(rows: Sequence[Measurement], x_param: str) -> dict[float, list[float]]:
    by_x: dict[float, list[float]] = {}
    for m in rows:
        x = m.params.get(x_param)
        if on_size_axis(x):
            by_x.setdefault(float(x), []).append(m.value)
    return by_x


def _points(rows: Sequence[Measurement], x_param: str) -> tuple[list[float], list[float], list[float]]:
    by_x = _by_x(rows, x_param)
    xs = sorted(by_x)
    # one value (a run's row at a size, the common case) is its own mean, with no spread
    ms = [(drawable(v[0]), 0.0) if len(v := by_x[x]) == 1 else _mean_sd(v) for x in xs]
    return xs, [m for m, _ in ms], [s for _, s in ms]


def _size_axis(ax, label: str) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_size(int(v)) if v >= 1 else f"{v:g}"))
    ax.set_xlabel(label)
    ax.grid(True, which="major", alpha=0.3)


def _per_x(runs: Sequence[Sequence[Measurement]], x_param: str) -> dict[float, list[float]]:
    """Per x, each run's mean value there (a run that lacks that x adds nothing)."""
    per_x: dict[float, list[float]] = {}
    for rows in runs:
        xs, ys, _ = _points(rows, x_param)
        for x, y in zip(xs, ys):
            per_x.setdefault(x, []).append(y)
    return per_x


def band_points(runs: Sequence[Sequence[Measurement]], x_param: str) -> tuple[
        list[float], list[float], list[float], list[float]]:
    """Per x: the mean over runs of each run's mean value, and the 95% confidence interval of
    that mean (t quantile with n-1 degrees of freedom). Where a single run backs the point the
    interval is NaN: it is unknown, and a band of width 0 would claim a certain value."""
    return _band(_per_x(runs, x_param))


def _band(per_x: dict[float, list[float]]) -> tuple[list[float], list[float], list[float], list[float]]:
    xs = sorted(per_x)
    means, lows, highs = [], [], []
    for x in xs:
        s = summarize(per_x[x])
        half = t_ppf(0.975, s.n - 1) * s.sem if s.n > 1 else math.nan
        means.append(s.mean)
        lows.append(drawable(s.mean - half))
        highs.append(drawable(s.mean + half))
    return xs, means, lows, highs


def runs_per_point(runs: Sequence[Sequence[Measurement]], x_param: str) -> list[int]:
    """How many runs back each point of ``band_points``, in its x order."""
    per_x = _per_x(runs, x_param)
    return [len(per_x[x]) for x in sorted(per_x)]


def curve_label(label: str, counts: Sequence[int], where: str = "size", missing: str = "band") -> str:
    """``A, n=3``; ``A, n=3 (n=1 at 2 sizes: no band)`` where single runs back some points (bars:
    ``where`` "bar", ``missing`` "error bar")."""
    n = max(counts, default=0)
    single = sum(c == 1 for c in counts)
    if n > 1 and single:
        return f"{label}, n={n} (n=1 at {single} {where}{'s' if single > 1 else ''}: no {missing})"
    return f"{label}, n={n}"


def _spread_bars(ax, xs: Sequence[float], ys: Sequence[float], sds: Sequence[float], counts: Sequence[int],
                 color: object) -> None:
    """Error bars (one standard deviation) where two or more values back a point. A single
    value's sd is unknown, not 0: a zero-length bar with caps would claim it certain."""
    shown = [k for k, n in enumerate(counts) if n > 1]
    if shown:
        ax.errorbar([xs[k] for k in shown], [ys[k] for k in shown], yerr=[sds[k] for k in shown],
                    fmt="none", ecolor=color, capsize=2, linewidth=1)


def size_curve(title: str, ylabel: str, curves: Sequence[Curve], x_param: str, x_label: str,
               theory: float | None = None, theory_label: str = "") -> Figure:
    """A metric against a size param on a log2 axis (busbw vs message size): per curve the mean
    over its runs and a shaded 95% confidence band where at least two runs back a point; a colour
    per group, dashed for its second split value."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for c in curves:
        per_x = _per_x(c.runs, x_param)   # once for the band and the counts: a fleet's 1,000 runs
        xs, ys, lo, hi = _band(per_x)
        if not xs:
            continue
        color = palette[c.color % len(palette)]
        ax.plot(xs, ys, marker="o", markersize=3, linewidth=1.3, color=color,
                linestyle="--" if c.dashed else "-",
                label=curve_label(_text(c.label), [len(per_x[x]) for x in xs]))
        banded = [v == v for v in lo]   # NaN where one run backs the point
        if not any(banded):
            continue
        if min(ys) >= 0:  # a bandwidth is never negative: the band stops at zero
            lo = [max(0.0, v) if v == v else v for v in lo]
        # NaN bounds leave gaps: no band reaches into a point one run backs
        ax.fill_between(xs, lo, hi, color=color, alpha=0.18 if not c.dashed else 0.10, linewidth=0)
        for k, x in enumerate(xs):
            alone = banded[k] and not (k > 0 and banded[k - 1]) and not (k + 1 < len(xs) and banded[k + 1])
            if alone:  # a band over a single x has no width: an error bar shows it
                ax.errorbar([x], [ys[k]], yerr=[[ys[k] - lo[k]], [hi[k] - ys[k]]], color=color,
                            capsize=2, linewidth=1, linestyle="none")
    if theory:
        ax.axhline(drawable(theory), color="black", linestyle="--", linewidth=1,
                   label=_text(theory_label) if theory_label else f"theoretical {compact(theory)} GB/s")
    _size_axis(ax, x_label)
    ax.set_ylabel(printable(ylabel))
    ax.set_title(printable(title))
    _legend(ax, fontsize=8)
    _layout(fig)
    return fig


def _legend(ax, **kw: object) -> None:
    """The axes' legend, if it has entries: the first ``LEGEND_ENTRIES`` and a line saying how
    many more there are."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    if len(handles) > LEGEND_ENTRIES:
        from matplotlib.lines import Line2D

        more = len(handles) - LEGEND_ENTRIES
        handles = [*handles[:LEGEND_ENTRIES], Line2D([], [], linestyle="none")]
        labels = [*labels[:LEGEND_ENTRIES], f"... {more} more"]
    ax.legend(handles, labels, **kw)


def _layout(fig: Figure) -> None:
    """Tight margins where they fit; where they cannot (long tick labels) matplotlib's defaults
    stay, without its warning on stderr, which would print a line of our source to the user."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()


def _inches(n: int, per: float) -> float:
    """A figure side that grows by ``per`` inches per item, up to ``MAX_INCHES``."""
    return min(MAX_INCHES, 1.0 + per * max(4, n))


def matrix(rows: Sequence[Measurement], title: str, unit: str) -> Figure:
    """src x dst matrix of the mean value (bandwidth); missing pairs blank."""
    cells: dict[tuple[str, str], list[float]] = {}
    for m in rows:
        cells.setdefault((str(m.params.get("src")), str(m.params.get("dst"))), []).append(m.value)
    srcs = sorted({s for s, _ in cells}, key=_endpoint_order)
    dsts = sorted({d for _, d in cells}, key=_endpoint_order)
    data = [[_mean_sd(cells[(s, d)])[0] if (s, d) in cells else float("nan") for d in dsts] for s in srcs]
    local = local_cells(srcs, dsts, data)
    # a second colour bar takes an inch of its own
    fig, ax = plt.subplots(figsize=(_inches(len(dsts), 0.75) + (1.0 if local else 0.0), _inches(len(srcs), 0.55)))
    # Local copies (src == dst) can be 30x faster than the links and would flatten their colour
    # scale into one colour: those cells get a second scale (and colour bar) of their own.
    links = [[math.nan if (i, j) in local else v for j, v in enumerate(row)] for i, row in enumerate(data)]
    on_links = [v for row in links for v in row if v == v]
    lo, hi = (min(on_links), max(on_links)) if on_links else (0.0, 1.0)
    im = ax.imshow(links, cmap="viridis", aspect="auto", vmin=lo, vmax=hi)
    scales = {False: (lo, hi)}
    local_im = None
    if local:
        values = [data[i][j] for i, j in local]
        scales[True] = (min(values), max(values))
        only_local = [[data[i][j] if (i, j) in local else math.nan for j in range(len(dsts))]
                      for i in range(len(srcs))]
        local_im = ax.imshow(only_local, cmap="Oranges", aspect="auto", vmin=scales[True][0] * 0.9,
                             vmax=scales[True][1])
    ax.set_xticks(range(len(dsts)), [_text(d) for d in dsts], rotation=45, ha="right", fontsize=_tick_size(dsts))
    ax.set_yticks(range(len(srcs)), [_text(s) for s in srcs], fontsize=_tick_size(srcs))
    ax.set_xlabel("destination")
    ax.set_ylabel("source")
    numbers = len(srcs) <= MATRIX_NUMBERS and len(dsts) <= MATRIX_NUMBERS
    for i, row in enumerate(data if numbers else []):
        for j, v in enumerate(row):
            if v == v:
                a, b = scales[(i, j) in local]
                frac = (v - a) / (b - a) if b > a else 1.0
                dark = frac < 0.6 if (i, j) not in local else frac > 0.6   # viridis is dark low, Oranges high
                ax.text(j, i, _cell_text(v), ha="center", va="center", fontsize=6,
                        color="white" if dark else "black")
    # each colour bar takes its room from the axes' side: the last one drawn sits next to them
    if local_im is not None:
        fig.colorbar(local_im, ax=ax, label=f"{_text(unit)} (local copy, src = dst)")
    fig.colorbar(im, ax=ax, label=_text(unit) + (" (links)" if local else ""))
    ax.set_title(printable(title) if numbers else f"{printable(title)} ({len(srcs)} x {len(dsts)}, colour only)")
    _layout(fig)
    return fig


LOCAL_FACTOR = 3.0   # a src == dst cell this many times the fastest link is a local copy


def local_cells(srcs: Sequence[str], dsts: Sequence[str], data: Sequence[Sequence[float]]) -> set[tuple[int, int]]:
    """The (row, column) cells of local copies: on the diagonal (src == dst) and more than
    ``LOCAL_FACTOR`` times the fastest other pair. A diagonal as fast as the links (a CPU copying
    to its own memory) stays on the links' scale; with no other pair there is nothing to flatten."""
    off = [v for i, s in enumerate(srcs) for j, d in enumerate(dsts) if s != d and (v := data[i][j]) == v]
    if not off:
        return set()
    top = max(off)
    return {(i, j) for i, s in enumerate(srcs) for j, d in enumerate(dsts)
            if s == d and (v := data[i][j]) == v and v > LOCAL_FACTOR * top}


def _tick_size(names: Sequence[str]) -> float:
    """Tick labels shrink once a capped figure side holds more of them than fit at 8 points."""
    return max(2.0, min(8.0, 8.0 * MATRIX_NUMBERS / max(1, len(names))))


def _cell_text(v: float) -> str:
    """A matrix cell's number: whole from 100, one decimal below; %g where it would not fit."""
    if abs(v) >= 1e6 or 0 < abs(v) < 0.05:
        return f"{v:.3g}"
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}"


def _endpoint_order(name: str) -> tuple[str, int, str]:
    head = name.rstrip("0123456789")
    tail = name[len(head):]
    return head, int(tail) if tail.isdigit() else -1, name


def bars(title: str, ylabel: str, series: Sequence[Series], label_of: Callable[[Measurement], str],
         x_param: str = "", x_label: str = "") -> Figure:
    """The metric per row label, bars per series; or, when the rows span several values of
    ``x_param`` (stream's array sizes), a line per label against it."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    sizes = {m.params.get(x_param) for _, rows in series for m in rows} if x_param else set()
    if len(sizes) > 1:
        for label, rows in series:
            for cat, mine in _by_label(rows, label_of).items():
                xs, ys, sds = _points(mine, x_param)
                by_x = _by_x(mine, x_param)
                counts = [len(by_x[x]) for x in xs]
                name = _text(cat if len(series) == 1 else f"{label} {cat}")
                (line,) = ax.plot(xs, ys, marker="o", markersize=3,
                                  label=curve_label(name, counts, "size", "error bar"))
                _spread_bars(ax, xs, ys, sds, counts, line.get_color())
        _size_axis(ax, x_label)
    else:
        _bars(ax, series, label_of)
    ax.set_ylabel(printable(ylabel))
    ax.set_title(printable(title))
    _legend(ax, fontsize=8)
    _layout(fig)
    return fig


def _by_label(rows: Sequence[Measurement], label_of: Callable[[Measurement], str]) -> dict[str, list[Measurement]]:
    """Rows by their label, in first-seen order: each row is labelled once (scanning the rows
    once per label is quadratic in them)."""
    out: dict[str, list[Measurement]] = {}
    for m in rows:
        out.setdefault(label_of(m), []).append(m)
    return out


def _bars(ax, series: Sequence[Series], label_of: Callable[[Measurement], str]) -> None:
    grouped = [(label, _by_label(rows, label_of)) for label, rows in series]
    cats = list(dict.fromkeys(c for _, by in grouped for c in by))
    width = 0.8 / max(1, len(series))
    for i, (label, by) in enumerate(grouped):
        vals, errs, counts = [], [], []
        for c in cats:
            v = [m.value for m in by.get(c, ())]
            mean, sd = _mean_sd(v) if v else (0.0, 0.0)
            vals.append(mean)
            errs.append(sd)
            counts.append(len(v))
        xs = [j + i * width for j in range(len(cats))]
        # a category this series lacks is an empty slot, not a bar of one value
        present = [n for n in counts if n]
        ax.bar(xs, vals, width, label=curve_label(_text(label), present, "bar", "error bar"))
        _spread_bars(ax, xs, vals, errs, counts, "black")
    ax.set_xticks([j + width * (len(series) - 1) / 2 for j in range(len(cats))], [_text(c) for c in cats],
                  rotation=20, ha="right", fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)


@dataclass(frozen=True)
class HistoryLine:
    """One line of a history figure: a host's (or a group's on a host) values in time order."""

    label: str
    xs: Sequence[object]            # times (datetime) or run positions
    ys: Sequence[float]
    color: int | None = None        # index into the colour cycle (one per group); None: the next
    band: bool = False              # draw the 95% confidence band of the line's mean across its span


def mean_band(values: Sequence[float]) -> tuple[float, float, float] | None:
    """(mean, low, high): the 95% confidence interval of the values' mean (Student's t, n-1
    degrees of freedom), as a size curve's band; None for fewer than two finite values."""
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < 2:
        return None
    s = summarize(finite)
    half = t_ppf(0.975, s.n - 1) * s.sem
    return drawable(s.mean), drawable(s.mean - half), drawable(s.mean + half)


def history(title: str, ylabel: str, lines: Sequence[HistoryLine],
            marks: Sequence[tuple[object, float, str]] = ()) -> Figure:
    """A metric across runs in time order, one line per host (or GPU), or per group and host;
    a line with ``band`` gets its mean and 95% confidence band drawn across its span, so two
    groups' levels stand apart with their uncertainty; ``marks`` are changes found in a line:
    (x, y, label), drawn as a red (regression) or green (improvement) marker."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for line in lines:
        xs, ys = list(line.xs), [drawable(y) for y in line.ys]
        color = palette[line.color % len(palette)] if line.color is not None else None
        band = mean_band(line.ys) if line.band else None
        label = _text(line.label) + (f", n={len(ys)}" if line.band else "")
        (drawn,) = ax.plot(xs, ys, marker="o", markersize=3, linewidth=1.2, color=color, label=label)
        if band is not None and len(xs) > 0:
            mean, lo, hi = band
            span = [min(xs), max(xs)]
            if span[0] == span[1]:   # a span of one instant has no width: an error bar shows it
                ax.errorbar(span[:1], [mean], yerr=[[mean - lo], [hi - mean]], color=drawn.get_color(),
                            capsize=3, linewidth=1)
            else:
                ax.fill_between(span, [lo, lo], [hi, hi], color=drawn.get_color(), alpha=0.15, linewidth=0)
                ax.plot(span, [mean, mean], color=drawn.get_color(), linestyle="--", linewidth=1)
    for x, y, kind in marks:
        ax.plot([x], [drawable(y)], marker="v" if kind == "regression" else "^", markersize=10,
                color=FAIL_COLOR if kind == "regression" else PASS_COLOR, linestyle="none")
    ax.set_ylabel(printable(ylabel))
    ax.set_title(printable(title))
    ax.grid(True, alpha=0.3)
    fig.autofmt_xdate()
    _legend(ax, fontsize=7, ncol=2)
    _layout(fig)
    return fig


def validation_figure(names: Sequence[str], margins_pct: Sequence[float | None],
                      statuses: Sequence[str]) -> Figure:
    """Horizontal bars: margin to the threshold in percent, green pass, red fail, grey skipped;
    of more than ``VALIDATION_BARS`` criteria, the failed ones and those closest to their
    threshold (the tables list every one)."""
    total = len(names)
    if total > VALIDATION_BARS:
        def rank(i: int) -> tuple[bool, float]:
            m = margins_pct[i]
            return statuses[i] not in ("fail", "error"), math.inf if m is None else m
        kept = sorted(sorted(range(total), key=rank)[:VALIDATION_BARS])
        names, margins_pct, statuses = ([seq[i] for i in kept] for seq in (names, margins_pct, statuses))
    fig, ax = plt.subplots(figsize=(8, min(MAX_INCHES, 0.8 + 0.32 * max(3, len(names)))))
    colors = {"pass": PASS_COLOR, "fail": FAIL_COLOR}
    ys = list(range(len(names)))[::-1]
    vals = [m if m is not None else 0.0 for m in margins_pct]
    ax.barh(ys, [drawable(v) for v in vals], color=[colors.get(s, SKIP_COLOR) for s in statuses])
    for y, v, s in zip(ys, vals, statuses):
        ax.text(drawable(v), y, f" {s}" if s not in ("pass", "fail") else f" {s.upper()} {compact(v, 1, True)}%",
                va="center", fontsize=7)
    ax.set_yticks(ys, [n if len(n) <= 48 else n[:45] + "..." for n in map(printable, names)], fontsize=7)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("margin to threshold (%)")
    ax.set_title("validation" if total == len(names) else
                 f"validation: {len(names)} of {total} criteria, the failed and closest to their threshold")
    _layout(fig)
    return fig


def timeline(title: str, panels: Sequence[tuple[str, str, Sequence[tuple[str, list[float], list[float]]]]],
             x_label: str) -> Figure:
    """Telemetry against time: one panel per metric (name, unit, lines of (label, t, value)),
    stacked on a shared time axis."""
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 1.2 + 1.9 * len(panels)), sharex=True,
                             squeeze=False)
    for ax, (metric, unit, lines) in zip(axes[:, 0], panels):
        for label, ts, vs in lines:
            ax.plot(ts, [drawable(v) for v in vs], linewidth=1.0, label=_text(label))
        ax.set_ylabel(f"{_text(metric)}\n({_text(unit)})" if unit else _text(metric), fontsize=8)
        ax.grid(True, alpha=0.3)
        if 1 < len(lines) <= 8:
            ax.legend(fontsize=7, loc="best")
    axes[-1, 0].set_xlabel(x_label)
    fig.suptitle(printable(title))
    _layout(fig)
    return fig


FORMATS = ("png", "svg")   # each figure's files, in this order


def render(fig: Figure, fmt: str) -> bytes:
    """``fig`` drawn as ``fmt`` (one of ``FORMATS``): drawn once, for the page and the file."""
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=DPI if fmt == "png" else None)
    return buf.getvalue()


def close(fig: Figure) -> None:
    plt.close(fig)


def render_all(draw: Callable[[], Figure]) -> dict[str, bytes]:
    """The figure ``draw`` makes, drawn in each of ``FORMATS``, then closed. A figure whose drawing
    fails halfway is closed too: ``draw`` never returned it, and pyplot would hold it (and its
    memory) until the command ends, warning on standard error once more than 20 are open."""
    before = set(plt.get_fignums())
    try:
        fig = draw()
        return {fmt: render(fig, fmt) for fmt in FORMATS}
    finally:
        for num in set(plt.get_fignums()) - before:
            plt.close(num)


def data_uri(png: bytes) -> str:
    """A PNG as a ``data:image/png;base64,...`` URI for a self-contained page."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
