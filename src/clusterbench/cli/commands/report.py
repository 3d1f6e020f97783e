"""``clusterbench report``: an HTML page (plots inline), a Markdown summary and PNG/SVG plots."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import click

from clusterbench.cli.options import db_option, json_option, since_option
from clusterbench.errors import UsageError
from clusterbench.judge.compare import ADJUSTMENTS, DEFAULT_ADJUST
from clusterbench.judge.findings import Group, gather
from clusterbench.judge.profiles import load_profile
from clusterbench.judge.select import load_runs
from clusterbench.judge.validate import STATUSES
from clusterbench.printable import printable
from clusterbench.report.jsonl import emit, summary_line
from clusterbench.report.outfile import Outputs, target
from clusterbench.store import Store
from clusterbench.store.selectors import GRAMMAR

if TYPE_CHECKING:
    from clusterbench.report.figures import FigureEntry


@click.command("report", epilog=f"A selector is {GRAMMAR} (see README, 'Selecting runs').")
@click.argument("selectors", nargs=-1, required=True, metavar="SELECTOR...")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="HTML file to write; NAME.md and NAME_plots/ (PNG and SVG) go next to it.")
@click.option("--profile", "profile_name", default=None, metavar="NAME|FILE",
              help="Also validate against this profile and show the verdicts.")
@click.option("--link-speed", default=None, metavar="RATE",
              help="Inter-node link speed (e.g. 100Gbps) for the theoretical line and efficiency.")
@click.option("--nodes", type=click.IntRange(min=2), default=None, help="Node count for the theory.")
@click.option("--title", default=None, help="Page title.")
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
    out = Path(output)
    if out.name in ("", ".", ".."):   # '' or a directory's name: nothing to name the page after
        raise UsageError(f"-o {output!r}: give the HTML file's name (report.html)")
    if out.suffix.lower() not in (".html", ".htm"):
        # `-o /dev/null` names a device: the page must not go to /dev/null.html beside it
        if out.exists() and not out.is_file():
            target(out)   # refuses it in one line, saying what it is
        out = out.with_suffix(out.suffix + ".html") if out.suffix else out.with_suffix(".html")
    # Every path is checked before any work and before anything is written; the files are
    # renamed into place together at the end of the block, or none is (report/outfile.py).
    with Outputs() as files:
        files.add(out)
        md = files.add(out.with_suffix(".md"))
        plot_dir = files.directory(out.with_name(out.stem + "_plots"), make=False)
        with Store.open_to_read(db) as store:
            groups = [Group(sel, load_runs(store, [sel], since)) for sel in selectors]
            for g in groups:  # telemetry is plotted too (power, temperature, clocks, utilisation)
                g.telemetry = store.telemetry_by_run([run.id for run, _ in g.runs])
        # a run that measured nothing (it failed before its first row) is reported all the same:
        # its status and errors are what the reader needs (results show prints them too)
        if not any(ms or run.errors or run.status != "complete" for g in groups for run, ms in g.runs):
            raise UsageError("the selected runs have no measurements to report")
        findings = gather(groups, profile=profile, link=link_speed, nodes=nodes, adjust=adjust_by)
        title = title or f"clusterbench report: {', '.join(selectors)}"
        # matplotlib is imported here, not when the CLI starts: it would add half a second to every command
        from clusterbench.report import plots
        from clusterbench.report.figures import build_figures
        from clusterbench.report.html import render_html
        from clusterbench.report.markdown import render_markdown

        entries = [] if plots.MISSING else build_figures(findings)
        skipped: list[dict[str, str]] = []   # figures left out, and why (the --json summary says so too)
        if plots.MISSING:
            _skipped(f"figures skipped: {plots.MISSING}; the page and the summary have none")
            skipped.append({"figure": "all", "why": plots.MISSING})
        images, written = {}, []
        for e in entries:
            drawn = _draw(e, plots, skipped)
            if drawn is None:
                continue
            files.directory(plot_dir)
            images[e.slug] = plots.data_uri(drawn["png"])
            for fmt in plots.FORMATS:
                path = files.add(plot_dir / f"{e.slug}.{fmt}")
                files.write(path, lambda tmp, data=drawn[fmt]: tmp.write_bytes(data))
                written.append(str(path))
        page = render_html(findings, entries, images, title)
        files.write(out, lambda tmp: tmp.write_text(page, encoding="utf-8"))
        summary = render_markdown(findings, title)
        files.write(md, lambda tmp: tmp.write_text(summary, encoding="utf-8"))
    verdict = findings.verdict()
    if as_json:
        emit(summary_line("report", html=str(out), markdown=str(md), plots=written, figures_skipped=skipped,
                          verdict=verdict.status, reasons=verdict.reasons,
                          runs=[r.id for g in groups for r, _ in g.runs],
                          validation={s: sum(o.status == s for o in findings.outcomes) for s in STATUSES}
                          if profile else None,
                          degraded=[d.to_dict() for d in findings.degraded],
                          adjust=adjust_by if len(groups) == 2 else None))
    else:
        # a tag in a selector and the -o path are the user's text: escape codes show as text
        print(printable(verdict.line))
        print(printable(f"wrote {out} ({len(images)} figure(s)), {md}, {len(written)} plot file(s) in {plot_dir}"))


def _skipped(message: str) -> None:
    print(f"clusterbench: warning: {printable(message)}", file=sys.stderr)


def _draw(entry: FigureEntry, plots: ModuleType, skipped: list[dict[str, str]]) -> dict[str, bytes] | None:
    """The entry's figure in every format, or None, said in one line and added to ``skipped``,
    where matplotlib cannot draw it: one figure costs that figure, never the page, the summary
    and the other figures."""
    try:
        return plots.render_all(entry.draw)
    except Exception as e:  # noqa: BLE001 - whatever matplotlib raises: the figure is left out, in one line
        why = f"{type(e).__name__}: {e}"
        _skipped(f"figure {entry.title!r} skipped: {why}")
        skipped.append({"figure": entry.title, "why": " ".join(why.split())})
        return None


commands = [report]
