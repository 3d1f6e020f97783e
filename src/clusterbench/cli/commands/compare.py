"""``clusterbench compare SEL_A SEL_B``: A/B comparison of two groups of runs."""

from __future__ import annotations

import json

import click

from clusterbench.cli.options import db_option, json_option
from clusterbench.errors import UsageError
from clusterbench.judge.compare import compare as compare_rows
from clusterbench.judge.compare import group_rows
from clusterbench.judge.select import load_runs, rows_of
from clusterbench.judge.text import comparison_lines
from clusterbench.store import Store


@click.command("compare")
@click.argument("selector_a")
@click.argument("selector_b")
@click.option("--benchmark", default=None, help="Only this benchmark (e.g. all_reduce).")
@click.option("--metric", default=None, help="Only this metric (e.g. busbw).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="Significance level of Welch's t-test.")
@click.option("--min-effect", type=click.FloatRange(min=0), default=2.0, show_default=True,
              help="Smallest change in percent worth reporting as a difference.")
@click.option("--max-cv", type=click.FloatRange(min=0), default=10.0, show_default=True,
              help="Rows whose coefficient of variation exceeds this percent are 'noisy', never a regression.")
@click.option("--only-changes", is_flag=True, help="Print only rows judged better or worse.")
@json_option
@db_option
def compare(selector_a: str, selector_b: str, benchmark: str | None, metric: str | None,
            alpha: float, min_effect: float, max_cv: float, only_changes: bool, as_json: bool,
            db: str | None) -> None:
    """Compare group A with group B, row by row (benchmark, metric, params).

    A selector is a run id, 'last', or tag filters (env=container,node=gpu-07); several runs on
    a side (e.g. from --repeat) form a sample: n, mean, sd, CV, delta, a 95% confidence interval
    of the difference and Welch's t-test p-value, with a verdict per row.
    """
    with Store.open(db) as store:
        a = rows_of(load_runs(store, [selector_a]))
        b = rows_of(load_runs(store, [selector_b]))
    ids_a = {r.run.id for r in a}
    if ids_a & {r.run.id for r in b}:
        raise UsageError(f"selectors {selector_a!r} and {selector_b!r} share runs; compare disjoint groups")

    def keep(rows):
        return [r for r in rows if (not benchmark or r.m.benchmark == benchmark)
                and (not metric or r.m.metric == metric)]

    a, b = keep(a), keep(b)
    rows = compare_rows(a, b, alpha=alpha, min_effect=min_effect / 100, max_cv=max_cv / 100)
    ka, kb = set(group_rows(a)), set(group_rows(b))
    if only_changes:
        rows = [c for c in rows if c.status in ("better", "worse")]
    if as_json:
        for c in rows:
            print(json.dumps({"a": selector_a, "b": selector_b, **c.to_dict()}, default=str))
        return
    print(f"# A = {selector_a} ({len(ids_a)} run(s)), B = {selector_b} "
          f"({len({r.run.id for r in b})} run(s))")
    for line in comparison_lines(rows):
        print(line)
    if ka != kb:
        print(f"# not compared: {len(ka - kb)} row(s) only in A, {len(kb - ka)} only in B")


commands = [compare]
