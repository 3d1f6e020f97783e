"""``clusterbench theory``: optimal all_reduce bandwidth over a network, and stored runs vs it."""

from __future__ import annotations

import math

import click

from clusterbench.cli.options import db_option, json_option, since_option
from clusterbench.families.collectives.spec import OPTIMAL_ALGBW, OPTIMAL_BUSBW
from clusterbench.judge.efficiency import best_per_placement, stored_link_efficiency
from clusterbench.judge.theory import THEORY_OP, parse_nodes, theory_table
from clusterbench.printable import printable
from clusterbench.report.jsonl import efficiency_line, emit, measurement_line
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
def theory(link: str | None, nodes_text: str, runs: tuple[str, ...], as_json: bool, since: str | None,
           db: str | None) -> None:
    """Optimal all_reduce algbw B*n/(2(n-1)) for n nodes on links of bandwidth B.

    With hierarchical all_reduce and free intra-node aggregation the inter-node link bounds the
    result; busbw at the optimum equals the link speed.
    """
    # every input is checked, and every run judged, before the first line is printed: a bad
    # --link, selector or link_speed tag is one line on stderr, not a table cut short
    table_link = DEFAULT_LINK if link is None else link
    table = theory_table(table_link, parse_nodes(nodes_text))
    stored = stored_link_efficiency(db, runs, since, link, DEFAULT_LINK) if runs else None
    if as_json:
        for row in table:
            for metric, value in ((OPTIMAL_ALGBW, row.algbw), (OPTIMAL_BUSBW, row.busbw)):
                emit(measurement_line(metric(THEORY_OP, value, {"nodes": row.nodes, "link": table_link}), None))
    else:
        print(f"# optimal all_reduce over {printable(table_link.strip())} links: algbw = B*n/(2(n-1))")
        width = max(6, *(len(str(row.nodes)) for row in table))   # 1000000 nodes is 7 wide
        print(f"{'nodes':>{width}} {'algbw (GB/s)':>13} {'busbw (GB/s)':>13}")
        for row in table:
            print(f"{row.nodes:>{width}} {fixed(row.algbw, 13, _decimals(row.algbw))} "
                  f"{fixed(row.busbw, 13, _decimals(row.busbw))}")
    for run_id, run_link, effs in stored.judged if stored is not None else ():
        if as_json:
            for e in effs:
                emit(efficiency_line(e, run_id, run_link))
            continue
        # each op and placement at its own largest size: one op's largest hid another's smaller one
        for e in best_per_placement(effs):
            print(f"# run {run_id}: {e.label} on {e.nodes} nodes: {_gbs(e.measured_algbw)} GB/s = "
                  f"{e.percent_text(0)} of {_gbs(e.optimal_algbw)} GB/s over {printable(run_link.strip())}")
    if stored is not None and not stored.judged:
        raise stored.nothing_judged()


def _decimals(value: float) -> int:
    """2 decimals, or as many as show 3 significant digits of a value below 0.1: 0.01 GB/s for
    the 0.0125 of a 100 Mbps link was a fifth off, and 0.00 for a 1 bps one said zero."""
    if value == 0 or not math.isfinite(value) or abs(value) >= 0.1:
        return 2
    return min(2 - math.floor(math.log10(abs(value))), 400)


def _gbs(value: float) -> str:
    return compact(value, _decimals(value))


commands = [theory]
