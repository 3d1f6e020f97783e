"""``clusterbench validate``: judge stored runs against a profile (exit 0 pass, 1 fail, 2 usage)."""

from __future__ import annotations

import json
import sys

import click

from clusterbench.cli.options import db_option, json_option
from clusterbench.errors import UsageError
from clusterbench.judge.efficiency import (
    best_per_placement,
    best_percent_of_peak,
    run_link_efficiency,
)
from clusterbench.judge.profiles import builtin_profiles, load_profile
from clusterbench.judge.select import load_runs, rows_of
from clusterbench.judge.text import outcome_lines
from clusterbench.judge.tool_checks import tool_outcomes
from clusterbench.judge.validate import evaluate, exit_code
from clusterbench.records import WARNINGS
from clusterbench.store import Store


@click.command("validate")
@click.argument("runs", nargs=-1, metavar="[RUN|SELECTOR]...")
@click.option("--profile", "profile_name", required=True, metavar="NAME|FILE",
              help=f"Built-in profile name ({', '.join(builtin_profiles()) or 'none'}) or a YAML file.")
@click.option("--link-speed", default=None, metavar="RATE",
              help="Inter-node link speed (e.g. 100Gbps) to show collective efficiency vs theory.")
@click.option("--nodes", type=click.IntRange(min=2), default=None,
              help="Node count for the theory (default: the run's hosts or its 'nodes' tag).")
@json_option
@db_option
def validate(runs: tuple[str, ...], profile_name: str, link_speed: str | None, nodes: int | None,
             as_json: bool, db: str | None) -> int:
    """Judge RUNs (ids, 'last' (default) or tag filters like env=prod) against a profile.

    Every criterion ends pass, fail, skipped (no matching measurement) or error. Exit code 0
    when nothing failed, 1 when a criterion failed or errored or nothing could be checked.
    """
    profile = load_profile(profile_name)
    with Store.open(db) as store:
        loaded = load_runs(store, runs or ("last",))
    judged = evaluate(profile, rows_of(loaded))
    outcomes = judged + tool_outcomes(loaded)   # the tools' own checks (nccl-tests' error tolerance)
    effs = [e for run, ms in loaded for e in run_link_efficiency(run, ms, link_speed, nodes)]
    if link_speed and not effs:
        print("# note: no collective algbw rows on 2+ nodes to compare with the link speed "
              "(give --nodes for single-host runs)", file=sys.stderr)
    run_ids = [r.id for r, _ in loaded]
    peaks = best_percent_of_peak(loaded)
    if as_json:
        for o in outcomes:
            print(json.dumps({"kind": "criterion", "profile": profile.name, **o.to_dict()}, default=str))
        for e in best_per_placement(effs):
            print(json.dumps({"kind": "efficiency", "benchmark": e.benchmark, "bytes": e.bytes,
                              "placement": e.placement, "nodes": e.nodes, "algbw": e.measured_algbw,
                              "optimal_algbw": e.optimal_algbw, "efficiency": e.ratio}))
        for label, d in peaks:
            print(json.dumps({"kind": "percent_of_peak", "what": label, "device_name": d.device_name,
                              "value": d.value, "unit": d.unit, "peak": d.peak, "percent": d.percent}))
        for run, _ms in loaded:
            for text in run.meta.get(WARNINGS) or []:
                print(json.dumps({"kind": "warning", "run": run.id, "message": text}))
    else:
        print(f"# profile {profile.name}: {len(profile.criteria)} criteria on run(s) "
              f"{', '.join(map(str, run_ids))}")
        for line in outcome_lines(outcomes):
            print(line)
        for e in best_per_placement(effs):
            print(f"# efficiency {e.benchmark} {e.placement}-place {e.bytes} B on {e.nodes} nodes: "
                  f"algbw {e.measured_algbw:.2f} GB/s = {e.ratio * 100:.0f}% of optimal "
                  f"{e.optimal_algbw:.2f} GB/s")
        for label, d in peaks:
            print(f"# peak {label}: best {d.value:.4g} {d.unit} = {d.percent:.1f}% of {d.device_name} "
                  f"datasheet {d.peak:.4g} {d.unit}")
        for run, _ms in loaded:
            for text in run.meta.get(WARNINGS) or []:
                print(f"# warning: run {run.id}: {text}")
    if all(o.status == "skipped" for o in judged):
        raise UsageError(f"no criterion of profile {profile.name} matched any measurement of run(s) "
                         f"{', '.join(map(str, run_ids))}")
    return exit_code(outcomes)


commands = [validate]
