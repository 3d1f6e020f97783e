"""``clusterbench report``'s work: the selected runs read from the database, judged
(``judge.findings``), drawn and written as an HTML page (plots inline), a Markdown summary and
PNG/SVG plots next to it, all at once or none (``outfile.Outputs``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from clusterbench import collector
from clusterbench.errors import UsageError
from clusterbench.judge.findings import Findings, Group, gather
from clusterbench.judge.profiles import Profile
from clusterbench.report.outfile import Outputs, target
from clusterbench.store import Store
from clusterbench.store.runs import loaded

if TYPE_CHECKING:
    from clusterbench.report.figures import FigureEntry

# What a figure left out is said with, as it happens: one line, the page is still written.
Warn = Callable[[str], None]


@dataclass
class Written:
    html: Path
    markdown: Path
    plot_dir: Path
    groups: list[Group]
    findings: Findings
    figures: int                                      # figures drawn into the page
    plots: list[str] = field(default_factory=list)    # plot files written
    figures_skipped: list[dict[str, str]] = field(default_factory=list)   # figures left out, and why

    @property
    def run_ids(self) -> list[int]:
        return [r.id for g in self.groups for r, _ in g.runs]


def page_path(output: str) -> Path:
    """The page ``-o OUTPUT`` names: OUTPUT itself when it ends in .html or .htm, else with
    .html added (``-o nightly`` writes nightly.html); a directory's name, or ``-o`` naming a
    device, is a UsageError."""
    out = Path(output)
    if out.name in ("", ".", ".."):   # '' or a directory's name: nothing to name the page after
        raise UsageError(f"-o {output!r}: give the HTML file's name (report.html)")
    if out.suffix.lower() not in (".html", ".htm"):
        # `-o /dev/null` names a device: the page must not go to /dev/null.html beside it
        if out.exists() and not out.is_file():
            target(out)   # refuses it in one line, saying what it is
        out = out.with_suffix(out.suffix + ".html") if out.suffix else out.with_suffix(".html")
    return out


def write_report(db: str | os.PathLike[str] | None, selectors: Sequence[str], output: str, *,
                 profile: Profile | None = None, link_speed: str | None = None, nodes: int | None = None,
                 title: str | None = None, adjust_by: str, since: str | None = None,
                 warn: Warn = lambda _text: None) -> Written:
    """Write the report of the runs each selector picks in ``db`` (a group each: a line in the
    plots; two groups: an A/B comparison too) to ``output`` (``page_path``), NAME.md and
    NAME_plots/ beside it; ``profile``: validate against it too; ``warn``: told of each figure
    left out (matplotlib missing, or failing on one)."""
    out = page_path(output)
    # Every path is checked before any work and before anything is written; the files are
    # renamed into place together at the end of the block, or none is (report/outfile.py).
    with Outputs() as files:
        files.add(out)
        md = files.add(out.with_suffix(".md"))
        plot_dir = files.directory(out.with_name(out.stem + "_plots"), make=False)
        with Store.open_to_read(db) as store:
            # read-only records: one params dict per params set of a run, not one per record
            groups = [Group(sel, loaded(store, [sel], since, shared=True)) for sel in selectors]
            for g in groups:  # telemetry is plotted too (power, temperature, clocks, utilisation)
                g.telemetry = store.telemetry_by_run([run.id for run, _ in g.runs])
        # a run that measured nothing (it failed before its first row) is reported all the same:
        # its status and errors are what the reader needs (results show prints them too)
        if not any(ms or run.errors or run.status != "complete" for g in groups for run, ms in g.runs):
            raise UsageError("the selected runs have no measurements to report")
        with collector.paused():   # the judgements' groups and rows: no cycle among them
            findings = gather(groups, profile=profile, link=link_speed, nodes=nodes, adjust=adjust_by)
        title = title or f"clusterbench report: {', '.join(selectors)}"
        # matplotlib is imported here, not when the CLI starts: it would add half a second to every command
        from clusterbench.report import plots
        from clusterbench.report.figures import build_figures
        from clusterbench.report.html import render_html
        from clusterbench.report.markdown import render_markdown

        with collector.paused():
            entries = [] if plots.MISSING else build_figures(findings)
        skipped: list[dict[str, str]] = []
        if plots.MISSING:
            warn(f"figures skipped: {plots.MISSING}; the page and the summary have none")
            skipped.append({"figure": "all", "why": plots.MISSING})
        images, written = {}, []
        for e in entries:
            drawn = _draw(e, plots, skipped, warn)
            if drawn is None:
                continue
            files.directory(plot_dir)
            images[e.slug] = plots.data_uri(drawn["png"])
            for fmt in plots.FORMATS:
                path = files.add(plot_dir / f"{e.slug}.{fmt}")
                files.write(path, lambda tmp, data=drawn[fmt]: tmp.write_bytes(data))
                written.append(str(path))
        with collector.paused():
            page = render_html(findings, entries, images, title)
            summary = render_markdown(findings, title)
        files.write(out, lambda tmp: tmp.write_text(page, encoding="utf-8"))
        files.write(md, lambda tmp: tmp.write_text(summary, encoding="utf-8"))
    return Written(html=out, markdown=md, plot_dir=plot_dir, groups=groups, findings=findings,
                   figures=len(images), plots=written, figures_skipped=skipped)


def _draw(entry: FigureEntry, plots: ModuleType, skipped: list[dict[str, str]],
          warn: Warn) -> dict[str, bytes] | None:
    """The entry's figure in every format, or None, said in one line and added to ``skipped``,
    where matplotlib cannot draw it: one figure costs that figure, never the page, the summary
    and the other figures."""
    try:
        return plots.render_all(entry.draw)
    except Exception as e:  # noqa: BLE001 - whatever matplotlib raises: the figure is left out, in one line
        why = f"{type(e).__name__}: {e}"
        warn(f"figure {entry.title!r} skipped: {why}")
        skipped.append({"figure": entry.title, "why": " ".join(why.split())})
        return None
