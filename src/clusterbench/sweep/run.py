"""Run a clusterbench test on node subsets through torchrun (one launch per subset, started on
each host by an ssh-like agent), and read rank 0's ``--json`` records back."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from clusterbench.launch import torchrun as tr
from clusterbench.launch.common import Spec
from clusterbench.sweep import plan
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


def run_sweep(cfg: SweepConfig, subsets: Sequence[tuple[str, tuple[str, ...]]] | plan.Plan,
              on_result: Callable[[SubsetResult], None] | None = None, *, rounds: int = 1,
              higher_is_better: bool = True,
              on_start: Callable[[int, str, tuple[str, ...]], None] | None = None,
              on_note: Callable[[str], None] | None = None) -> list[SubsetResult]:
    """Run every subset of the plan ``rounds`` times, the plan backwards on odd passes, and keep
    each subset's best result: a transient (a busy host, the first launch after boot) costs a
    subset one pass, not its score, while a degraded node is slow in every pass. The subsets of a
    plan's round run at once (at most ``plan.parallel``), each in a thread of its own; a list of
    subsets is run one at a time. ``on_start(k, stage, hosts)`` is told before the k-th launch
    (from 1), ``on_result`` after it, both in this thread and in the round's order, so that what
    a sweep prints does not depend on which launch of a round ended first. The results are in
    the plan's order (the first pass's). A pass in which every subset failed with a host the agent
    could not reach is the last (``on_note`` says so)."""
    cfg = dataclasses.replace(cfg, higher_is_better=higher_is_better)
    the_plan = subsets if isinstance(subsets, plan.Plan) else plan.listed(subsets)
    per_pass = the_plan.launches()
    best: list[SubsetResult | None] = [None] * per_pass
    # the place of each round's first subset in the plan's order, to key results across passes
    starts = the_plan.round_starts()
    launched = 0
    try:
        for p in range(rounds):
            cut_off = True   # every subset so far failed with a host the agent could not reach
            for rnd in the_plan.rounds(reverse=p % 2 == 1):
                base = starts[rnd.number - 1]
                n = len(rnd.subsets)
                # a reversed round lists its subsets backwards: their places in the plan order
                places = [base + (n - 1 - k if p % 2 else k) for k in range(n)]
                jobs = [(places[k], rnd.stage, rnd.subsets[k]) for k in range(n)]
                for (i, _, _), r in _run_round(cfg, jobs, the_plan.parallel, p * per_pass,
                                                       launched, on_start):
                    best[i] = _better(best[i], r, higher_is_better)
                    cut_off = cut_off and r.value is None and bool(r.unreachable)
                    if on_result is not None:
                        on_result(r)
                launched += n
            if cut_off and p + 1 < rounds:
                # no subset reached all its hosts: another pass only repeats the agent's failures,
                # for as many passes as --rounds says, and ranks nothing
                if on_note is not None:
                    on_note(f"no subset could reach its hosts in round {p + 1} of {rounds}: "
                            "the other rounds were not run")
                break
    except BaseException:
        tr.end_all()   # launches of this round still running in other threads
        raise
    return [r for r in best if r is not None]


def _run_round(cfg: SweepConfig, jobs: list[tuple[int, str, tuple[str, ...]]], parallel: int | None,
               offset: int, launched: int,
               on_start: Callable[[int, str, tuple[str, ...]], None] | None
               ) -> Iterator[tuple[tuple[int, str, tuple[str, ...]], SubsetResult]]:
    """Each job of one round with its result, in the jobs' order, at most ``parallel`` running
    at once. The index of a job (its place in the plan, plus ``offset`` for a later pass) picks
    its rendezvous port and id: the subsets of a round run side by side."""
    width = min(len(jobs), parallel or len(jobs))
    if width <= 1:   # one at a time: in this thread, as a sweep always ran
        for k, (i, stage, hosts) in enumerate(jobs):
            if on_start is not None:
                on_start(launched + k + 1, stage, hosts)
            yield (i, stage, hosts), run_subset(cfg, hosts, stage, offset + i)
        return
    done: dict[int, SubsetResult | BaseException] = {}
    lock = threading.Condition()

    def work(k: int) -> None:
        i, stage, hosts = jobs[k]
        r: SubsetResult | BaseException
        try:
            r = run_subset(cfg, hosts, stage, offset + i)
        except BaseException as e:   # raised in the caller's thread, as a launch one at a time does
            r = e
        with lock:
            done[k] = r
            lock.notify_all()

    started = 0
    running = 0
    for k in range(len(jobs)):
        with lock:   # a free slot: fewer than `width` jobs started and not yet reported
            while running >= width:
                lock.wait()
                running = started - len(done)
        i, stage, hosts = jobs[k]
        if on_start is not None:
            on_start(launched + k + 1, stage, hosts)
        threading.Thread(target=work, args=(k,), daemon=True, name=f"sweep-subset-{i}").start()
        started += 1
        with lock:
            running = started - len(done)
    for k in range(len(jobs)):
        with lock:
            while k not in done:
                lock.wait()
            r = done.pop(k)
        if isinstance(r, BaseException):   # an agent that cannot start, say: no use going on
            raise r
        yield jobs[k], r
