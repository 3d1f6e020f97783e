"""A self-contained HTML report: run metadata, verdicts, outliers, tables and inline plots.

No external resources (no scripts, fonts or stylesheets fetched): figures are inline PNG data
URIs, so the page can be mailed or attached to a ticket. Every string from a run or a log
(hostnames, device names, tags, commands) goes through ``html.escape``.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Iterable, Sequence

from clusterbench import __version__
from clusterbench.families import FAMILIES, Family, family_of
from clusterbench.judge.findings import Findings
from clusterbench.judge.text import fmt, params_text, varying_keys
from clusterbench.records import utc_now
from clusterbench.report.figures import FigureEntry, benchmarks_of
from clusterbench.units import format_size

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#2e7d32;font-weight:600}.fail,.worse,.error{color:#c62828;font-weight:600}.better{color:#1565c0;font-weight:600}
.skipped,.noisy,.insufficient{color:#777}.same{color:#444}
figure{margin:12px 0}figcaption{font-size:12px;color:#555}img{max-width:100%;border:1px solid #eee}
.small{font-size:12px;color:#555}
"""


def esc(v: object) -> str:
    return html.escape(str(v), quote=True)


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], numeric: set[int] | None = None,
          classes: Sequence[str | None] | None = None) -> str:
    numeric = numeric or set()
    out = ["<table><thead><tr>", *(f"<th>{esc(h)}</th>" for h in headers), "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        cls = classes[i] if classes and i < len(classes) else None
        out.append("<tr>")
        for j, cell in enumerate(row):
            attrs = ' class="n"' if j in numeric else ""
            if j == 0 and cls:
                attrs = f' class="{esc(cls)}"'
            out.append(f"<td{attrs}>{esc(cell)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _runs_section(f: Findings) -> str:
    rows = []
    for g in f.groups:
        for run, ms in g.runs:
            rows.append([run.id, g.label, run.benchmark + (f" ({run.source})" if run.source else ""),
                         run.status, run.started_at, ", ".join(run.hosts) or "-", run.ranks,
                         ", ".join(dict.fromkeys(run.devices)) or "-",
                         ", ".join(f"{k}={v}" for k, v in run.tags.items()) or "-",
                         ", ".join(f"{k} {v}" for k, v in list(run.versions.items())[:6]) or "-", len(ms)])
    body = table(["run", "group", "benchmark", "status", "started (UTC)", "hosts", "ranks", "devices",
                  "tags", "versions", "measurements"], rows, {0, 6, 10})
    errors = [(run.id, e) for g in f.groups for run, _ in g.runs for e in run.errors[:5]]
    if errors:
        body += "<p>Errors recorded with the runs:</p>" + table(["run", "error"], errors)
    return "<h2>Runs</h2>" + body


def _summary(f: Findings) -> str:
    items = []
    if f.outcomes:
        counts = {s: sum(o.status == s for o in f.outcomes) for s in ("pass", "fail", "skipped", "error")}
        verdict = "FAIL" if counts["fail"] or counts["error"] else "PASS"
        items.append(f'<li>Validation against <b>{esc(f.profile.name)}</b>: '
                     f'<span class="{verdict.lower()}">{verdict}</span> '
                     f'({", ".join(f"{n} {esc(s)}" for s, n in counts.items())})</li>')
    if f.comparisons:
        worse = sum(c.status == "worse" for c in f.comparisons)
        better = sum(c.status == "better" for c in f.comparisons)
        items.append(f"<li>Comparison {esc(f.groups[0].label)} vs {esc(f.groups[1].label)}: "
                     f"{len(f.comparisons)} rows, {worse} worse, {better} better</li>")
    items.append(f"<li>Degraded hosts/devices: {len(f.degraded) or 'none found'}</li>")
    best = _best_efficiency(f)
    if best:
        items.append(f"<li>Collective efficiency vs theory (largest message): {esc(best)}</li>")
    return "<h2>Summary</h2><ul>" + "".join(items) + "</ul>"


def _best_efficiency(f: Findings) -> str:
    if not f.efficiencies:
        return ""
    largest = max(e.bytes for _, e in f.efficiencies)
    parts = [f"run {rid} {e.benchmark} {e.placement}: {e.ratio * 100:.0f}%"
             for rid, e in f.efficiencies if e.bytes == largest]
    return "; ".join(parts[:8])


def _validation(f: Findings) -> str:
    if not f.outcomes:
        return ""
    rows = [[o.status.upper(), o.criterion.name, o.criterion.source, fmt(o.measured, o.unit), o.threshold,
             "-" if o.margin_pct is None else f"{o.margin_pct:+.1f}%", o.detail] for o in f.outcomes]
    src = f"<p class=small>{esc(f.profile.description)}</p>" if f.profile.description else ""
    return (f"<h2>Validation: {esc(f.profile.name)}</h2>{src}"
            + table(["status", "criterion", "source", "measured", "threshold", "margin", "detail"], rows,
                    {3}, [o.status for o in f.outcomes]))


def _comparison(f: Findings) -> str:
    if f.compare_error:
        return f"<h2>Comparison</h2><p>{esc(f.compare_error)}</p>"
    if not f.comparisons:
        return ""
    keys = varying_keys([c.params for c in f.comparisons])
    rows, classes = [], []
    for c in f.comparisons:
        d = c.to_dict()
        ci = "-" if d["ci95_low"] is None else f"[{d['ci95_low']:+.3g}, {d['ci95_high']:+.3g}]"
        rows.append([c.status, c.benchmark, c.metric, params_text(c.params, keys), f"{c.a.n}/{c.b.n}",
                     f"{c.a.mean:.4g} ± {c.a.sd:.2g}", f"{c.b.mean:.4g} ± {c.b.sd:.2g}",
                     "-" if c.delta_pct is None else f"{c.delta_pct:+.1f}%", ci,
                     "-" if d["p_value"] is None else f"{d['p_value']:.3g}", c.verdict])
        classes.append(c.status)
    return (f"<h2>Comparison: A = {esc(f.groups[0].label)}, B = {esc(f.groups[1].label)}</h2>"
            "<p class=small>Welch's t-test per row; rows with CV above 10% are reported as noisy, "
            "never as a regression; changes under 2% are not reported.</p>"
            + table(["status", "benchmark", "metric", "params", "n A/B", "A mean ± sd", "B mean ± sd",
                     "delta", "95% CI of B-A", "p", "verdict"], rows, {5, 6, 7, 9}, classes))


def _degraded(f: Findings) -> str:
    if not f.degraded:
        return ("<h2>Degraded hosts and devices</h2><p>No outliers (modified z-score, Iglewicz &amp; "
                "Hoaglin, |z| &gt; 3.5 and more than 5% off the median).</p>")
    rows = [[d.by, d.outlier.key, d.benchmark, d.metric, params_text(d.params), fmt(d.outlier.value, d.unit),
             fmt(d.outlier.median, d.unit), f"{d.outlier.rel_dev * 100:+.1f}%", f"{d.outlier.z:+.1f}"]
            for d in f.degraded[:50]]
    return ("<h2>Degraded hosts and devices</h2>"
            + table(["by", "who", "benchmark", "metric", "params", "value", "median", "off by", "mod. z"],
                    rows, {5, 6, 7, 8}, ["fail"] * len(rows)))


def _history(f: Findings, entries: Sequence[FigureEntry], images: dict[str, str]) -> str:
    """Each host's headline metric over the selected runs, and where it changed (trend)."""
    if not f.history:
        return ""
    rows = [[s.entity, s.label, s.metric, s.kind(c), s.points[c.index].run, s.points[c.index].started_at[:10],
             fmt(c.before, s.unit), fmt(c.after, s.unit), f"{c.relative * 100:+.1f}%", f"{c.confidence * 100:.1f}%"]
            for s in f.history for c in s.changes]
    found = (table(["host", "row", "metric", "change", "run", "date", "before", "after", "by", "confidence"],
                   rows, {6, 7, 8, 9}, ["fail" if r[3] == "regression" else "pass" for r in rows])
             if rows else "<p>No change of level in any series (Mann-Whitney scan, docs/judge.md).</p>")
    return "<h2>History</h2>" + found + _figures(entries, images, "history")


def _efficiency(f: Findings) -> str:
    parts = []
    if f.efficiencies:
        largest: dict[tuple, tuple[int, object]] = {}
        for rid, e in f.efficiencies:
            k = (rid, e.benchmark, e.placement)
            if k not in largest or e.bytes > largest[k][1].bytes:
                largest[k] = (rid, e)
        rows = [[rid, e.benchmark, e.placement, format_size(e.bytes), e.nodes, f"{e.measured_algbw:.2f}",
                 f"{e.optimal_algbw:.2f}", f"{e.ratio * 100:.0f}%"] for rid, e in largest.values()]
        parts.append("<h3>Collectives vs theory</h3><p class=small>Optimal algbw over the inter-node link: "
                     "B&middot;n/(2(n-1)) for all_reduce (n nodes), link speed / bus factor otherwise.</p>"
                     + table(["run", "benchmark", "placement", "size", "nodes", "algbw GB/s",
                              "optimal GB/s", "efficiency"], rows, {0, 4, 5, 6, 7}))
    if f.device_percents:
        rows = [[rid, d.benchmark, d.device_name, d.label(), fmt(d.value, d.unit), fmt(d.peak, d.unit),
                 f"{d.percent:.1f}%"] for rid, d in f.device_percents[:100]]
        parts.append("<h3>Devices vs datasheet peak</h3>"
                     + table(["run", "benchmark", "device", "row", "measured", "peak", "% of peak"], rows, {4, 5, 6}))
    return "<h2>Efficiency</h2>" + "".join(parts) if parts else ""


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
                row.append("-" if not v else (f"{statistics.fmean(v):.2f}" if len(v) == 1 else
                                               f"{statistics.fmean(v):.2f} ± {statistics.stdev(v):.2f}"))
            rows.append(row)
        name = headline.name
        headers = ["size"] + [f"{label} {pl}-place {name}" if pl else f"{label} {name}" for label, pl in cols]
        parts.append(f"<h3>{esc(bench)} {esc(name)} ({esc(headline.unit)})</h3>"
                     + table(headers, rows, set(range(1, len(headers)))))
    return "".join(parts)


def _family_table(f: Findings, family: Family) -> str:
    """The family's headline rows with the params that identify them."""
    headline = family.headline
    keys = list(family.row_params)
    rows = []
    for g in f.groups:
        for r in g.rows:
            if family.owns(r.m.benchmark) and headline is not None and r.m.metric == headline.name:
                rows.append([r.run.id, g.label, r.m.metric] + [r.m.params.get(k, "") for k in keys]
                            + [fmt(r.m.value, r.m.unit)])
    if not rows:
        return ""
    shown = rows[:300]
    more = f"<p class=small>{len(rows) - 300} more rows not shown.</p>" if len(rows) > 300 else ""
    return f"<h3>{esc(family.title)}</h3>" + table(["run", "group", "metric", *keys, "value"], shown,
                                                    {len(keys) + 3}) + more


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
    return "<h2>Other measurements</h2>" + table(["run", "benchmark", "metric", "params", "value"], body, {4})


def _figures(entries: Sequence[FigureEntry], images: dict[str, str], section: str) -> str:
    out = []
    for e in entries:
        if e.section == section and e.slug in images:
            out.append(f'<figure><img alt="{esc(e.title)}" src="{images[e.slug]}">'
                       f"<figcaption>{esc(e.title)}</figcaption></figure>")
    return "".join(out)


def render_html(f: Findings, entries: Sequence[FigureEntry], images: dict[str, str], title: str) -> str:
    """The page; ``images`` maps figure slugs to data URIs."""
    body = [f"<h1>{esc(title)}</h1>",
            f"<p class=small>Generated {esc(utc_now())} by clusterbench {esc(__version__)} from "
            f"{sum(len(g.runs) for g in f.groups)} run(s): {esc(', '.join(g.label for g in f.groups))}</p>",
            _summary(f), _runs_section(f), _validation(f), _figures(entries, images, "validation"),
            _degraded(f), _history(f, entries, images), _efficiency(f)]
    for family in _tabled:
        tables = _size_tables(f, family) if family.figure and family.figure.kind == "size_curve" \
            else _family_table(f, family)
        section = _figures(entries, images, family.name) + tables
        if section:
            body.append(f"<h2>{esc(family.title)}</h2>" + section)
    body.append(_comparison(f))
    body.append(_other_tables(f))
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width'><title>{esc(title)}</title>"
            f"<style>{_CSS}</style></head><body>" + "".join(body) + "</body></html>\n")
