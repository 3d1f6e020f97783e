"""``clusterbench export openmetrics``: the latest stored results as Prometheus gauges in the text
format node_exporter's textfile collector reads (``report/openmetrics.py``)."""

from __future__ import annotations

import click

from clusterbench.cli.options import db_option
from clusterbench.judge.history import current_since
from clusterbench.judge.profiles import load_profile
from clusterbench.report import openmetrics, outfile


@click.group("export")
def export() -> None:
    """Export stored results for other systems (Prometheus)."""


@export.command("openmetrics")
@click.argument("selectors", nargs=-1, metavar="[RUN|SELECTOR]...")
@click.option("--since", default=None, metavar="AGE|DATE", help="Only runs started since then (30d, 2025-01-31).")
@click.option("--window", default=None, metavar="AGE",
              help="Only values of runs started within AGE of now (2d, 12h): what counts as current.")
@click.option("--all", "every_row", is_flag=True,
              help="Every row of each headline metric (all sizes, kernels, precisions), not only the "
                   "headline series (about 30 a GPU node).")
@click.option("--profile", "profile_name", default=None, metavar="NAME|FILE",
              help="Also export each criterion's verdict per host (clusterbench_criterion_passed).")
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False), metavar="FILE",
              help="Write FILE atomically (for node_exporter's --collector.textfile.directory) "
                   "instead of standard output; a symbolic link is written through, a device or FIFO "
                   "refused.")
@db_option
def openmetrics_cmd(selectors: tuple[str, ...], since: str | None, window: str | None, every_row: bool,
                    profile_name: str | None, output: str | None, db: str | None) -> None:
    """Gauges of the latest value of each headline series on every host among the selected runs
    (default: all): each family's headline metric in base units, run timestamps, criterion
    verdicts and preflight checks, in the Prometheus text exposition format."""
    if output is not None:
        outfile.target(output)   # a path that cannot be written is refused before any work
    profile = load_profile(profile_name) if profile_name else None
    gauges = openmetrics.from_store(db, selectors, current_since(since, window), profile, every_row=every_row)
    text = openmetrics.render_text(gauges)
    if output is None:
        click.echo(text, nl=False)
        return
    # The textfile collector may read at any moment: written beside it and renamed over it.
    outfile.write_text(output, text)


commands = [export]
