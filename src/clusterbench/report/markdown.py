"""A Markdown summary for tickets and pull requests, verdict first (the same words and counts as
the HTML page): runs, validation, changes, outliers, noise inside runs, environment differences,
efficiency."""

from __future__ import annotations

import re

from clusterbench.judge.compare import change_text_pct, family_size
from clusterbench.judge.findings import Findings
from clusterbench.judge.text import (
    adjust_note,
    fmt,
    p_text,
    params_text,
    shows_adjusted,
    varying_keys,
)
from clusterbench.printable import printable
from clusterbench.report.terminal import run_remarks
from clusterbench.store.selectors import tag_term
from clusterbench.units import compact, format_size

# Pipes and newlines would break the table; angle brackets would render as HTML on most sites,
# and an entity (a tag "&amp;") as the character it names; backticks would make a code span in
# which those entities show as typed. Other control characters (an ESC from a log) show as
# printable's escapes, never raw.
_MARKUP = str.maketrans({"\\": "\\\\", "|": "\\|", "`": "\\`", "&": "&amp;", "<": "&lt;", ">": "&gt;"})
# "](" or "][" would make a host name "![x](https://...)" an image the reader's browser fetches, or
# a link; with that "]" escaped neither forms (and no reference definition can start in a table),
# while a "[]" in an error message stays as it is.
_LINK = re.compile(r"\](?=[(\[])")


def _cell(v: object) -> str:
    return _LINK.sub(r"\\]", printable(str(v).replace("\n", " ")).translate(_MARKUP))


def _table(headers: list[str], rows: list[list[object]]) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out + [""]


def render_markdown(f: Findings, title: str) -> str:
    v = f.verdict()
    lines = [f"# {_cell(title)}", "", f"**{v.status}**", ""]
    lines += [f"- {_cell(r)}" for r in v.reasons] + ([""] if v.reasons else [])
    if v.failures:   # what failed, as the page's verdict says it
        lines += ["What failed:", ""] + [f"{i}. {_cell(x)}" for i, x in enumerate(v.failures, 1)] + [""]
    runs = [[run.id, g.label, run.benchmark + (f" ({run.source})" if run.source else ""), run.status,
             ", ".join(run.hosts) or "-", "?" if run.ranks is None else run.ranks, ", ".join(dict.fromkeys(run.devices)) or "-",
             ", ".join(tag_term(k, v) for k, v in run.tags.items()) or "-"]
            for g in f.groups for run, _ in g.runs]
    lines += ["## Runs", ""] + _table(["run", "group", "benchmark", "status", "hosts", "ranks", "devices", "tags"], runs)
    # as the HTML page: a failed run's errors and an import's doubts are why its figures matter
    errors = [[run.id, e] for g in f.groups for run, _ in g.runs for e in run.errors[:5]]
    if errors:
        lines += ["Errors recorded with the runs:", ""] + _table(["run", "error"], errors)
    remarks = [[run.id, kind, text] for g in f.groups for run, _ in g.runs for kind, text in run_remarks(run)]
    if remarks:
        lines += ["Warnings and notes recorded with the runs:", ""] + _table(["run", "kind", "text"], remarks)
    if f.outcomes:
        failed = [o for o in f.outcomes if o.status in ("fail", "error")]
        verdict = "FAIL" if failed else "PASS"
        lines += [f"## Validation: {_cell(f.profile.name)}: **{verdict}**", ""]
        lines += _table(["status", "criterion", "measured", "threshold", "margin", "detail"],
                        [[o.status.upper(), o.criterion.name, fmt(o.measured, o.unit), o.threshold,
                          "-" if o.margin_pct is None else f"{compact(o.margin_pct, 1, True)}%", o.detail] for o in f.outcomes])
    if f.compare_error:
        lines += ["## Comparison", "", _cell(f.compare_error), ""]
    elif f.comparisons:
        changed = [c for c in f.shown_comparisons if c.status in ("better", "worse")]
        folded = f.folded_comparisons
        lines += [f"## Comparison: A = {_cell(f.groups[0].label)}, B = {_cell(f.groups[1].label)}", "",
                  _cell(f.comparison_text()) + "."
                  + (f" {len(folded)} redundant row(s) folded away "
                     f"({', '.join(dict.fromkeys(c.metric for c in folded))})." if folded else ""), ""]
        if changed:
            keys = varying_keys([c.params for c in f.comparisons])
            # the verdict went by the adjusted p: it stands beside the raw one, as in compare's table
            adjusted = shows_adjusted(f.adjust)
            if adjusted:
                lines += [_cell(adjust_note(f.adjust, family_size(f.comparisons))) + ".", ""]
            lines += _table(["benchmark", "metric", "params", "n A/B", "delta", "p", *(["p adj"] if adjusted else []),
                             "verdict"],
                            [[c.benchmark, c.metric, params_text(c.params, keys), f"{c.a.n}/{c.b.n}",
                              change_text_pct(c.a.mean, c.b.mean),
                              p_text(c.test.p if c.test else None),
                              *([p_text(c.p_adjusted)] if adjusted else []), c.verdict] for c in changed[:40]])
    lines += ["## Degraded hosts and devices", ""]
    if f.degraded:
        lines += _table(["by", "who", "benchmark", "metric", "params", "value", "median", "off by"],
                        [[d.by, d.outlier.key, d.benchmark, d.metric, params_text(d.params),
                          fmt(d.outlier.value, d.unit), fmt(d.outlier.median, d.unit),
                          change_text_pct(d.outlier.median, d.outlier.value) if d.outlier.median else "from 0"]
                         for d in f.degraded[:30]])
    elif f.degraded_scan is None or f.degraded_scan.skipped:
        why = f.degraded_scan.skip_reason() if f.degraded_scan else "not run"
        lines += [f"Skipped: {_cell(why)}.", ""]
    else:
        lines += [f"None found among {f.degraded_scan.judged} row(s) compared (modified z-score > 3.5 and "
                  "> 5% off the median).", ""]
    if f.warnings:
        lines += ["## Noise inside runs", ""]
        lines += _table(["run", "benchmark", "kind", "rows", "worst"],
                        [[rid, w.benchmark, w.kind, f"{w.rows} of {w.checked}", w.worst]
                         for rid, w in f.warnings[:30]])
    for d in f.env_diffs:
        lines += ["## Environment differences", "",
                  f"A = {_cell(d.a)}, B = {_cell(d.b)}: {len(d.differences)} difference(s).", ""]
        if d.differences:
            lines += _table(["category", "key", "A", "B"],
                            [[x.category, x.key, "(unset)" if x.a is None else x.a,
                              "(unset)" if x.b is None else x.b] for x in d.differences[:40]])
    if f.efficiencies:
        largest = max(e.bytes for _, e in f.efficiencies)
        lines += ["## Efficiency vs theory", ""]
        at_largest = [(rid, e) for rid, e in f.efficiencies if e.bytes == largest]
        lines += _table(["run", "benchmark", "placement", "size", "nodes", "algbw", "optimal", "efficiency"],
                        [[rid, e.benchmark, e.placement, format_size(e.bytes), e.nodes, fmt(e.measured_algbw),
                          fmt(e.optimal_algbw), e.percent_text(0)]
                         for rid, e in at_largest[:40]])
        if len(at_largest) > 40:   # one row per run, op and placement: the HTML page holds more
            lines += [f"{len(at_largest) - 40} more rows not shown.", ""]
    if f.device_percents:
        shown = f.device_percents_shown(30)
        lines += ["## Devices vs datasheet peak", ""]
        if len(shown) < len(f.device_percents):
            lines += [f"The {len(shown)} rows furthest below their peak of {len(f.device_percents)}, "
                      "lowest first.", ""]
        lines += _table(["run", "benchmark", "device", "measured", "peak", "%"],
                        [[rid, d.benchmark, d.device_name, fmt(d.value, d.unit), fmt(d.peak, d.unit),
                          d.percent_text()] for rid, d in shown])
    return "\n".join(lines).rstrip() + "\n"
