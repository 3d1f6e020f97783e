"""``clusterbench report``: an HTML page (plots inline), a Markdown summary and PNG/SVG plots."""

from __future__ import annotations

import sys

import click

from clusterbench.cli.bounds import MAX_NODES, Count
from clusterbench.cli.options import NO_NUL, db_option, json_option, since_option
from clusterbench.judge.compare import ADJUSTMENTS, DEFAULT_ADJUST
from clusterbench.judge.profiles import load_profile
from clusterbench.judge.validate import STATUSES
from clusterbench.printable import printable
from clusterbench.report.jsonl import emit, summary_line
from clusterbench.report.write import write_report
from clusterbench.store.selectors import GRAMMAR


@click.command("report", epilog=f"A selector is {GRAMMAR} (see README, 'Selecting runs').")
@click.argument("selectors", nargs=-1, required=True, metavar="SELECTOR...")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="HTML file to write; NAME.md and NAME_plots/ (PNG and SVG) go next to it.")
@click.option("--profile", "profile_name", default=None, metavar="NAME|FILE",
              help="Also validate against this profile and show the verdicts.")
@click.option("--link-speed", default=None, metavar="RATE",
              help="Inter-node link speed (e.g. 100Gbps) for the theoretical line and efficiency.")
@click.option("--nodes", type=Count(2, MAX_NODES), default=None, help="Node count for the theory.")
@click.option("--title", type=NO_NUL, default=None, help="Page title.")
@click.option("--adjust", "adjust_by", type=click.Choice(ADJUSTMENTS), default=DEFAULT_ADJUST, show_default=True,
              help="With two groups: how the A/B rows' p-values are adjusted for testing many rows at once, "
                   "as in compare (fdr, holm or none).")
@json_option("one `summary` line: the files written, the runs, validation counts and degraded hosts")
@since_option
@db_option
def report(selectors: tuple[str, ...], output: str, profile_name: str | None, link_speed: str | None,
           nodes: int | None, title: str | None, adjust_by: str, as_json: bool, since: str | None,
           db: str | None) -> None:
    """Write a report of the selected runs. Each SELECTOR is one group: a line in the plots;
    with exactly two groups the report includes an A/B comparison."""
    profile = load_profile(profile_name) if profile_name else None
    done = write_report(db, selectors, output, profile=profile, link_speed=link_speed, nodes=nodes,
                        title=title, adjust_by=adjust_by, since=since, warn=_skipped)
    verdict = done.findings.verdict()
    if as_json:
        emit(summary_line("report", html=str(done.html), markdown=str(done.markdown), plots=done.plots,
                          figures_skipped=done.figures_skipped, verdict=verdict.status, reasons=verdict.reasons,
                          runs=done.run_ids,
                          validation={s: sum(o.status == s for o in done.findings.outcomes) for s in STATUSES}
                          if profile else None,
                          degraded=[d.to_dict() for d in done.findings.degraded],
                          adjust=adjust_by if len(done.groups) == 2 else None))
    else:
        # a tag in a selector and the -o path are the user's text: escape codes show as text
        print(printable(verdict.line))
        for failed in verdict.failures:
            print(printable(f"  failed: {failed}"))
        print(printable(f"wrote {done.html} ({done.figures} figure(s)), {done.markdown}, "
                        f"{len(done.plots)} plot file(s) in {done.plot_dir}"))


def _skipped(message: str) -> None:
    print(f"clusterbench: warning: {printable(message)}", file=sys.stderr)


commands = [report]
