"""``clusterbench validate``: judge stored runs against a profile (exit 0 pass, 1 fail, 2 usage)."""

from __future__ import annotations

import sys

import click

from clusterbench.cli.fleet import OnFail, junit_option, on_fail_options, take_out
from clusterbench.cli.options import db_option, json_option, since_option
from clusterbench.errors import UsageError
from clusterbench.judge.blame import passing_nodes
from clusterbench.judge.profiles import builtin_profiles, load_profile
from clusterbench.judge.text import outcome_lines
from clusterbench.judge.validate import not_for_this_hardware
from clusterbench.judge.validation import validate_runs
from clusterbench.printable import printable
from clusterbench.report import junit as junit_xml
from clusterbench.report.jsonl import (
    criterion_line,
    efficiency_line,
    emit,
    note_line,
    percent_of_peak_line,
    summary_line,
    warning_line,
)
from clusterbench.store.selectors import GRAMMAR
from clusterbench.units import compact

NO_LINK_ROWS = ("no collective algbw rows on 2+ nodes to compare with the link speed "
                "(give --nodes for single-host runs)")


@click.command("validate", epilog=f"RUN is {GRAMMAR} (see README, 'Selecting runs').")
@click.argument("runs", nargs=-1, metavar="[RUN]...")
@click.option("--profile", "profile_name", required=True, metavar="NAME|FILE",
              help=f"Built-in profile name ({', '.join(builtin_profiles()) or 'none'}) or a YAML file.")
@click.option("--link-speed", default=None, metavar="RATE",
              help="Inter-node link speed (e.g. 100Gbps) to show collective efficiency vs theory.")
@click.option("--nodes", type=click.IntRange(min=2), default=None,
              help="Node count for the theory (default: the run's hosts or its 'nodes' tag).")
@junit_option
@on_fail_options
@json_option("a `criterion` line per criterion, `efficiency` and `percent_of_peak` lines, then a "
             "`summary` with the counts and exit code")
@since_option
@db_option
def validate(runs: tuple[str, ...], profile_name: str, link_speed: str | None, nodes: int | None,
             junit: str | None, on_fail: OnFail, as_json: bool, since: str | None, db: str | None) -> int:
    """Judge RUNs (default: last) against a profile.

    Every criterion ends pass, fail, skipped (no matching measurement, or measurements on other
    hardware than the profile is for) or error. Exit code 0 when nothing failed (runs on other
    hardware included: the profile does not apply to them); 1 when a criterion failed or errored;
    2 for usage errors, including a profile none of whose criteria matched a measurement of the
    runs (nothing was checked).
    With --on-fail, the nodes a failing criterion names are drained (Slurm) or tainted (Kubernetes).
    """
    profile = load_profile(profile_name)
    v = validate_runs(db, profile, runs or ("last",), since, link_speed, nodes)
    outcomes, best = v.outcomes, v.best()
    if as_json:
        for o in outcomes:
            emit(criterion_line(o, profile.name))
        for run, e in best:
            emit(efficiency_line(e, run.id, link_speed or run.tags.get("link_speed", "")))
        for label, d in v.peaks:
            emit(percent_of_peak_line(label, d))
        if link_speed and not v.efficiencies:
            emit(note_line(NO_LINK_ROWS))
        for run_id, text in v.warnings():
            emit(warning_line(text, run_id))
        if v.partial:
            emit(note_line(v.partial))
    else:
        if link_speed and not v.efficiencies:
            print(f"# note: {NO_LINK_ROWS}", file=sys.stderr)
        if v.partial:
            print(f"# note: {v.partial}", file=sys.stderr)
        print(printable(f"# profile {profile.name}: {len(profile.criteria)} criteria on run(s) "
                        f"{', '.join(map(str, v.run_ids))}"))
        if profile.hardware is not None and not_for_this_hardware(v.outcomes):
            print(printable(f"# profile {profile.name} is for {profile.hardware.describe()}: no measurement "
                            "of these runs was made on it, so none is judged"))
        for text in outcome_lines(outcomes):
            print(text)
        for _run, e in best:
            print(f"# efficiency {e.label} on {e.nodes} nodes: "
                  f"algbw {compact(e.measured_algbw)} GB/s = {e.percent_text(0)} of optimal "
                  f"{compact(e.optimal_algbw)} GB/s")
        for label, d in v.peaks:
            print(printable(f"# peak {label}: best {d.value:.4g} {d.unit} = {d.percent_text(1)} of {d.device_name} "
                            f"datasheet {d.peak:.4g} {d.unit}"))
        for run_id, text in v.warnings():
            print(printable(f"# warning: run {run_id}: {text}"))
    if junit:
        junit_xml.write(junit, [junit_xml.validation_suite(profile.name, outcomes, v.run_ids)])
    summary = summary_line("validate", profile=profile.name, runs=v.run_ids, counts=v.counts(),
                           exit_code=v.exit_code)
    if v.nothing_checked:
        if as_json:
            emit(summary)
        raise UsageError(f"no criterion of profile {profile.name} matched any measurement of run(s) "
                         f"{', '.join(map(str, v.run_ids))}")
    nodes_found = v.nodes()
    # before the summary: a node name it refuses, or a drain that fails, ends the command instead
    take_out(on_fail, nodes_found.problems, passing_nodes(nodes_found), as_json, nodes_found.notes)
    if as_json:
        emit(summary)
    return v.exit_code


commands = [validate]
