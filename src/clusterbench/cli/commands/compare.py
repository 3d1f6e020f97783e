"""``clusterbench compare SEL_A SEL_B``: A/B comparison of two groups of runs."""

from __future__ import annotations

import sys

import click

from clusterbench.choices import parse_choices
from clusterbench.cli.bounds import NON_NEGATIVE, FiniteFloat
from clusterbench.cli.options import db_option, json_option, since_option
from clusterbench.judge.ab import compare_selections
from clusterbench.judge.compare import ADJUSTMENTS, BETTER, DEFAULT_ADJUST, NOISY, WORSE
from clusterbench.judge.text import comparison_lines
from clusterbench.printable import printable
from clusterbench.report.jsonl import comparison_line, emit, note_line, summary_line
from clusterbench.store.selectors import GRAMMAR

# --fail-on: which verdicts make the exit code 1; "any" is every verdict that is not "same"
# (rows with too few values to test are never a failure: nothing was judged).
FAIL_ON = (WORSE, NOISY, BETTER, "any")


def _fail_on(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    names = parse_choices(text, FAIL_ON, "--fail-on value")
    return (WORSE, NOISY, BETTER) if "any" in names else names


@click.command("compare", epilog=f"A selector is {GRAMMAR} (see README, 'Selecting runs').")
@click.argument("selector_a")
@click.argument("selector_b")
@click.option("--benchmark", default=None, help="Only rows of this benchmark (e.g. all_reduce).")
@click.option("--metric", default=None, help="Only this metric (e.g. busbw).")
@click.option("--alpha", type=FiniteFloat(0, True, 1, True), default=0.05,
              show_default=True, help="Significance level of Welch's t-test.")
@click.option("--min-effect", type=NON_NEGATIVE, default=2.0, show_default=True,
              help="Smallest change in percent worth reporting as a difference.")
@click.option("--max-cv", type=NON_NEGATIVE, default=10.0, show_default=True,
              help="Rows whose coefficient of variation exceeds this percent are 'noisy', never a regression.")
@click.option("--adjust", "adjust_by", type=click.Choice(ADJUSTMENTS), default=DEFAULT_ADJUST, show_default=True,
              help="Correct the p-values for testing many rows at once: fdr (Benjamini-Hochberg, the share "
                   "of false rows among those called changed), holm (the chance of any false row) or none.")
@click.option("--only-changes", is_flag=True, help="Print only rows judged better or worse.")
@click.option("--fail-on", "fail_on", default=None, metavar="worse|noisy|better|any",
              help="Exit 1 when a row is judged so (a comma list; any: worse, noisy or better). "
                   "Default: exit 0 whatever the verdicts.")
@json_option("a `comparison` line per row, then a `summary` with the counts per verdict and the exit code")
@since_option
@db_option
def compare(selector_a: str, selector_b: str, benchmark: str | None, metric: str | None,
            alpha: float, min_effect: float, max_cv: float, adjust_by: str, only_changes: bool, fail_on: str | None,
            as_json: bool, since: str | None, db: str | None) -> int:
    """Compare group A with group B, row by row (benchmark, metric, params).

    Several runs on a side (e.g. from --repeat) form a sample: n, mean, sd, CV, delta, a 95%
    confidence interval of the difference and Welch's t-test p-value, adjusted for the number
    of measurements compared (--adjust), with a verdict per row.
    Exit code 0 (or, with --fail-on, 1 when a row has such a verdict); 2 for usage errors.
    """
    failing = _fail_on(fail_on)
    ab = compare_selections(db, selector_a, selector_b, since, benchmark, metric, alpha=alpha,
                            min_effect=min_effect / 100, max_cv=max_cv / 100, adjust_by=adjust_by)
    counts = ab.counts()
    code = 1 if any(counts[s] for s in failing) else 0
    rows = ab.changes() if only_changes else ab.rows
    if as_json:
        if ab.partial:
            emit(note_line(ab.partial))
        for c in rows:
            emit(comparison_line(c, selector_a, selector_b))
        emit(summary_line("compare", a=selector_a, b=selector_b, runs_a=ab.runs_a, runs_b=ab.runs_b,
                          counts=counts, only_in_a=ab.only_in_a, only_in_b=ab.only_in_b,
                          fail_on=list(failing), adjust=adjust_by, family=ab.family, exit_code=code))
        return code
    if ab.partial:
        print(f"# note: {ab.partial}", file=sys.stderr)
    print(printable(f"# A = {selector_a} ({len(ab.runs_a)} run(s)), B = {selector_b} ({len(ab.runs_b)} run(s))"))
    for text in comparison_lines(rows, adjust_by, ab.family):
        print(text)
    if ab.only_in_a or ab.only_in_b:
        print(f"# not compared: {ab.only_in_a} row(s) only in A, {ab.only_in_b} only in B")
    if code:
        bad = ", ".join(f"{counts[s]} {s}" for s in failing if counts[s])
        print(f"# --fail-on {fail_on}: {bad}")
    return code


commands = [compare]
