"""``clusterbench theory``: optimal all_reduce bandwidth over a network, and stored runs vs it."""

from __future__ import annotations

import click

from clusterbench.cli.options import db_option, json_option, since_option
from clusterbench.errors import UsageError
from clusterbench.families.collectives.spec import OPTIMAL_ALGBW, OPTIMAL_BUSBW
from clusterbench.judge.efficiency import run_link_efficiency
from clusterbench.judge.select import load_runs
from clusterbench.judge.theory import THEORY_OP, parse_nodes, theory_table
from clusterbench.report.jsonl import efficiency_line, emit, measurement_line
from clusterbench.store import Store
from clusterbench.store.selectors import GRAMMAR
from clusterbench.units import compact, fixed

DEFAULT_LINK = "100Gbps"


@click.command("theory", epilog=f"RUN is {GRAMMAR} (see README, 'Selecting runs').")
@click.option("--link", "--link-speed", "link", default=None, metavar="RATE",
              help="Per-node link bandwidth (100Gbps, 400gbit, 50GB/s). Default: 100Gbps for the "
                   "table; for --run, each run's link_speed tag, else 100Gbps.")
@click.option("--nodes", "nodes_text", default="2,4,8,16,24,32", show_default=True,
              help="Comma-separated node counts.")
@click.option("--run", "runs", multiple=True, metavar="RUN",
              help="Also show the efficiency (measured/optimal algbw) of stored collective runs (repeatable).")
@json_option("the table as `measurement` lines (optimal_algbw, optimal_busbw; run null), then an "
             "`efficiency` line per row of each --run")
@since_option
@db_option
def theory(link: str, nodes_text: str, runs: tuple[str, ...], as_json: bool, since: str | None,
           db: str | None) -> None:
    """Optimal all_reduce algbw B*n/(2(n-1)) for n nodes on links of bandwidth B.

    With hierarchical all_reduce and free intra-node aggregation the inter-node link bounds the
    result; busbw at the optimum equals the link speed.
    """
    table_link = link or DEFAULT_LINK
    table = theory_table(table_link, parse_nodes(nodes_text))
    if as_json:
        for row in table:
            for metric, value in ((OPTIMAL_ALGBW, row.algbw), (OPTIMAL_BUSBW, row.busbw)):
                emit(measurement_line(metric(THEORY_OP, value, {"nodes": row.nodes, "link": table_link}), None))
    else:
        print(f"# optimal all_reduce over {table_link} links: algbw = B*n/(2(n-1))")
        print(f"{'nodes':>6} {'algbw (GB/s)':>13} {'busbw (GB/s)':>13}")
        for row in table:
            print(f"{row.nodes:>6} {fixed(row.algbw, 13, 2)} {fixed(row.busbw, 13, 2)}")
    if not runs:
        return
    with Store.open_to_read(db) as store:
        loaded = load_runs(store, runs, since)
    found = False
    for run, ms in loaded:
        run_link = link or run.tags.get("link_speed") or DEFAULT_LINK
        effs = run_link_efficiency(run, ms, run_link)
        if not effs:
            continue
        found = True
        for e in effs:
            if as_json:
                emit(efficiency_line(e, run.id, run_link))
        if not as_json:
            largest = max(e.bytes for e in effs)
            for e in (e for e in effs if e.bytes == largest):
                print(f"# run {run.id}: {e.label} on {e.nodes} nodes: "
                      f"{compact(e.measured_algbw)} GB/s = {e.percent_text(0)} of "
                      f"{compact(e.optimal_algbw)} GB/s"
                      f" over {run_link}")
    if not found:
        raise UsageError("the selected runs have no collective algbw rows on 2 or more hosts")


commands = [theory]
