"""``clusterbench trend``: each host's (or GPU's) headline series across runs, and the runs where
they changed level: by default a summary, the hosts with a change worst first; ``--details``
every series (exit 1 with ``--fail-on regression`` when a series sits at a worse level)."""

from __future__ import annotations

import math

import click

from clusterbench.cli.bounds import Count, FiniteFloat
from clusterbench.cli.options import db_option, json_option
from clusterbench.judge.changepoint import Change, Settings, runs_needed
from clusterbench.judge.history import (
    BY,
    REGRESSION,
    WINDOW,
    Series,
    Trend,
    stored_trend,
    too_short,
)
from clusterbench.judge.text import fmt
from clusterbench.printable import printable
from clusterbench.report.jsonl import emit, note_line
from clusterbench.units import compact, parse_size

# The permutation p-value is never below 1 / (permutations + 1) and each scan gets alpha / 2:
# a smaller alpha could never show a change, whatever the history.
ALPHA_FLOOR = 2 / (Settings.permutations + 1)


def _change_text(s: Series, c: Change) -> str:
    p = s.points[c.index]
    rel = c.relative * 100
    # a change from 0 has no percentage; compact: off a level near 0 (1e-300) it has 300 digits
    by = f"{compact(rel, 1, sign=True)}% " if math.isfinite(rel) else ""
    return (f"{s.kind(c).upper()} at run {p.run} ({p.started_at[:10]}): {by}"
            f"({fmt(c.before)} -> {fmt(c.after, s.unit)}), confidence {c.confidence * 100:.1f}%")


@click.command("trend")
@click.argument("selectors", nargs=-1, metavar="[RUN|SELECTOR]...")
@click.option("--metric", default=None, help="Record metric (default: each benchmark's headline metric).")
@click.option("--benchmark", default=None, help="Only this benchmark (e.g. all_reduce, stream).")
@click.option("--by", type=click.Choice(BY), default="host", show_default=True,
              help="One series per host, or per GPU (host:device).")
@click.option("--since", default=None, metavar="AGE|DATE",
              help="Only runs started since then: 30d, 12h, 2w or 2025-01-31.")
@click.option("--window", type=Count(0, 1_000_000), default=WINDOW, show_default=True, metavar="RUNS",
              help="Each series' newest RUNS runs (0: all of them).")
@click.option("--all", "every", is_flag=True,
              help="Every row of the metric (each size, kernel, precision, step), not only the headline "
                   "series; read from the runs' measurements.")
@click.option("--details", is_flag=True, help="Every series, host by host, not only the hosts with a change.")
@click.option("--bytes", "size", default=None, metavar="SIZE",
              help="Rows at this message size (default: the largest size of each run).")
@click.option("--alpha", type=FiniteFloat(ALPHA_FLOOR, True, 0.5), default=Settings.alpha, show_default=True,
              help=f"Largest permutation p-value taken as a change (more than {ALPHA_FLOOR:g}: "
                   f"{Settings.permutations} permutations resolve no smaller p-value).")
@click.option("--min-effect", type=FiniteFloat(0, False, 100), default=Settings.min_effect * 100, show_default=True,
              help="Smallest change of the median worth reporting, in percent.")
# at most 500: the smallest p-value a series of 2 x 515 runs can give, 2 / C(1030, 515), is below
# the smallest float (its computation overflows); 500 each side is far beyond any real history
@click.option("--min-runs", type=Count(2, 500), default=Settings.min_size, show_default=True,
              help="Runs needed on each side of a change (one noisy run is never a step).")
@click.option("--fail-on", "fail_on", type=click.Choice([REGRESSION]), default=None,
              help="Exit 1 when a series' latest change is a regression.")
@json_option("a `trend_point` line per run of each series, a `regression` or `improvement` line per "
             "change found, then a `summary`")
@db_option
def trend(selectors: tuple[str, ...], metric: str | None, benchmark: str | None, by: str, since: str | None,
          window: int, every: bool, details: bool, size: str | None, alpha: float, min_effect: float,
          min_runs: int, fail_on: str | None, as_json: bool, db: str | None) -> int:
    """The headline series of each host (or GPU) across the selected runs (default: all) in time
    order, and where they stepped: the run, by how much and with what confidence (Mann-Whitney
    scan with a permutation p-value, docs/judge.md). A headline series is a family's headline
    metric at its headline row (busbw at the largest size, STREAM Triad, one GEMM precision);
    ``--all`` follows every row."""
    if size is not None:   # '' (a script's empty variable) is no size: not "each run's largest"
        parse_size(size, "--bytes")
    settings = Settings(alpha=alpha, min_size=min_runs, min_effect=min_effect / 100)
    t = stored_trend(db, selectors, since, metric=metric, benchmark=benchmark, by=by, size=size,
                     settings=settings, every=every, window=window or None)
    failed = fail_on == REGRESSION and bool(t.open_regressions())
    if as_json:
        _json(t, failed)
    elif details:
        _details(t, by)
    else:
        _summary(t)
    return 1 if failed else 0


def _json(t: Trend, failed: bool) -> None:
    series, changes = t.series, t.changes()
    for s in series:
        for p in s.points:
            emit({"kind": "trend_point", "benchmark": s.benchmark, "metric": s.metric,
                  "params": s.row, "host": s.host, "device": s.device, "run": p.run,
                  "started_at": p.started_at, "value": p.value, "unit": s.unit})
    for run, text in t.notes():
        emit(note_line(text, run))
    for s, c in changes:
        emit(s.change_dict(c))
    emit({"kind": "summary", "command": "trend", "runs": [r.id for r in t.runs], "series": len(series),
          "hosts": len(t.hosts()), "window": t.window,
          "regressions": t.regressions(), "improvements": len(changes) - t.regressions(),
          "open_regressions": len(t.open_regressions()),
          "runs_needed": runs_needed(t.settings), "too_short": len(t.too_short()),
          "points_left_out": t.points_left_out(), "exit_code": 1 if failed else 0})


def _header(t: Trend) -> str:
    window = f", each series' newest {t.window} runs" if t.window else ""
    return (f"# trend: {len(t.series)} series on {len(t.hosts())} host(s) over {len(t.runs)} run(s), "
            f"{t.runs[0].started_at[:10]} .. {t.runs[-1].started_at[:10]}{window}")


def _footer(t: Trend) -> list[str]:
    changes = t.changes()
    hosts = t.hosts()
    changed = [h for h in hosts if h.changes()]
    out = [f"# {len(changes)} change(s) on {len(changed)} host(s): {t.regressions()} regression(s), "
           f"{len(t.open_regressions())} not recovered; {len(hosts) - len(changed)} host(s) without a change"]
    short = t.too_short()
    if short:
        out.append(f"# {len(short)} series too short to show a change at alpha {t.settings.alpha:g}: "
                   f"at least {runs_needed(t.settings)} runs are needed")
    return out


def _summary(t: Trend) -> None:
    """The hosts with a change, worst first: how many series and changes, and the worst one."""
    print(_header(t))
    changed = [(h, w) for h in t.hosts() if (w := h.worst()) is not None]
    changed.sort(key=lambda hw: (0 if hw[1][0].open_regression is hw[1][1] else
                                 1 if hw[1][0].kind(hw[1][1]) == REGRESSION else 2,
                                 -abs(hw[1][1].relative) if math.isfinite(hw[1][1].relative) else -math.inf,
                                 hw[0].host))
    if changed:
        width = max(4, *(len(h.host) for h, _ in changed))
        print(printable(f"{'host':<{width}} {'series':>6} {'changes':>7}  worst change"))
        for h, (s, c) in changed:
            print(printable(f"{h.host:<{width}} {len(h.series):>6} {len(h.changes()):>7}  "
                            f"{s.label} {s.metric}{_on(s)}: {_change_text(s, c)}"))
    for text in _footer(t):
        print(text)


def _on(s: Series) -> str:
    return f" on {s.device}" if s.device is not None else ""


def _details(t: Trend, by: str) -> None:
    """Every series, host by host: its runs, first and last values, and its changes."""
    print(_header(t))
    series, settings = t.series, t.settings
    width = min(48, max(len(s.label) for s in series))
    ent = max(len(s.entity) for s in series)
    # the columns as wide as their widest value: a value with its unit (4,255,995 MB/s) is wider
    # than any fixed width that suits the usual ones
    ends = [(fmt(s.points[0].value), fmt(s.points[-1].value, s.unit)) if s.points else ("-", "-")
            for s in series]
    wf = max(5, *(len(f) for f, _ in ends))
    wl = max(4, *(len(la) for _, la in ends))
    print(f"{by:<{ent}} {'row':<{width}} {'runs':>5} {'first':>{wf}} {'last':>{wl}}  change")
    for s, (first, last) in zip(series, ends):
        row = s.label if len(s.label) <= width else s.label[:width - 3] + "..."
        what = "; ".join(_change_text(s, c) for c in s.changes) or too_short(s, settings) or "-"
        print(printable(f"{s.entity:<{ent}} {row:<{width}} {len(s.points):>5} {first:>{wf}} {last:>{wl}}  {what}"))
    for run, text in t.notes():
        if run is not None:   # a short series says so in its row already
            print(printable(f"# note: {text}"))
    for text in _footer(t):
        print(text)


commands = [trend]
