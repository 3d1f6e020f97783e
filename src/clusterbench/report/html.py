"""A self-contained HTML report, verdict first: PASS/FAIL/REGRESSION/NOISY with the counts
behind it (the same words as the Markdown), a table of contents, then the comparison (A and B per
op with confidence bands, redundant rows folded away), validation, degraded nodes, noise inside
runs, environment differences between the groups, efficiency, the families' figures and tables,
telemetry, and the runs.

No external resources (no scripts, fonts or stylesheets fetched): figures are inline PNG data
URIs, so the page can be mailed or attached to a ticket. Every string from a run or a log
(hostnames, device names, tags, commands) goes through ``html.escape``, and its control
characters show as ``printable``'s escapes (as ``results show`` prints them).
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Sequence

from clusterbench import __version__
from clusterbench.families import FAMILIES, Family, family_of
from clusterbench.judge.compare import (
    BETTER,
    INSUFFICIENT,
    NOISY,
    SAME,
    WORSE,
    Comparison,
    change_text_pct,
    family_size,
)
from clusterbench.judge.findings import DEVICE_ROWS_IN_ORDER, Findings
from clusterbench.judge.history import series_notes
from clusterbench.judge.stats import Summary
from clusterbench.judge.text import (
    adjust_note,
    fmt,
    margin_text,
    p_text,
    params_text,
    shows_adjusted,
    varying_keys,
)
from clusterbench.printable import printable
from clusterbench.records import utc_now
from clusterbench.report.figures import FigureEntry, benchmarks_of
from clusterbench.report.plots import mean_sd
from clusterbench.report.terminal import run_remarks
from clusterbench.store.selectors import tag_term
from clusterbench.units import compact, format_size

# Column widths come from their content: a word or a number is never broken (a cell whose text
# is split inside "PASS" or "+42.9%" cannot be read), numbers and statuses do not wrap at all,
# text wraps at its spaces. Only a cell holding a token longer than LONG_TOKEN (a host name or an
# error of thousands of characters from a log) may break anywhere: whole, it would widen its table,
# and the page, far past the window. Print: A4 landscape, the same rules, rows kept whole.
LONG_TOKEN = 48
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1800px;overflow-wrap:break-word}
h1{font-size:22px}h3{font-size:15px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}
p{max-width:1100px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.w,span.w{white-space:nowrap}td.brk{overflow-wrap:anywhere}
.pass{color:#2e7d32;font-weight:600}.fail,.worse,.error{color:#c62828;font-weight:600}.better{color:#1565c0;font-weight:600}
.skipped,.noisy,.insufficient{color:#777}.same{color:#444}
figure{margin:12px 0}figcaption{font-size:12px;color:#555}img{max-width:100%;border:1px solid #eee}
.small{font-size:12px;color:#555}
.verdict{padding:10px 14px;border-radius:6px;margin:12px 0;border:1px solid #ccc;background:#fafafa}
.verdict .word{font-size:26px;font-weight:700;margin-right:12px}
.verdict ul,.verdict ol{margin:6px 0 0 0;padding-left:20px}.verdict p{margin:8px 0 0 0;font-weight:600}
.v-pass{border-color:#2e7d32;background:#edf7ee}.v-pass .word{color:#2e7d32}
.v-fail,.v-regression{border-color:#c62828;background:#fdecea}.v-fail .word,.v-regression .word{color:#c62828}
.v-noisy{border-color:#b26a00;background:#fff6e5}.v-noisy .word{color:#b26a00}
nav.toc{font-size:13px;columns:3;margin:8px 0 0 0}nav.toc ul{margin:0}
details{margin:8px 0}summary{cursor:pointer;color:#333}
@page{size:A4 landscape;margin:12mm}
@media print{body{margin:0;max-width:none;font-size:12px}table{font-size:10px}th,td{padding:2px 4px}
nav.toc{display:none}h2{break-after:avoid;margin-top:16px}h3{break-after:avoid}
tr,figure,.verdict{break-inside:avoid}thead{display:table-header-group}
img{max-height:170mm}a{color:inherit;text-decoration:none}
.verdict,th{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
"""


def esc(v: object) -> str:
    # html.escape leaves control characters: an ESC or BEL from a log would reach whoever cats
    # the file, and HTML forbids them. Line breaks stay (HTML shows them as spaces).
    return html.escape("\n".join(printable(line) for line in str(v).split("\n")), quote=True)


def _num(v: float) -> str:
    """A report cell's number; ``-`` where it is not finite (the sd of 1.7e308 and -1.7e308
    overflows): ``inf`` is no figure."""
    return compact(v) if math.isfinite(v) else "-"


def _long_token(text: str) -> bool:
    return any(len(token) > LONG_TOKEN for token in text.split())


# Where a browser breaks a line inside a word that has no space: after a hyphen or a dash
# between two characters (SMC-SC-DC19-06, env=pinned-1cpu); not at a slash (GB/s), nor before
# a leading minus (-0.051).
_BREAKS_INSIDE = re.compile(r"\S[-\u2010-\u2014]\S")
_TOKENS = re.compile(r"(\s+)")


def _cell_html(text: str) -> str:
    """A cell's text, escaped, its words that a browser would break inside (at a hyphen) each
    kept on one line; the text between them still wraps at its spaces."""
    if not _BREAKS_INSIDE.search(text):
        return esc(text)
    parts = []
    for part in _TOKENS.split(text):
        if part and not part.isspace() and _BREAKS_INSIDE.search(part):
            parts.append(f"<span class=w>{esc(part)}</span>")
        else:
            parts.append(esc(part))
    return "".join(parts)


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], numeric: set[int] | None = None,
          classes: Sequence[str | None] | None = None, whole: set[int] | None = None) -> str:
    """A table; ``numeric`` columns are right-aligned and never wrap, ``whole`` ones (a date, a
    size with its unit, a status) never wrap either; ``classes`` colour each row's first cell
    (its status), which never wraps."""
    numeric, whole = numeric or set(), whole or set()
    out = ["<table><thead><tr>", *(f"<th>{_cell_html(h)}</th>" for h in headers), "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        cls = classes[i] if classes and i < len(classes) else None
        out.append("<tr>")
        for j, cell in enumerate(row):
            text = str(cell)
            names = ["n"] if j in numeric else ["w"] if j in whole else []
            if j == 0 and cls:
                names = [esc(cls), "w"]
            if _long_token(text):   # whole, it would widen the page: it alone may break anywhere
                names = [n for n in names if n not in ("n", "w")] + ["brk"]
                body = esc(text)
            elif names:             # the cell does not wrap at all
                body = esc(text)
            else:
                body = _cell_html(text)
            attrs = f' class="{" ".join(names)}"' if names else ""
            out.append(f"<td{attrs}>{body}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _runs_section(f: Findings) -> str:
    rows = []
    for g in f.groups:
        for run, ms in g.runs:
            rows.append([run.id, g.label, run.benchmark + (f" ({run.source})" if run.source else ""),
                         run.status, run.started_at, ", ".join(run.hosts) or "-", "?" if run.ranks is None else run.ranks,
                         ", ".join(dict.fromkeys(run.devices)) or "-",
                         ", ".join(tag_term(k, v) for k, v in run.tags.items()) or "-",
                         ", ".join(f"{k} {v}" for k, v in list(run.versions.items())[:6]) or "-", len(ms)])
    body = table(["run", "group", "benchmark", "status", "started (UTC)", "hosts", "ranks", "devices",
                  "tags", "versions", "measurements"], rows, {0, 6, 10}, whole={3, 4})
    errors = [(run.id, e) for g in f.groups for run, _ in g.runs for e in run.errors[:5]]
    if errors:
        body += "<p>Errors recorded with the runs:</p>" + table(["run", "error"], errors)
    remarks = [(run.id, kind, text) for g in f.groups for run, _ in g.runs for kind, text in run_remarks(run)]
    if remarks:
        body += "<p>Warnings and notes recorded with the runs:</p>" + table(["run", "kind", "text"], remarks)
    return body


def _verdict(f: Findings) -> str:
    """The verdict's word, the counts behind it, and what failed: every failed criterion with
    its margin (the rows a comparison found worse, the degraded ones), so that the reader of the
    first lines knows what to look at without reading the tables."""
    v = f.verdict()
    items = "".join(f"<li>{esc(r)}</li>" for r in v.reasons) or "<li>nothing to judge</li>"
    failed = ""
    if v.failures:
        failed = ("<p>What failed:</p><ol class=failures>"
                  + "".join(f"<li>{esc(x)}</li>" for x in v.failures) + "</ol>")
    return (f'<div class="verdict v-{esc(v.status.lower())}" id="verdict"><span class="word">'
            f"{esc(v.status)}</span><ul>{items}</ul>{failed}</div>")


def _summary(f: Findings) -> str:
    items = []
    if f.outcomes:
        counts = f.validation_counts()
        verdict = "FAIL" if counts["fail"] or counts["error"] else "PASS"
        items.append(f'<li>Validation against <b>{esc(f.profile.name)}</b>: '
                     f'<span class="{verdict.lower()}">{verdict}</span> '
                     f'({", ".join(f"{n} {esc(s)}" for s, n in counts.items())})</li>')
    if f.comparisons:
        items.append(f"<li>Comparison {esc(f.groups[0].label)} vs {esc(f.groups[1].label)}: "
                     f"{esc(f.comparison_text())}</li>")
    items.append(f"<li>Degraded hosts/devices: {esc(degraded_summary(f))}</li>")
    items.append(f"<li>Noise inside runs: {esc(noise_summary(f))}</li>")
    best = _best_efficiency(f)
    if best:
        items.append(f"<li>Collective efficiency vs theory (largest message): {esc(best)}</li>")
    return "<ul>" + "".join(items) + "</ul>"


def degraded_summary(f: Findings) -> str:
    """What the search for degraded hosts and devices came to; "skipped" where no row had enough
    hosts or devices to rank (none found there would claim a check that never ran)."""
    if f.degraded:
        return f"{len(f.degraded)} row(s) off the others"
    scan = f.degraded_scan
    if scan is None or scan.skipped:
        return "skipped: " + (scan.skip_reason() if scan else "not run")
    return f"none found ({scan.judged} row(s) compared across hosts or devices)"


def noise_summary(f: Findings) -> str:
    """What the noise check came to; "skipped" where no row has per-iteration statistics."""
    if f.warnings:
        return f"{len(f.warnings)} warning(s), {sum(w.rows for _, w in f.warnings)} row(s)"
    if not f.noise_rows:
        return ("skipped: no row has per-iteration statistics (min, max, spread), which the check "
                "reads; imported logs without them have none")
    return f"none ({f.noise_rows} row(s) with per-iteration statistics checked)"


def _best_efficiency(f: Findings) -> str:
    if not f.efficiencies:
        return ""
    largest = max(e.bytes for _, e in f.efficiencies)
    parts = [f"run {rid} {e.benchmark} {e.placement}: {e.percent_text(0)}"
             for rid, e in f.efficiencies if e.bytes == largest]
    return "; ".join(parts[:8])


def _validation(f: Findings) -> str:
    if not f.outcomes:
        return ""
    rows = [[o.status.upper(), o.criterion.name, o.criterion.source, fmt(o.measured, o.unit), o.threshold,
             margin_text(o), o.detail] for o in f.outcomes]
    src = f"<p class=small>{esc(f.profile.description)}</p>" if f.profile.description else ""
    return (src
            + table(["status", "criterion", "source", "measured", "threshold", "margin", "detail"], rows,
                    {3, 5}, [o.status for o in f.outcomes], whole={4}))


def _comparison_rows(f: Findings, comparisons: Sequence[Comparison]) -> tuple[list[list[object]], list[str]]:
    keys = varying_keys([c.params for c in f.comparisons])
    # the verdict went by the adjusted p: it stands beside the raw one, as in compare's table
    adjusted = shows_adjusted(f.adjust)
    rows, classes = [], []
    for c in comparisons:
        d = c.to_dict()
        ci = "-" if d["ci95_low"] is None else f"[{d['ci95_low']:+.3g}, {d['ci95_high']:+.3g}]"
        rows.append([c.status, c.benchmark, c.metric, params_text(c.params, keys), f"{c.a.n}/{c.b.n}",
                     _mean_sd(c.a), _mean_sd(c.b),
                     change_text_pct(c.a.mean, c.b.mean), ci,
                     p_text(d["p_value"]), *([p_text(d["p_adjusted"])] if adjusted else []), c.verdict])
        classes.append(c.status)
    return rows, classes


def _mean_sd(s: Summary) -> str:
    """``mean ± sd``; the mean alone where the sd is undefined (one value): ± 0 would claim a
    perfectly steady row."""
    sd = s.known_sd
    return f"{s.mean:.4g}" if sd is None else f"{s.mean:.4g} ± {sd:.2g}"


_COMPARISON_HEADERS = ["status", "benchmark", "metric", "params", "n A/B", "A mean ± sd", "B mean ± sd",
                       "delta", "95% CI of B-A", "p", "verdict"]
_NUMERIC = {4, 5, 6, 7, 8, 9}


def _comparison_table(f: Findings, comparisons: Sequence[Comparison]) -> str:
    rows, classes = _comparison_rows(f, comparisons)
    if not shows_adjusted(f.adjust):
        return table(_COMPARISON_HEADERS, rows, _NUMERIC, classes)
    p = _COMPARISON_HEADERS.index("p")
    headers = [*_COMPARISON_HEADERS[:p + 1], "p adj", *_COMPARISON_HEADERS[p + 1:]]
    return table(headers, rows, _NUMERIC | {p + 1}, classes)


def _comparison(f: Findings) -> str:
    """Rows that changed first, then those that cannot be called, the unchanged ones and the
    folded ones, each under its heading."""
    if f.compare_error:
        return f"<p>{esc(f.compare_error)}</p>"
    if not f.comparisons:
        return ""
    shown, folded = f.shown_comparisons, f.folded_comparisons
    changed = sorted((c for c in shown if c.status in (WORSE, BETTER)), key=lambda c: c.status != WORSE)
    body = ("<p class=small>Welch's t-test per row; rows with CV above 10% are reported as noisy, "
            "never as a regression; changes under 2% are not reported. The plots show each group's "
            "mean and 95% confidence interval per size."
            + (f" {esc(adjust_note(f.adjust, family_size(f.comparisons)))}." if shows_adjusted(f.adjust) else "")
            + f"</p><p>{esc(f.comparison_text())}.</p>")
    # Every row is on the page, none in a collapsed section: a folded row is missed by the reader,
    # by a search in the page and by a printout alike.
    if changed:
        body += f"<h3>{len(changed)} row(s) changed, worse first</h3>" + _comparison_table(f, changed)
    for status, what in ((NOISY, "too noisy to call (CV above 10%)"),
                         (INSUFFICIENT, "with too few runs to test (fewer than 2 per side)"),
                         (SAME, "with no significant difference")):
        rest = [c for c in shown if c.status == status]
        if rest:
            body += f"<h3>{len(rest)} row(s) {esc(what)}</h3>{_comparison_table(f, rest)}"
    if folded:
        what = ", ".join(dict.fromkeys(c.metric for c in folded))
        body += (f"<h3>{len(folded)} redundant row(s) folded away ({esc(what)}: the same "
                 f"as a row shown, or zero everywhere; not counted)</h3>"
                 f"{_comparison_table(f, folded)}")
    return body


def _noise(f: Findings) -> str:
    if not f.warnings:
        return ""
    group_of = {run.id: g.label for g in f.groups for run, _ in g.runs}
    rows = [[rid, group_of.get(rid, ""), w.benchmark, w.kind, f"{w.rows} of {w.checked}", w.worst,
             w.advice] for rid, w in f.warnings]
    return ("<p class=small>Rows whose iterations spread far or whose first iteration was slow "
            "(thresholds in docs/metrics.md, after hyperfine's warnings).</p>"
            + table(["run", "group", "benchmark", "kind", "rows", "worst", "what to do"], rows, {0}, whole={4}))


def _environment(f: Findings) -> str:
    parts = []
    for d in f.env_diffs:
        if not d.differences:
            parts.append(f"<p>No differences between {esc(d.a)} and {esc(d.b)}.</p>")
            continue
        # the execution context first (cgroup limits, CPUs, namespace): a container against bare metal
        shown = sorted(d.differences, key=lambda x: x.category != "context")[:300]
        rows = [[x.category, x.key, _env_value(x.a), _env_value(x.b)] for x in shown]
        more = (f"<p class=small>{len(d.differences) - 300} more not shown (clusterbench env diff).</p>"
                if len(d.differences) > 300 else "")
        parts.append(f"<p>{len(d.differences)} difference(s), A = {esc(d.a)}, B = {esc(d.b)} "
                     "(as <code>clusterbench env diff</code> shows them):</p>"
                     + table(["category", "key", "A", "B"], rows) + more)
    return "".join(parts)


def _env_value(v: object) -> str:
    return "(unset)" if v is None else v if isinstance(v, str) else json.dumps(v, default=str)


def _degraded(f: Findings) -> str:
    if not f.degraded:
        scan = f.degraded_scan
        if scan is None or scan.skipped:
            return f"<p>Skipped: {esc(scan.skip_reason() if scan else 'not run')}.</p>"
        return (f"<p>No outliers among {scan.judged} row(s) compared (modified z-score, Iglewicz &amp; "
                "Hoaglin, |z| &gt; 3.5 and more than 5% off the median).</p>")
    rows = [[d.by, d.outlier.key, d.benchmark, d.metric, params_text(d.params), fmt(d.outlier.value, d.unit),
             fmt(d.outlier.median, d.unit),
             change_text_pct(d.outlier.median, d.outlier.value) if d.outlier.median else "from 0",
             compact(d.outlier.z, 1, True)]
            for d in f.degraded[:50]]
    return (table(["by", "who", "benchmark", "metric", "params", "value", "median", "off by", "mod. z"],
                    rows, {5, 6, 7, 8}, ["fail"] * len(rows)))


def _history(f: Findings, entries: Sequence[FigureEntry], images: dict[str, str]) -> str:
    """Each host's headline metric over the selected runs, and where it changed (trend)."""
    if not f.history:
        return ""
    rows = [[s.entity, s.label, s.metric, s.kind(c), s.points[c.index].run, s.points[c.index].started_at[:10],
             fmt(c.before, s.unit), fmt(c.after, s.unit), _change_pct(c.before, c.after, c.relative),
             f"{c.confidence * 100:.1f}%"]
            for s in f.history for c in s.changes]
    found = (table(["host", "row", "metric", "change", "run", "date", "before", "after", "by", "confidence"],
                   rows, {4, 6, 7, 8, 9}, ["fail" if r[3] == "regression" else "pass" for r in rows], whole={5})
             if rows else "<p>No change of level in any series (Mann-Whitney scan, docs/judge.md).</p>")
    # "No change" from a series that could not show one is not evidence of stability: say which.
    notes = [text for s in f.history for _, text in series_notes(s)]
    if notes:
        found += "<ul class=small>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>"
    return found + _figures(entries, images, "history")


def _change_pct(before: float, after: float, relative: float) -> str:
    """A change in percent; "from 0" where the level before was 0 (no finite percentage). From
    levels it is computed without overflow: 5e-324 to 12.5 is no "from 0"."""
    if before and math.isfinite(before) and math.isfinite(after):
        return change_text_pct(before, after)
    pct = relative * 100
    return f"{compact(pct, 1, True)}%" if math.isfinite(pct) else "from 0"


def _efficiency(f: Findings) -> str:
    parts = []
    if f.efficiencies:
        largest: dict[tuple, tuple[int, object]] = {}
        for rid, e in f.efficiencies:
            k = (rid, e.benchmark, e.placement)
            if k not in largest or e.bytes > largest[k][1].bytes:
                largest[k] = (rid, e)
        rows = [[rid, e.benchmark, e.placement, format_size(e.bytes), e.nodes, fmt(e.measured_algbw),
                 fmt(e.optimal_algbw), e.percent_text(0)]
                for rid, e in largest.values()]
        # one row per run, op and placement: capped as the other long tables are (600 runs made 2,400)
        more = f"<p class=small>{len(rows) - 300} more rows not shown.</p>" if len(rows) > 300 else ""
        parts.append("<h3>Collectives vs theory</h3><p class=small>Optimal algbw over the inter-node link: "
                     "B&middot;n/(2(n-1)) for all_reduce (n nodes), link speed / bus factor otherwise.</p>"
                     + table(["run", "benchmark", "placement", "size", "nodes", "algbw GB/s",
                              "optimal GB/s", "efficiency"], rows[:300], {0, 4, 5, 6, 7}, whole={3}) + more)
    if f.device_percents:
        shown = f.device_percents_shown(DEVICE_ROWS_IN_ORDER)
        rows = [[rid, d.benchmark, d.device_name, d.label(), fmt(d.value, d.unit), fmt(d.peak, d.unit),
                 d.percent_text()] for rid, d in shown]
        cut = (f"<p class=small>The {len(shown)} rows furthest below their peak of {len(f.device_percents)}, "
               "lowest first.</p>" if len(shown) < len(f.device_percents) else "")
        parts.append("<h3>Devices vs datasheet peak</h3>" + cut
                     + table(["run", "benchmark", "device", "row", "measured", "peak", "% of peak"], rows,
                             {0, 4, 5, 6}))
    return "".join(parts)


def _size_tables(f: Findings, family: Family) -> str:
    """The headline metric against the family's size param, a column per group (and split)."""
    spec, headline = family.figure, family.headline
    if spec is None or headline is None:
        return ""
    parts = []
    for bench in benchmarks_of(f, family):
        cols: list[tuple[str, str]] = []  # (group label, placement)
        cells: dict[tuple[int, str, str], list[float]] = {}
        for g in f.groups:
            for r in g.rows:
                m = r.m
                if m.benchmark != bench or m.metric != headline.name or spec.x not in m.params:
                    continue
                pl = " ".join(str(m.params.get(k, "")) for k in spec.split).strip()
                if (g.label, pl) not in cols:
                    cols.append((g.label, pl))
                cells.setdefault((int(m.params[spec.x]), g.label, pl), []).append(m.value)
        sizes = sorted({k[0] for k in cells})
        rows = []
        for s in sizes:
            row: list[object] = [format_size(s)]
            for label, pl in cols:
                v = cells.get((s, label, pl))
                if not v:
                    row.append("-")
                    continue
                mean, sd = mean_sd(v)
                row.append(_num(mean) if len(v) == 1 else f"{_num(mean)} ± {_num(sd)}")
            rows.append(row)
        name = headline.name
        headers = ["size"] + [f"{label} {pl}-place {name}" if pl else f"{label} {name}" for label, pl in cols]
        parts.append(f"<h3>{esc(bench)} {esc(name)} ({esc(headline.unit)})</h3>"
                     + table(headers, rows, set(range(1, len(headers))), whole={0}))
    return "".join(parts)


def _family_table(f: Findings, family: Family) -> str:
    """The family's headline rows with the params that identify them (a column only where some
    row has a value); folded away under the figure when long."""
    headline = family.headline
    if headline is None:
        return ""
    owned = set(benchmarks_of(f, family))   # each benchmark asked once, not each row
    found = [(g.label, r) for g in f.groups for r in g.rows
             if r.m.metric == headline.name and r.m.benchmark in owned]
    if not found:
        return ""
    keys = [k for k in family.row_params if any(r.m.params.get(k, "") != "" for _, r in found)]
    # only the rows shown are formatted: a fleet's night has 56,000 of them
    shown = [[r.run.id, label, r.m.metric] + [r.m.params.get(k, "") for k in keys] + [fmt(r.m.value, r.m.unit)]
             for label, r in found[:300]]
    more = f"<p class=small>{len(found) - 300} more rows not shown.</p>" if len(found) > 300 else ""
    body = table(["run", "group", "metric", *keys, "value"], shown, {0, len(keys) + 3}) + more
    if len(found) > 30:
        return f"<details><summary>{len(found)} {esc(headline.name)} rows</summary>{body}</details>"
    return body


# Families with a section of their own (figures and tables); the rest go to "Other measurements".
_tabled = tuple(family for family in FAMILIES if family.figure is not None)


def _other_tables(f: Findings) -> str:
    shown = {fam.name for fam in _tabled}
    rows = [r for r in f.all_rows if (getattr(family_of(r.m.benchmark), "name", None) not in shown)]
    if not rows:
        return ""
    keys = varying_keys([r.m.params for r in rows])
    body = [[r.run.id, r.m.benchmark, r.m.metric, params_text(r.m.params, keys), fmt(r.m.value, r.m.unit)]
            for r in rows[:300]]
    return table(["run", "benchmark", "metric", "params", "value"], body, {0, 4})


def _figures(entries: Sequence[FigureEntry], images: dict[str, str], section: str) -> str:
    out = []
    for e in entries:
        if e.section == section and e.slug in images:
            out.append(f'<figure><img alt="{esc(e.title)}" src="{images[e.slug]}">'
                       f"<figcaption>{esc(e.title)}</figcaption></figure>")
    return "".join(out)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def render_html(f: Findings, entries: Sequence[FigureEntry], images: dict[str, str], title: str) -> str:
    """The page; ``images`` maps figure slugs to data URIs."""
    sections: list[tuple[str, str]] = [("Summary", _summary(f))]
    # an A/B report says first what differs between the groups' setups, then what that cost
    ab = bool(f.comparisons or f.compare_error)
    if ab:
        sections.append(("What differs between the groups", _environment(f)))
    if f.comparisons or f.compare_error:
        head = (f"Comparison: A = {f.groups[0].label}, B = {f.groups[1].label}" if f.comparisons
                else "Comparison")
        sections.append((head, _comparison(f)))
    if f.outcomes:
        sections.append((f"Validation: {f.profile.name}",
                         _validation(f) + _figures(entries, images, "validation")))
    sections.append(("Degraded hosts and devices", _degraded(f)))
    sections.append(("History", _history(f, entries, images)))
    sections.append(("Noise inside runs", _noise(f)))
    if not ab:
        sections.append(("Environment differences", _environment(f)))
    sections.append(("Efficiency", _efficiency(f)))
    for family in _tabled:
        tables = _size_tables(f, family) if family.figure and family.figure.kind == "size_curve" \
            else _family_table(f, family)
        sections.append((family.title, _figures(entries, images, family.name) + tables))
    sections.append(("Telemetry", _figures(entries, images, "telemetry")))
    sections.append(("Other measurements", _other_tables(f)))
    sections.append(("Runs", _runs_section(f)))
    sections = [(t, b) for t, b in sections if b]
    ids: list[str] = []
    for t, _ in sections:
        base = _slug(t)
        ids.append(base if base not in ids else f"{base}-{len(ids)}")
    toc = ""
    if len(sections) > 4:  # a long report: say what is in it
        toc = ('<nav class="toc"><b>Contents</b><ul>'
               + "".join(f'<li><a href="#{i}">{esc(t)}</a></li>' for i, (t, _) in zip(ids, sections))
               + "</ul></nav>")
    body = [f"<h1>{esc(title)}</h1>", _verdict(f),
            f"<p class=small>Generated {esc(utc_now())} by clusterbench {esc(__version__)} from "
            f"{sum(len(g.runs) for g in f.groups)} run(s): {esc(', '.join(g.label for g in f.groups))}</p>",
            toc]
    body += [f'<h2 id="{i}">{esc(t)}</h2>{b}' for i, (t, b) in zip(ids, sections)]
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width'><title>{esc(title)}</title>"
            f"<style>{_CSS}</style></head><body>" + "".join(body) + "</body></html>\n")
