"""Plain-text tables for validation outcomes and comparisons (terminal output). Criterion
names, params and details come from profiles and runs: every line is escaped (``printable``)."""

from __future__ import annotations

import json

from clusterbench.judge.compare import ADJUST_NONE, Comparison, change_text_pct, cv_percent_text
from clusterbench.judge.validate import Outcome
from clusterbench.printable import printable
from clusterbench.units import compact, format_size

# Whole with separators up to here (999,999,999,999 is 15 characters); past it the digits would
# push the columns out of line (1.7e308 has 309), so the value shows in %g form.
_WHOLE_MAX = 1e12


def fmt(v: float | None, unit: str = "") -> str:
    """A measured value for a table: two decimals, large values whole with thousands separators
    (4,255,995 MB/s, not 4.256e+06), tiny ones with 4 significant digits; only values of 1e12
    and beyond use an exponent (``1.7e+308``)."""
    if v is None:
        return "-"
    if abs(v) >= _WHOLE_MAX:
        s = f"{v:.6g}"
    elif abs(v) >= 1e5:
        s = f"{v:,.0f}"
    elif v and abs(v) < 1e-2:
        s = f"{v:.4g}"
    else:
        s = f"{v:.2f}"
    return f"{s} {unit}".rstrip()


def margin_text(o: Outcome) -> str:
    """``-0.051 GB/s (-0.1%)``: how far inside (+) or outside (-) its bound a criterion's value is,
    in the measured rows' unit, named: it need not be the threshold's (MB/s rows, a GB/s bound)."""
    if o.margin is None:
        return "-"
    return f"{o.margin:+.4g} {o.unit}".rstrip() + (
        f" ({compact(o.margin_pct, 1, True)}%)" if o.margin_pct is not None else "")


def failure_text(o: Outcome) -> str:
    """A failed or erroneous criterion in one phrase, for a verdict: its name, what was measured
    against what it needed, and the margin; an error says why instead."""
    if o.measured is None:
        return f"{o.criterion.name}: {o.status}" + (f": {o.detail}" if o.detail else "")
    return f"{o.criterion.name}: {fmt(o.measured, o.unit)}, needs {o.threshold}: {margin_text(o)}"


def outcome_lines(outcomes: list[Outcome]) -> list[str]:
    width = min(60, max((len(o.criterion.name) for o in outcomes), default=10))
    lines = [f"{'status':<8} {'criterion':<{width}} {'measured':>16}  {'threshold':<22} {'margin':>26}  detail"]
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
        margin = margin_text(o)
        name = o.criterion.name if len(o.criterion.name) <= width else o.criterion.name[:width - 3] + "..."
        lines.append(f"{o.status.upper():<8} {name:<{width}} {fmt(o.measured, o.unit):>16}  "
                     f"{o.threshold:<22} {margin:>26}  {o.detail}")
    lines.append("# " + ", ".join(f"{counts.get(s, 0)} {s}" for s in ("pass", "fail", "skipped", "error")))
    return [printable(t) for t in lines]


def varying_keys(param_sets: list[dict]) -> set[str]:
    """Params that differ between rows (constant ones are noise in a table); count follows bytes."""
    keys = {k for p in param_sets for k in p}
    # rows without the key (e.g. per-run summary metrics) do not make it vary
    out = {k for k in keys if len({json.dumps(p[k], default=str) for p in param_sets if k in p}) > 1}
    if "bytes" in out:
        out.discard("count")
    return out


def params_text(params: dict, keys: set[str] | None = None) -> str:
    shown = []
    for k, v in params.items():
        if keys is not None and k not in keys:
            continue
        if k == "bytes" and isinstance(v, int):
            v = format_size(v)
        shown.append(f"{k}={v}")
    return " ".join(shown) if shown else "-"


def cv_text(cv: float | None) -> str:
    """A coefficient of variation as a percent; ``-`` where it is undefined (one value, a mean
    of 0): 0.0% would claim a perfectly steady row."""
    return "-" if cv is None else f"{compact(cv * 100, 1)}%"


def shows_adjusted(adjust: str | None) -> bool:
    """Whether a comparison table has a ``p adj`` column: under "none" it would repeat ``p``."""
    return adjust is not None and adjust != ADJUST_NONE


def adjust_note(adjust: str, family: int | None = None) -> str:
    """What the ``p adj`` column is, said once beside every table that has it (terminal, HTML,
    Markdown), so that a reader sees why a row with a small ``p`` was not called changed."""
    if family == 0:
        return "p adj: no row has a p-value to adjust (every row needs 2+ runs a side)"
    counted = f" over {family} measurement(s)" if family is not None else ""
    return (f"p adj: p-values adjusted by {adjust}{counted} (algbw and time follow their busbw row); "
            "a verdict needs p adj below alpha")


def p_text(p: float | None) -> str:
    """A p-value in 3 significant digits. 0.0 only comes from a p below the smallest float
    (Welch's t far out in the tail): "0" would claim certainty."""
    if p == 0:
        return "<1e-300"
    return "-" if p is None else f"{p:.3g}"


def comparison_lines(rows: list[Comparison], adjust: str | None = None, family: int | None = None) -> list[str]:
    """The comparison table; with ``adjust`` (the method the rows were judged by) a ``p adj``
    column beside Welch's own p and a first line saying what the adjustment counted."""
    keys = varying_keys([c.params for c in rows]) if len(rows) > 1 else None
    adjusted = shows_adjusted(adjust)
    lines = []
    if adjust is not None and adjusted:
        lines.append("# " + adjust_note(adjust, family))
    lines.append(f"{'benchmark':<12} {'metric':<10} {'params':<40} {'n':>5} {'mean A':>11} {'cv A':>6} "
                 f"{'mean B':>11} {'cv B':>6} {'delta':>8} {'95% CI of B-A':>24} {'p':>8}"
                 + (f" {'p adj':>8}" if adjusted else "") + "  verdict")
    for c in rows:
        d = c.to_dict()
        params = params_text(c.params, keys)
        params = params if len(params) <= 40 else params[:37] + "..."
        ci = "-" if d["ci95_low"] is None else f"[{d['ci95_low']:+.3g}, {d['ci95_high']:+.3g}]"
        p, p_adj = p_text(d["p_value"]), p_text(d["p_adjusted"])
        delta = change_text_pct(c.a.mean, c.b.mean)
        lines.append(f"{c.benchmark:<12} {c.metric:<10} {params:<40} {c.a.n:>2}/{c.b.n:<2} "
                     f"{c.a.mean:>11.4g} {cv_percent_text(c.a):>6} {c.b.mean:>11.4g} {cv_percent_text(c.b):>6} "
                     f"{delta:>8} {ci:>24} {p:>8}" + (f" {p_adj:>8}" if adjusted else "") + f"  {c.verdict}")
    counts: dict[str, int] = {}
    for c in rows:
        counts[c.status] = counts.get(c.status, 0) + 1
    lines.append("# " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return [printable(t) for t in lines]


def dumps(obj: dict) -> str:
    return json.dumps(obj, default=str)
