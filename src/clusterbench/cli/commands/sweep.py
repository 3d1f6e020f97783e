"""``clusterbench sweep``: find the bad node. Runs a test on each node alone and on pairs of
nodes, ranks nodes by their results, and names the outliers with the evidence."""

from __future__ import annotations

import shlex
import sys

import click

from clusterbench.cli.options import command_line, db_option, json_option, parse_tags, tag_option
from clusterbench.errors import UsageError
from clusterbench.launch.common import (
    DEFAULT_AGENT,
    bench_command,
    parse_env,
    parse_hosts,
    with_store_args,
)
from clusterbench.records import COMPLETE, FAILED, Measurement, Run, utc_now
from clusterbench.runner import new_group_id
from clusterbench.store.location import for_other_hosts
from clusterbench.sweep import plan
from clusterbench.sweep.analyze import Analysis, SubsetResult, analyze, parse_topology
from clusterbench.sweep.run import SweepConfig, run_sweep
from clusterbench.units import parse_rate

DEFAULT_TEST = ["net", "--no-latency", "--streams", "4", "--duration", "2"]
DEFAULT_METRICS = {"net": "bandwidth", "coll": "busbw"}


def _default_test() -> list[str]:
    from clusterbench.cli import cli

    if "coll" in cli.commands:
        return ["coll", "all_reduce", "-b", "32M", "-e", "32M", "--device", "cpu"]
    return list(DEFAULT_TEST)


@click.command("sweep", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--hosts", required=True, help="Nodes to test: a,b,c or a Slurm hostlist gpu[01-16].")
@click.option("--agent", default=None,
              help="How to run a command on a host: 'AGENT HOST WORD...' (default: ssh).")
@click.option("--agent-exec", is_flag=True,
              help="The agent runs its words as an argument list (srun -N1 -n1 -w, kubectl exec) "
                   "instead of a shell line (ssh): do not quote them.")
@click.option("--pairs", "pair_mode", type=click.Choice(plan.PAIR_MODES), default="all", show_default=True,
              help="Pairs to test: all, a ring (n pairs, for large clusters), or none.")
@click.option("--batch", type=int, default=None, help="Instead of pairs, disjoint groups of this many nodes.")
@click.option("--no-single", is_flag=True, help="Skip the one-node runs.")
@click.option("--metric", default=None, help="Record metric to rank by (default: busbw for coll, bandwidth for net).")
@click.option("--lower-is-better", is_flag=True, help="The metric is a time or latency.")
@click.option("--threshold", type=float, default=3.5, show_default=True, help="Modified z-score limit.")
@click.option("--min-rel-dev", type=float, default=0.05, show_default=True,
              help="Only flag nodes at least this far (relative) from the median.")
@click.option("--topology", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Slurm topology.conf: also rank switches and name the nodes behind a bad one.")
@click.option("--link-rate", default=None, metavar="RATE",
              help="Link rate (e.g. 1gbit, 400Gbps): print each node's pair score as a fraction of it.")
@click.option("--procs-per-node", type=int, default=1, show_default=True)
@click.option("--single-procs", type=int, default=2, show_default=True,
              help="Ranks in a one-node run (a collective needs two).")
@click.option("--env", "envs", multiple=True, metavar="KEY=VALUE", help="Environment for every rank.")
@click.option("--port", type=int, default=29400, show_default=True, help="First rendezvous port.")
@click.option("--join-timeout", type=float, default=60.0, show_default=True,
              help="Seconds for every node of a subset to join.")
@click.option("--timeout", type=float, default=600.0, show_default=True, help="Seconds per subset run.")
@click.option("--rounds", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run every subset N times (alternating the order) and keep each one's best result, "
                   "so a transient slowdown is not taken for a degraded node.")
@json_option
@db_option
@tag_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def sweep(hosts, agent, agent_exec, pair_mode, batch, no_single, metric, lower_is_better, threshold,
          min_rel_dev, topology, link_rate, procs_per_node, single_procs, envs, port, join_timeout, timeout,
          rounds, as_json, db, tags, command) -> None:
    """Find the bad node: the test (after --; default a collective or `net`) on each node alone
    and on pairs of nodes, launched with torchrun on each host through an ssh-like agent.

    Exit code 0: nobody flagged; 1: suspects named (with evidence); 2: bad input."""
    host_list = parse_hosts(hosts)
    if len(host_list) < 2:
        raise UsageError("--hosts: a sweep needs at least 2 nodes")
    test = bench_command(command) if command else _default_test()
    metric = metric or DEFAULT_METRICS.get(test[0])
    if metric is None:
        raise UsageError(f"--metric: no default metric for {test[0]!r}; name the record metric to rank by")
    switches = parse_topology(open(topology).read()) if topology else None
    subsets: list[tuple[str, tuple[str, ...]]] = []
    if not no_single:
        subsets += [("single", (h,)) for h in host_list]
    groups = plan.batches(host_list, batch) if batch else plan.pairs(host_list, pair_mode)
    subsets += [("pair", tuple(g)) for g in groups]
    if not subsets:
        raise UsageError("nothing to run: --no-single with --pairs none")
    run_tags = parse_tags(tags)
    rate = parse_rate(link_rate) if link_rate else None
    sweep_id = new_group_id()
    # Every subset run is stored too, in the same database, tagged with this sweep's id.
    test_argv = with_store_args(test, for_other_hosts(db), {"sweep": sweep_id})
    cfg = SweepConfig(hosts=host_list, command=test_argv, metric=metric,
                      agent=shlex.split(agent) if agent else list(DEFAULT_AGENT), quote=not agent_exec,
                      procs_per_node=procs_per_node, single_procs=single_procs, env=parse_env(envs),
                      port=port, join_timeout=join_timeout, timeout=timeout)
    started = utc_now()

    def progress(r: SubsetResult) -> None:
        what = f"{r.value:.4g} {r.unit}" if r.value is not None else f"FAILED: {r.error}"
        print(f"# {r.stage:<6s} {'+'.join(r.hosts):<40s} {metric} {what}", file=sys.stderr, flush=True)

    results = run_sweep(cfg, subsets, progress, rounds=rounds, higher_is_better=not lower_is_better)
    result = analyze(results, threshold=threshold, min_rel_dev=min_rel_dev,
                     higher_is_better=not lower_is_better, switches=switches)
    run, ms = _to_run(results, result, test, metric, started, {**run_tags, "sweep": sweep_id}, rate)
    from clusterbench.store import Store

    with Store.open(db) as store:
        run.id = store.save_run(run, ms)
    if as_json:
        for m in ms:
            print(m.to_json(run.id))
    else:
        _print(result, results, metric, rate)
    print(f"# run {run.id} ({run.status}) stored", file=sys.stderr)
    raise SystemExit(1 if result.suspects else 0)


def _to_run(results: list[SubsetResult], a: Analysis, test: list[str], metric: str, started: str,
            tags: dict[str, str], rate: float | None) -> tuple[Run, list[Measurement]]:
    unit = next((r.unit for r in results if r.value is not None), "")
    ms: list[Measurement] = []
    for r in results:
        if r.value is not None:
            ms.append(Measurement("sweep", r.stage, r.value, unit,
                                  {"hosts": ",".join(r.hosts), "test": test[0], "test_metric": metric}))
    for stage, scores in (("single", a.single_scores), ("pair", a.pair_scores)):
        for h, v in scores.items():
            p = {"host": h, "stage": stage, "test": test[0], "test_metric": metric,
                 "suspect": any(s.host == h for s in a.suspects)}
            ms.append(Measurement("sweep", "node_score", v, unit, p))
            if rate and unit == "GB/s":
                ms.append(Measurement("sweep", "efficiency", v * 1e9 / rate, "",
                                      {**p, "link_rate": rate / 1e9}))
    hosts = list(dict.fromkeys(h for r in results for h in r.hosts))
    run = Run(benchmark="sweep", command=command_line(), started_at=started, ended_at=utc_now(),
              status=COMPLETE if any(r.value is not None for r in results) else FAILED,
              hosts=hosts, ranks=len(hosts), tags=tags,
              errors=[f"{'+'.join(r.hosts)}: {r.error}" for r in results if r.error],
              meta={"test": test, "metric": metric,
                    "suspects": [{"host": s.host, "reason": s.reason, "evidence": s.evidence}
                                 for s in a.suspects],
                    "switch_scores": a.switch_scores})
    return run, ms


def _print(a: Analysis, results: list[SubsetResult], metric: str, rate: float | None) -> None:
    unit = next((r.unit for r in results if r.value is not None), "")
    eff = bool(rate) and unit == "GB/s"
    print(f"# sweep: {metric} ({unit}) per node; pair score = median of the node's pairs"
          + (f"; efficiency = pair score / link rate {rate / 1e9:g} GB/s" if eff and rate else ""))
    print(f"{'host':>24s} {'single':>12s} {'pairs':>12s} {'efficiency' if eff else '':>10s}  flag")
    suspects = {s.host for s in a.suspects}
    hosts = list(dict.fromkeys(h for r in results for h in r.hosts))
    for h in hosts:
        s = a.single_scores.get(h)
        p = a.pair_scores.get(h)
        print(f"{h:>24s} {s if s is not None else float('nan'):12.4g} "
              f"{p if p is not None else float('nan'):12.4g} "
              f"{(f'{p * 1e9 / rate:10.3f}' if eff and rate and p is not None else ''):>10s}  "
              f"{'SUSPECT' if h in suspects else ''}")
    for sw, v in a.switch_scores.items():
        print(f"# switch {sw}: median pair score {v:.4g} {unit}")
    if not a.suspects:
        print("# no suspect: every node is within the threshold of the median")
    for s in a.suspects:
        print(f"# SUSPECT {s.host}: {s.reason}")
        for e in s.evidence:
            print(f"#   {e}")




commands = [sweep]
