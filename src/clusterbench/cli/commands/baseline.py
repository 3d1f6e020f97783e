"""``clusterbench baseline create``: write a validation profile derived from known-good runs."""

from __future__ import annotations

import os
import sys

import click

from clusterbench import collector
from clusterbench.cli.bounds import POSITIVE
from clusterbench.cli.options import db_option, json_option, since_option
from clusterbench.errors import UsageError
from clusterbench.judge.baseline import create_baseline, read_known_good
from clusterbench.judge.profiles import dump_profile
from clusterbench.judge.select import rows_of
from clusterbench.printable import printable
from clusterbench.report.jsonl import emit, summary_line
from clusterbench.report.outfile import write_text
from clusterbench.store.selectors import GRAMMAR
from clusterbench.units import compact, id_ranges


@click.group("baseline")
def baseline() -> None:
    """Validation profiles derived from known-good runs."""


@baseline.command("create", epilog=f"RUN is {GRAMMAR} (see README, 'Selecting runs').")
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Profile YAML to write (use it with validate --profile FILE).")
@click.option("--name", default=None, help="Profile name (default: the output file's stem).")
@click.option("--pct", type=POSITIVE, default=90.0, show_default=True,
              help="Pass bound as percent of the median, at most 100 (>= pct% for bandwidths, <= 200-pct% for times).")
@click.option("--metric", "metrics", multiple=True,
              help="Metrics to include (repeatable; default busbw, bandwidth, tflops).")
@click.option("--min-bytes", default="1M", show_default=True,
              help="Leave out rows of a smaller message or transfer size (latency-bound, noisy).")
@json_option("one `summary` line: the profile written, its criteria, the runs, and the runs and "
             "rows left out")
@since_option
@db_option
def create(runs: tuple[str, ...], output: str, name: str | None, pct: float, metrics: tuple[str, ...],
           min_bytes: str, as_json: bool, since: str | None, db: str | None) -> None:
    """Derive a profile from RUNs: per row, PCT% of the median over the runs, outlier runs left out."""
    from clusterbench.units import parse_size

    if name is not None and (not name.strip() or not name.isprintable()):
        # an empty name fell back to the file's stem without a word; a control character would
        # reach every validate report and JUnit file that names the profile
        raise UsageError(f"--name {printable(repr(name))}: give a profile name of printable characters, "
                         "or leave --name out for the output file's stem")
    good = read_known_good(db, runs, since, metrics)
    loaded = good.loaded
    for r in good.left_out:
        print(printable(f"# left out run {r.id}: its status is {r.status}"), file=sys.stderr)
    stem = os.path.splitext(os.path.basename(output))[0]
    with collector.paused():   # a fleet's rows and their groups: no cycle among them
        result = create_baseline(rows_of(loaded), name=name or stem, pct=pct, metrics=metrics,
                                 min_bytes=parse_size(min_bytes, "--min-bytes"),
                                 run_ids=[int(r.id or 0) for r, _ in loaded], devices=good.devices)
    text = dump_profile(result.profile)
    write_text(output, text)   # whole or not at all; never over a device or directory
    for z in result.not_positive:   # not in the summary line's fields: said here with --json too
        print(printable(f"# skipped {z['row']}: median {z['median']:.4g} over {z['runs']} run(s), "
                        "no bound is a percentage of it"), file=sys.stderr)
    if as_json:
        emit(summary_line("baseline create", profile=output, name=result.profile.name,
                          criteria=len(result.profile.criteria), runs=[r.id for r, _ in loaded],
                          left_out=result.left_out, noisy=result.noisy))
        return
    # a fleet's night is a thousand runs: their ids as ranges (99001-100000), not a thousand numbers
    print(f"wrote {output}: {len(result.profile.criteria)} criteria from run(s) "
          f"{id_ranges([int(r.id or 0) for r, _ in loaded])}")
    by_run: dict[int, list[dict]] = {}
    for lo in result.left_out:
        by_run.setdefault(lo["run"], []).append(lo)
    for run, rows in by_run.items():
        # a degraded host is left out of dozens of rows: one line a run, its worst row shown
        worst = max(rows, key=lambda lo: abs(lo["z"]))
        many = f" for {len(rows)} rows, the worst {worst['row']}" if len(rows) > 1 else f" for {worst['row']}"
        # a deviation or z-score off a median near zero can be 1e300 or more: compact, not 300 digits
        print(printable(f"# left out run {run}{many}: {worst['value']:.4g} is "
                        f"{compact(worst['rel_dev'] * 100, 1, sign=True)}% vs median {worst['median']:.4g} "
                        f"(modified z {compact(worst['z'], 1, sign=True)})"),
              file=sys.stderr)
    for n in result.noisy:
        print(printable(f"# skipped {n['row']}: runs disagree (CV {compact(n['cv'] * 100, 0)}% over "
                        f"{n['runs']} runs)"),
              file=sys.stderr)


commands = [baseline]
