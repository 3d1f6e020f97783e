"""Run a clusterbench test on node subsets through torchrun (one launch per subset, started on
each host by an ssh-like agent), and read rank 0's ``--json`` records back."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from clusterbench.launch import torchrun as tr
from clusterbench.launch.common import Spec
from clusterbench.sweep.analyze import SubsetResult, no_measurement, pick_value, read_directions


@dataclass
class SweepConfig:
    hosts: list[str]
    command: list[str]                       # clusterbench arguments of the test
    metric: str
    agent: list[str]
    quote: bool = True
    procs_per_node: int = 1
    single_procs: int = 2
    env: dict[str, str] = field(default_factory=dict)
    port: int = 29400
    join_timeout: float = 60.0
    timeout: float = 600.0
    torchrun: list[str] = field(default_factory=lambda: ["torchrun"])
    # a time or latency (False): a value of 0 or less is then no measurement; run_sweep sets it
    higher_is_better: bool = True


def parse_records(stdout: str) -> list[dict]:
    out = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(d, dict) and "metric" in d and "value" in d:
                out.append(d)
    return out


def run_subset(cfg: SweepConfig, hosts: Sequence[str], stage: str, index: int) -> SubsetResult:
    procs = cfg.single_procs if stage == "single" else cfg.procs_per_node
    spec = Spec(nodes=len(hosts), procs_per_node=procs, env=dict(cfg.env),
                command=[*cfg.command, "--json"])
    port = cfg.port + index % 500
    result = tr.run_torchrun_on_hosts(list(hosts), cfg.agent, spec, port=port,
                                      rdzv_id=f"sweep{index}", join_timeout=cfg.join_timeout,
                                      timeout=cfg.timeout, torchrun=cfg.torchrun, quote=cfg.quote)
    problem = tr.diagnose(result, tr.endpoint_of(hosts[0], port), cfg.join_timeout)
    records = parse_records(result.stdout)
    picked = pick_value(records, cfg.metric)
    if problem is not None:
        return SubsetResult(tuple(hosts), stage, None, error=problem,
                            unreachable=tuple(h for h in result.hosts if result.returncodes[h] == tr.UNREACHABLE))
    if picked is None:
        return SubsetResult(tuple(hosts), stage, None,
                            error=f"no {cfg.metric!r} record in the output of rank 0")
    invalid = no_measurement(records, cfg.metric, hosts, cfg.higher_is_better)
    if invalid is not None:   # a latency of 0 would rank its node the best of all
        return SubsetResult(tuple(hosts), stage, None, error=invalid)
    # a one-node run's ranks share their host: no direction between nodes to tell
    ways = read_directions(records, cfg.metric, hosts) if stage != "single" else None
    return SubsetResult(tuple(hosts), stage, picked[0], picked[1],
                        directions=ways.values if ways else {}, unmatched=ways.unmatched if ways else ())


def _better(kept: SubsetResult | None, new: SubsetResult, higher_is_better: bool) -> SubsetResult:
    if kept is None or kept.value is None:
        return new
    if new.value is None:
        return kept
    wins = new.value > kept.value if higher_is_better else new.value < kept.value
    return new if wins else kept


def run_sweep(cfg: SweepConfig, subsets: Sequence[tuple[str, tuple[str, ...]]],
              on_result: Callable[[SubsetResult], None] | None = None, *, rounds: int = 1,
              higher_is_better: bool = True,
              on_start: Callable[[int, str, tuple[str, ...]], None] | None = None,
              on_note: Callable[[str], None] | None = None) -> list[SubsetResult]:
    """Run every subset ``rounds`` times, in reverse order on odd rounds, and keep each subset's
    best result: a transient (a busy host, the first launch after boot) costs a subset one round,
    not its score, while a degraded node is slow in every round. ``on_start(k, stage, hosts)``
    is told before the k-th launch (from 1), ``on_result`` after it. A round in which every
    subset failed with a host the agent could not reach is the last (``on_note`` says so)."""
    cfg = dataclasses.replace(cfg, higher_is_better=higher_is_better)
    best: dict[int, SubsetResult] = {}
    for rnd in range(rounds):
        order = list(enumerate(subsets))
        if rnd % 2:
            order.reverse()
        cut_off = True   # every subset so far failed with a host the agent could not reach
        for k, (i, (stage, hosts)) in enumerate(order, 1):
            if on_start is not None:
                on_start(rnd * len(subsets) + k, stage, hosts)
            r = run_subset(cfg, hosts, stage, rnd * len(subsets) + i)
            best[i] = _better(best.get(i), r, higher_is_better)
            cut_off = cut_off and r.value is None and bool(r.unreachable)
            if on_result is not None:
                on_result(r)
        if cut_off and rnd + 1 < rounds:
            # no subset reached all its hosts: another round only repeats the agent's failures,
            # for as many rounds as --rounds says, and ranks nothing
            if on_note is not None:
                on_note(f"no subset could reach its hosts in round {rnd + 1} of {rounds}: "
                        "the other rounds were not run")
            break
    return [best[i] for i in range(len(subsets))]
