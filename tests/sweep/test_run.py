"""Tests of clusterbench.sweep.run."""

from __future__ import annotations

import threading
import types

import pytest
from sweep_results import HOSTS, _bw, _lat, _suspects

from clusterbench.errors import UsageError
from clusterbench.sweep import plan
from clusterbench.sweep import run as sweep_run
from clusterbench.sweep.analyze import analyze
from clusterbench.sweep.report import table_lines, to_run
from clusterbench.sweep.run import SweepConfig, run_sweep


def _fake_launch(monkeypatch, stdout_of) -> None:  # type: ignore[no-untyped-def]
    """Every subset's rank 0 prints ``stdout_of(hosts)`` and every host succeeds."""
    monkeypatch.setattr(sweep_run.tr, "run_torchrun_on_hosts",
                        lambda hosts, *_a, **_k: types.SimpleNamespace(stdout=stdout_of(tuple(hosts))))
    monkeypatch.setattr(sweep_run.tr, "diagnose", lambda *_a: None)


def _sweep(monkeypatch, stdout_of, metric: str, hib: bool, hosts=HOSTS, single: bool = True):  # type: ignore[no-untyped-def]
    _fake_launch(monkeypatch, stdout_of)
    cfg = SweepConfig(hosts=list(hosts), command=["net"], metric=metric, agent=["ssh"])
    subsets = ([("single", (h,)) for h in hosts] if single else []) + [("pair", p) for p in plan.pairs(hosts)]
    results = run_sweep(cfg, subsets, higher_is_better=hib)
    return results, analyze(results, higher_is_better=hib)


def test_one_slow_round_trip_does_not_make_a_suspect(monkeypatch):
    """n3's max is one round trip of 30x (a scheduler hiccup); its typical round trip is everyone's.
    The mean of min/avg/p50/max made n3 2.7x slower than its neighbours: a suspect."""
    def stdout(hosts: tuple[str, ...]) -> str:
        src, dst = (hosts * 2)[:2]
        worst = 900.0 if "n3" in hosts else 30.0
        return _lat(src if len(hosts) > 1 else f"{src}/rank0", dst if len(hosts) > 1 else f"{dst}/rank1",
                    {"min": 20.0, "avg": 25.0, "p50": 24.0 + 0.1 * HOSTS.index(hosts[0]), "max": worst})
    _results, a = _sweep(monkeypatch, stdout, "latency_us", hib=False)
    assert a.suspects == []
    assert a.pair_scores["n3"] == pytest.approx(24.1, abs=0.11)


@pytest.mark.parametrize("zero", [0.0, -3.0])
def test_a_latency_of_zero_is_a_failed_run_naming_its_node(monkeypatch, zero):
    """n2's clock says its round trips took no time: once the best of all and never flagged."""
    def stdout(hosts: tuple[str, ...]) -> str:
        src, dst = (hosts * 2)[:2]
        p50 = zero if src == "n2" else 24.0 + 0.1 * HOSTS.index(dst)
        return _lat(src, dst, {"min": min(p50, 20.0), "avg": 25.0 if p50 > 0 else p50, "p50": p50, "max": 30.0})
    results, a = _sweep(monkeypatch, stdout, "latency_us", hib=False)
    # n2's one score left is the pair n1 timed
    assert "n2" not in a.single_scores and a.pair_scores["n2"] == pytest.approx(24.1)
    assert min(a.pair_scores.values()) > 0
    assert set(_suspects(a)) == {"n2"}
    assert _suspects(a)["n2"] == "single run failed; pair run failed"
    failed = [r for r in results if r.error]
    # the pairs n2 timed; (n1, n2) was timed by n1 and counts
    assert {r.hosts for r in failed} == {("n2",), ("n2", "n3"), ("n2", "n4")}
    assert all(r.error.startswith("host n2 measured latency_us ") and "above 0" in r.error for r in failed)


def test_a_zero_in_one_round_costs_that_round_only(monkeypatch):
    calls: list[int] = []

    def stdout(hosts: tuple[str, ...]) -> str:
        calls.append(1)
        src, dst = (hosts * 2)[:2]
        return _lat(src, dst, {"p50": 0.0 if len(calls) == 1 else 24.0})
    _fake_launch(monkeypatch, stdout)
    cfg = SweepConfig(hosts=["a", "b"], command=["net"], metric="latency_us", agent=["ssh"])
    [r] = run_sweep(cfg, [("pair", ("a", "b"))], rounds=2, higher_is_better=False)
    assert r.value == 24.0 and r.error is None


def test_a_bandwidth_of_zero_is_still_a_measurement(monkeypatch):
    """Higher is better: 0 loses on its own, it is the slowest node, not a failed run."""
    def stdout(hosts: tuple[str, ...]) -> str:
        a, b = hosts
        speed = 0.0 if "n4" in hosts else 10.0 + 0.01 * HOSTS.index(a)
        return _bw(a, b, speed) + _bw(b, a, speed)
    results, a = _sweep(monkeypatch, stdout, "bandwidth", hib=True, single=False)
    assert not any(r.error for r in results)
    assert "pair score is an outlier" in _suspects(a)["n4"]


def test_unmatched_names_are_warned_once(monkeypatch):
    """--hosts by address, nodes naming themselves by hostname: no direction can be told."""
    addresses = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    names = dict(zip(addresses, ["gpu01", "gpu02", "gpu03"], strict=True))

    def stdout(hosts: tuple[str, ...]) -> str:
        if len(hosts) == 1:
            return _bw(f"{names[hosts[0]]}/rank0", f"{names[hosts[0]]}/rank1", 20.0)
        a, b = (names[h] for h in hosts)
        return _bw(a, b, 10.0) + _bw(b, a, 10.0)
    results, a = _sweep(monkeypatch, stdout, "bandwidth", hib=True, hosts=addresses)
    assert a.send_scores == {} and len(a.pair_scores) == 3
    assert len(a.warnings) == 1
    assert "gpu01, gpu02, gpu03" in a.warnings[0] and "CLUSTERBENCH_HOSTNAME" in a.warnings[0]
    lines = table_lines(a, results, "bandwidth", None)
    assert [ln for ln in lines if ln.startswith("# warning:")] == [f"# warning: {a.warnings[0]}"]
    run, _ms = to_run(results, a, ["net"], "bandwidth", ["clusterbench", "sweep"], "2024-01-01T00:00:00Z", {}, None)
    assert run.meta["warnings"] == a.warnings


def test_matching_names_warn_nothing(monkeypatch):
    def stdout(hosts: tuple[str, ...]) -> str:
        if len(hosts) == 1:
            return _bw(f"{hosts[0]}/rank0", f"{hosts[0]}/rank1", 20.0)
        a, b = (f"{h.upper()}.example.org" for h in hosts)
        return _bw(a, b, 10.0) + _bw(b, a, 10.0)
    results, a = _sweep(monkeypatch, stdout, "bandwidth", hib=True)
    assert a.warnings == [] and set(a.send_scores) == set(HOSTS)
    run, _ms = to_run(results, a, ["net"], "bandwidth", ["clusterbench", "sweep"], "2024-01-01T00:00:00Z", {}, None)
    assert "warnings" not in run.meta


def test_rounds_stop_once_no_subset_could_reach_its_hosts(monkeypatch):
    # every host unreachable (the agent exits 255): --rounds 1000 launched 1000 rounds of the same
    # failures; the first round that reached no host is the last one
    launches: list[tuple[str, ...]] = []

    def unreachable(hosts, *_a, **_k):  # type: ignore[no-untyped-def]
        launches.append(tuple(hosts))
        return sweep_run.tr.HostsResult(list(hosts), dict.fromkeys(hosts, 255), "",
                                        {h: ["ssh: connect to host: No route to host"] for h in hosts})
    monkeypatch.setattr(sweep_run.tr, "run_torchrun_on_hosts", unreachable)
    cfg = SweepConfig(hosts=["a", "b"], command=["net"], metric="latency_us", agent=["ssh"])
    notes: list[str] = []
    results = run_sweep(cfg, [("single", ("a",)), ("single", ("b",)), ("pair", ("a", "b"))], rounds=1000,
                        on_note=notes.append)
    assert len(launches) == 3
    assert [r.error for r in results] == ["host a is unreachable: ssh: connect to host: No route to host",
                                          "host b is unreachable: ssh: connect to host: No route to host",
                                          "host a is unreachable: ssh: connect to host: No route to host"]
    assert notes == ["no subset could reach its hosts in round 1 of 1000: the other rounds were not run"]


class _Launches:
    """A run_subset stand-in that records which subsets run at the same time. Each one waits at
    ``barrier`` (when given) for the others of its round: a round run one launch at a time
    breaks it (BrokenBarrierError after its bounded wait) instead of passing."""

    def __init__(self, barrier: threading.Barrier | None = None) -> None:
        self.lock = threading.Lock()
        self.running: list[tuple[str, ...]] = []
        self.most = 0
        self.shared_node = False
        self.ports: list[int] = []
        self.barrier = barrier

    def __call__(self, cfg, hosts, stage, index):  # type: ignore[no-untyped-def]
        with self.lock:
            busy = {h for s in self.running for h in s}
            self.shared_node |= bool(busy & set(hosts))
            self.running.append(tuple(hosts))
            self.most = max(self.most, len(self.running))
            self.ports.append(cfg.port + index % 500)
        try:
            if self.barrier is not None:
                self.barrier.wait(timeout=30)
        finally:
            with self.lock:
                self.running.remove(tuple(hosts))
        return sweep_run.SubsetResult(tuple(hosts), stage, 10.0 + len(hosts) + index * 1e-3, "GB/s")


def _cfg(hosts) -> SweepConfig:  # type: ignore[no-untyped-def]
    return SweepConfig(hosts=list(hosts), command=["net"], metric="bandwidth", agent=["ssh"])


def test_a_round_runs_its_subsets_at_once_and_no_node_twice(monkeypatch):
    hosts = [f"h{i}" for i in range(8)]
    launches = _Launches(threading.Barrier(4))   # 4 disjoint pairs a round, all waiting for each other
    monkeypatch.setattr(sweep_run, "run_subset", launches)
    p = plan.build(hosts, single=False, pair_mode="all")
    results = run_sweep(_cfg(hosts), p)
    assert launches.most == 4 and not launches.shared_node
    assert [r.hosts for r in results] == [s for rnd in p.rounds() for s in rnd.subsets]
    assert len(set(launches.ports)) == len(results)   # each launch its own rendezvous port


def test_parallel_bounds_the_launches_at_once(monkeypatch):
    hosts = [f"h{i}" for i in range(8)]
    launches = _Launches(threading.Barrier(2))
    monkeypatch.setattr(sweep_run, "run_subset", launches)
    results = run_sweep(_cfg(hosts), plan.build(hosts, single=False, pair_mode="all", parallel=2))
    assert launches.most == 2 and len(results) == 28


def test_results_are_told_in_the_plan_order_whichever_ends_first(monkeypatch):
    """The first pair of a round ends last: it waits until every other one has ended."""
    hosts = [f"h{i}" for i in range(6)]
    p = plan.build(hosts, single=False, pair_mode="all")
    firsts = {rnd.subsets[0] for rnd in p.rounds()}
    ended: list[tuple[str, ...]] = []
    others_done = threading.Condition()

    def launch(cfg, hosts, stage, index):  # type: ignore[no-untyped-def]
        hosts = tuple(hosts)
        with others_done:
            if hosts in firsts:   # wait (bounded) for the two others of its round
                rounds_done = sum(1 for e in ended if e in firsts)
                assert others_done.wait_for(lambda: sum(1 for e in ended if e not in firsts) == 2 * (rounds_done + 1),
                                            30)
            ended.append(hosts)
            others_done.notify_all()
        return sweep_run.SubsetResult(hosts, stage, 5.0, "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", launch)
    told: list[tuple[str, ...]] = []
    started: list[int] = []
    run_sweep(_cfg(hosts), p, lambda r: told.append(r.hosts), on_start=lambda k, stage, h: started.append(k))
    assert all(ended[3 * j + 2] in firsts for j in range(p.round_count()))   # last of each round
    assert told == [s for rnd in p.rounds() for s in rnd.subsets]
    assert started == list(range(1, p.launches() + 1))


def test_passes_keep_each_subsets_best_and_a_failure_ends_the_sweep(monkeypatch):
    hosts = [f"h{i}" for i in range(6)]
    p = plan.build(hosts, pair_mode="ring")
    launches = _Launches()
    monkeypatch.setattr(sweep_run, "run_subset", launches)
    results = run_sweep(_cfg(hosts), p, rounds=3)
    # the best of three passes: the largest index, the third pass's (index * 1e-3 in the value)
    assert [r.hosts for r in results] == [s for rnd in p.rounds() for s in rnd.subsets]
    assert all(r.value >= 10.0 + len(r.hosts) + 2 * p.launches() * 1e-3 for r in results)

    ended: list[bool] = []

    def broken(cfg, hosts, stage, index):  # type: ignore[no-untyped-def]
        raise UsageError("cannot start the launch agent 'nossh': No such file or directory")

    monkeypatch.setattr(sweep_run, "run_subset", broken)
    monkeypatch.setattr(sweep_run.tr, "end_all", lambda: ended.append(True))
    with pytest.raises(UsageError, match="nossh"):
        run_sweep(_cfg(hosts), p)
    assert ended == [True]   # what the round had started is ended too
