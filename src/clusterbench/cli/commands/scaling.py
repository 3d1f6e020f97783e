"""``clusterbench scaling``: the scaling table of tagged training (or DDP) runs."""

from __future__ import annotations

import math

import click

from clusterbench.cli.options import db_option, json_option, since_option
from clusterbench.families import metric_of
from clusterbench.families.workloads.spec import SAMPLES_PER_S, TRAIN
from clusterbench.judge import scaling as sc
from clusterbench.printable import printable
from clusterbench.report.jsonl import emit, measurement_line, note_line
from clusterbench.store.selectors import GRAMMAR


@click.command("scaling", epilog=f"A selector is {GRAMMAR} (see README, 'Selecting runs').")
@click.argument("selectors", nargs=-1, required=True, metavar="SELECTOR...")
@click.option("--baseline", default=None, metavar="SELECTOR",
              help="Runs whose smallest node count is the baseline of every group (e.g. the 1-node run).")
@click.option("--benchmark", default=TRAIN, show_default=True, help="Workload whose runs to scale.")
@click.option("--metric", default=SAMPLES_PER_S.name, show_default=True, help="Overall throughput metric.")
@click.option("--by", type=click.Choice(["nodes", "ranks"]), default="nodes", show_default=True,
              help="Count distinct hosts, or ranks (one host emulating nodes).")
@json_option("`measurement` lines (run null: derived, not stored) of each group's `speedup` and "
             "`scaling_efficiency` per node count; a `note` for a figure past the largest float")
@since_option
@db_option
def scaling(selectors: tuple[str, ...], baseline: str | None, benchmark: str, metric: str, by: str,
            as_json: bool, since: str | None, db: str | None) -> int:
    """Scaling table: throughput at n nodes / (n x throughput at the smallest count).

    Each SELECTOR (e.g. tags such as network=vnic) is one group, e.g.
    `clusterbench scaling network=pod network=vnic --baseline nodes=1`.
    """
    rows = sc.stored_scaling(db, selectors, baseline, benchmark, metric, by, since)
    if as_json:
        for r in rows:
            for m, cell in zip(r.measurements(benchmark, metric), r.cells(), strict=True):
                if math.isfinite(m.value):
                    emit(measurement_line(m, None))
                else:
                    # past the largest float: a `measurement` needs a number, and null is none
                    emit(note_line(f"{m.metric} of {r.group} at {r.nodes} {by} is {cell.strip()}, past the "
                                   "largest float: no measurement line", None))
        return 0
    known = metric_of(benchmark, metric)
    for line in sc.format_table(rows, known.unit if known and known.unit else metric):
        print(printable(line))
    return 0


commands = [scaling]
