"""``clusterbench sweep``: find the bad node. Runs a test on each node alone and on pairs of
nodes, ranks nodes by their results, and names the outliers with the evidence."""

from __future__ import annotations

import sys
from collections import deque
from typing import TYPE_CHECKING

import click

from clusterbench.cli.bounds import (
    MAX_NODES,
    MAX_PROCS_PER_NODE,
    MAX_ROUNDS,
    NON_NEGATIVE,
    POSITIVE,
    Count,
)
from clusterbench.cli.fleet import OnFail, junit_option, on_fail_options, take_out
from clusterbench.cli.options import (
    command_line,
    json_option,
    parse_tags,
    quiet_option,
    refuse_together,
    tag_option,
    writer_db_option,
)
from clusterbench.errors import UsageError
from clusterbench.families import FAMILIES, by_command
from clusterbench.launch.common import bench_command, parse_hosts
from clusterbench.printable import printable
from clusterbench.sweep import plan

if TYPE_CHECKING:
    from clusterbench.report import junit as junit_xml
    from clusterbench.sweep.analyze import SubsetResult
    from clusterbench.sweep.report import NodeVerdict

# What a sweep runs (the store, the launcher, the analysis, the report) is imported when it runs:
# `sweep --print` of 1,024 nodes is its plan and the text of it, and loads none of that
# (tests/system/test_sweep.py holds it to that).

# The test after no --; argv_check checks a sweep line as if it were given (its DEFAULT_COMMAND)
DEFAULT_COMMAND = ("coll", "all_reduce", "-b", "32M", "-e", "32M", "--device", "cpu")


@click.command("sweep", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--hosts", required=True,
              help="Nodes to test: a,b,c or a Slurm hostlist such as gpu[01-16] or rack[1-2]-gpu[01-08].")
@click.option("--agent", default=None,
              help="How to run a command on a host: 'AGENT HOST WORD...' (default: ssh).")
@click.option("--agent-exec", is_flag=True,
              help="The agent runs its words as an argument list (srun -N1 -n1 -w, kubectl exec) "
                   "instead of a shell line (ssh): do not quote them.")
@click.option("--pairs", "pair_mode", type=click.Choice(plan.PAIR_MODES), default="auto", show_default=True,
              help=f"Pairs to test: all (n-1 rounds), a ring (2-3 rounds; 1-2 partners a node), random "
                   f"(--partners rounds of random disjoint pairs), or none; auto: all up to "
                   f"{plan.AUTO_ALL_PAIRS_UP_TO} nodes, random above.")
@click.option("--partners", type=Count(1, MAX_NODES), default=plan.DEFAULT_PARTNERS, show_default=True,
              help="--pairs random: distinct partners of every node (3 or more, so that the median of "
                   "its pairs names a degraded node and not its partners).")
@click.option("--seed", type=Count(0), default=plan.DEFAULT_SEED, show_default=True,
              help="--pairs random: the seed of the matchings (the same seed, the same pairs).")
@click.option("--batch", type=Count(2, MAX_NODES), default=None, help="Instead of pairs, disjoint groups of this many nodes.")
@click.option("--parallel", type=Count(1, MAX_NODES), default=None,
              help="At most this many subsets of a round at once (default: the whole round; the subsets "
                   "of a round share no node).")
@click.option("--print", "print_plan", is_flag=True,
              help="Print the plan (its rounds of subsets and the projected time) and run nothing.")
@click.option("--test-seconds", type=POSITIVE, default=30.0, show_default=True,
              help="Seconds one subset's test takes, for the projected time of the plan.")
@click.option("--no-single", is_flag=True, help="Skip the one-node runs.")
@click.option("--metric", default=None, help="Record metric to rank by (default: busbw for coll, bandwidth for net).")
@click.option("--lower-is-better", is_flag=True,
              help="The metric is a time or latency (default: as the test's family declares it).")
@click.option("--threshold", type=POSITIVE, default=3.5, show_default=True, help="Modified z-score limit.")
@click.option("--min-rel-dev", type=NON_NEGATIVE, default=0.05, show_default=True,
              help="Only flag nodes at least this far (relative) from the median.")
@click.option("--topology", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Slurm topology.conf: also rank switches and name the nodes behind a bad one.")
@click.option("--link-rate", default=None, metavar="RATE",
              help="Link rate (e.g. 1gbit, 400Gbps): print each node's pair score as a fraction of it.")
@click.option("--procs-per-node", type=Count(1, MAX_PROCS_PER_NODE), default=1, show_default=True)
@click.option("--single-procs", type=Count(1, MAX_PROCS_PER_NODE), default=2, show_default=True,
              help="Ranks in a one-node run (a collective needs two).")
@click.option("--env", "envs", multiple=True, metavar="KEY=VALUE", help="Environment for every rank.")
@click.option("--port", type=Count(1, 65535 - 500), default=29400, show_default=True,
              help="First rendezvous port (each subset takes one of the next 500).")
@click.option("--join-timeout", type=POSITIVE, default=60.0, show_default=True,
              help="Seconds for every node of a subset to join.")
@click.option("--timeout", type=POSITIVE, default=600.0, show_default=True, help="Seconds per subset run.")
@click.option("--rounds", type=Count(1, MAX_ROUNDS), default=1, show_default=True,
              help="Run every subset N times (alternating the order) and keep each one's best result, "
                   "so a transient slowdown is not taken for a degraded node.")
@junit_option
@on_fail_options
@json_option("the sweep's `measurement` lines and `run` record, a `host` line per node (ok or "
             "suspect, with its scores and evidence), then a `summary`")
@writer_db_option
@tag_option
@quiet_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def sweep(hosts, agent, agent_exec, pair_mode, partners, seed, batch, parallel, print_plan, test_seconds,
          no_single, metric, lower_is_better, threshold, min_rel_dev, topology, link_rate, procs_per_node,
          single_procs, envs, port, join_timeout, timeout, rounds, junit, on_fail: OnFail, as_json, db, tags,
          quiet, command) -> int:
    """Find the bad node: the test (after --; default a collective or `net`) on each node alone
    and on pairs of nodes, launched with torchrun on each host through an ssh-like agent.

    Exit code 0: nobody flagged; 1: suspects named (with evidence); 2: bad input. With
    --on-fail, suspects are drained (Slurm) or tainted (Kubernetes): --hosts must then be the
    scheduler's node names."""
    refuse_together("batch", "pair_mode")
    refuse_together("batch", "partners")
    refuse_together("batch", "seed")
    _random_only(pair_mode, "partners", "seed")
    host_list = parse_hosts(hosts)
    if len(host_list) < 2:
        raise UsageError("--hosts: a sweep needs at least 2 nodes")
    test = bench_command(command) if command else list(DEFAULT_COMMAND)
    family = by_command(test[0])
    if family is None:   # its ranks would record nothing to rank nodes by
        raise UsageError(f"the test after --: {test[0]!r} is not a benchmark command (coll, net, stream, gemm, ...)")
    metric = metric or (family.headline.name if family.headline else None)
    if metric is None:
        raise UsageError(f"--metric: no default metric for {test[0]!r}; name the record metric to rank by")
    # A metric no benchmark records would be missing from every subset's output: each node would
    # fail, be named a suspect and, with --on-fail, be drained.
    if not any(f.metric(metric) for f in FAMILIES):
        raise UsageError(f"--metric {metric!r}: no benchmark records such a metric")
    switches = None
    if topology:
        from clusterbench.sweep.analyze import parse_topology
        from clusterbench.textfile import read_user_text

        switches = parse_topology(read_user_text(topology, "--topology"), topology)
    if topology and not switches:   # nothing to group by: a wrong file, or a pipe that gave nothing
        raise UsageError(f"--topology {topology}: no leaf switch line (SwitchName=NAME Nodes=HOSTLIST)")
    the_plan = plan.build(host_list, single=not no_single, pair_mode=pair_mode, batch=batch, partners=partners,
                          seed=seed, parallel=parallel)
    if not the_plan.launches():
        raise UsageError("nothing to run: --no-single with --pairs none")
    if print_plan:
        return _print_plan(the_plan, host_list, test_seconds, rounds, metric, as_json)
    from clusterbench.cli.argv_check import check_argv
    from clusterbench.launch import drain
    from clusterbench.launch.common import DEFAULT_AGENT, parse_env, split_agent, with_store_args
    from clusterbench.records import utc_now
    from clusterbench.report import junit as junit_xml
    from clusterbench.report import outfile
    from clusterbench.report.jsonl import emit, emit_all, host_line, run_objects, summary_line
    from clusterbench.report.progress import Progress, wanted
    from clusterbench.runner import new_group_id
    from clusterbench.store.location import for_other_hosts
    from clusterbench.store.runs import check_writable, save_run
    from clusterbench.sweep.analyze import analyze
    from clusterbench.sweep.plan_text import plan_summary
    from clusterbench.sweep.report import node_verdicts, table_lines, to_run
    from clusterbench.sweep.run import SweepConfig, run_sweep
    from clusterbench.units import parse_rate

    run_tags = parse_tags(tags)
    rate = parse_rate(link_rate) if link_rate else None
    # "ssh -p" as words, refused when empty or unparsable (an unclosed quote) before any node runs
    agent_argv = split_agent(agent) if agent else list(DEFAULT_AGENT)
    if junit:  # a --junit that cannot be written is a usage error now, not after a stored run
        outfile.target(junit, "--junit")
    if on_fail.action:   # a node name it refuses, or --apply without its tool, is found now, not after the sweep
        drain.plan(on_fail.action, [drain.Verdict(h) for h in host_list], False, need_tool=on_fail.apply)
    sweep_id = new_group_id()
    # Every subset run is stored too, in the same database, tagged with this sweep's id.
    test_argv = with_store_args(test, for_other_hosts(db), {"sweep": sweep_id})
    # The test as every node will run it: a typo there would fail on every node alike, and the
    # sweep would name every node a suspect (and drain them all with --on-fail).
    check_argv([*test_argv, "--json"], "the test after --", values=True)
    # the store opens first: a database this version cannot write fails before any node runs
    check_writable(db)
    cfg = SweepConfig(hosts=host_list, command=test_argv, metric=metric,
                      agent=agent_argv, quote=not agent_exec,
                      procs_per_node=procs_per_node, single_procs=single_procs, env=parse_env(envs),
                      port=port, join_timeout=join_timeout, timeout=timeout)
    started = utc_now()

    total = the_plan.launches() * rounds
    if not quiet:
        print(f"# {plan_summary(the_plan, test_seconds, rounds)}", file=sys.stderr, flush=True)
    bar = Progress(wanted(quiet), f"subset 1/{total}", total=total)

    # launched and not yet reported, oldest first: results come in the plan's order, so the bar
    # names the launch the sweep waits for, and how many more of its round run beside it
    pending: deque[str] = deque()

    def waiting_for() -> str | None:
        if not pending:
            return None
        more = f" (+{len(pending) - 1} at once)" if len(pending) > 1 else ""
        return pending[0] + more

    def launching(k: int, stage: str, hosts: tuple[str, ...]) -> None:
        pending.append(f"subset {k}/{total}: {stage} {'+'.join(hosts)}")
        bar.update(waiting_for())

    def progress(r: SubsetResult) -> None:
        if pending:
            pending.popleft()
        bar.update(waiting_for(), advance=1)
        if quiet:
            return
        what = f"{r.value:.4g} {r.unit}" if r.value is not None else f"FAILED: {r.error}"
        print(printable(f"# {r.stage:<6s} {'+'.join(r.hosts):<40s} {metric} {what}"), file=sys.stderr, flush=True)

    known = family.metric(metric)
    hib = not lower_is_better and (known is None or known.higher_is_better)
    with bar:
        results = run_sweep(cfg, the_plan, progress, rounds=rounds, higher_is_better=hib, on_start=launching,
                            on_note=lambda text: print(printable(f"# note: {text}"), file=sys.stderr, flush=True))
    result = analyze(results, threshold=threshold, min_rel_dev=min_rel_dev, higher_is_better=hib,
                     switches=switches)
    run, ms = to_run(results, result, test, metric, command_line(), started, {**run_tags, "sweep": sweep_id},
                     rate)
    run.id = save_run(db, run, ms)
    code = 1 if result.suspects else 0
    if as_json:
        emit_all(run_objects(run, ms))
        for v in node_verdicts(result, results, host_list):
            emit(host_line(v.host, v.status, **v.fields()))
    else:
        print("\n".join(printable(t) for t in table_lines(result, results, metric, rate)))
    if not quiet:
        print(f"# run {run.id} ({run.status}) stored", file=sys.stderr)
    if junit:
        junit_xml.write(junit, [junit_xml.Suite(f"sweep {test[0]} {metric}",
                                                _cases(node_verdicts(result, results, host_list), metric),
                                                properties={"run": str(run.id), "sweep": sweep_id})])
    suspects = {s.host: [f"sweep {s.reason}: {s.evidence[0] if s.evidence else ''}".rstrip(": ")]
                for s in result.suspects}
    take_out(on_fail, suspects, [h for h in host_list if h not in suspects], as_json)
    if as_json:   # last: a node name --on-fail refuses, or a failed drain, ends the command first
        emit(summary_line("sweep", run=run.id, metric=metric, hosts=len(host_list),
                          suspects=sorted(suspects), exit_code=code))
    return code


def _random_only(pair_mode: str, *names: str) -> None:
    """--partners and --seed shape random matchings: with --pairs all, ring or none they would
    change nothing, and a sweep never silently drops an option it was given."""
    if pair_mode in ("auto", "random"):
        return
    ctx = click.get_current_context()
    for name in names:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
            raise UsageError(f"--{name} is for --pairs random (or auto), not --pairs {pair_mode}")


def _print_plan(the_plan: plan.Plan, hosts: list[str], test_seconds: float, passes: int, metric: str,
                as_json: bool) -> int:
    """--print: the plan, round by round, as it would run; nothing is launched or stored."""
    if as_json:
        from clusterbench.report.jsonl import emit, summary_line

        emit(summary_line("sweep", run=None, metric=metric, hosts=len(hosts), suspects=[], exit_code=0,
                          counts={"rounds": the_plan.round_count(), "launches": the_plan.launches(),
                                  "waves": the_plan.waves(), "passes": passes},
                          seconds=the_plan.projected_seconds({"single": test_seconds, "pair": test_seconds})
                          * passes))
        return 0
    from clusterbench.sweep.plan_text import plan_lines

    out = sys.stdout
    for line in plan_lines(the_plan, test_seconds, passes):
        out.write(printable(line) + "\n")
    out.flush()
    return 0


def _cases(verdicts: list[NodeVerdict], metric: str) -> list[junit_xml.Case]:
    """One test case per node: its scores (single, pair, send, receive); a suspect fails with the
    evidence, its message naming the score that failed."""
    from clusterbench.report import junit as junit_xml

    cases = []
    for v in verdicts:
        if v.status == "ok":
            cases.append(junit_xml.Case(v.host, "clusterbench.sweep", junit_xml.PASS, details="\n".join(v.score_lines())))
        else:
            cases.append(junit_xml.Case(v.host, "clusterbench.sweep", junit_xml.FAIL, v.message(),
                                        "\n".join([f"metric: {metric}", *v.score_lines(), *v.evidence])))
    return cases


commands = [sweep]
