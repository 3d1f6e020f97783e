"""Sweep analysis and planning (pure), and the net matrix over loopback with local ranks."""

from __future__ import annotations

import subprocess
import sys

import pytest
from process_helpers import free_port

from clusterbench.bench.net import perftest
from clusterbench.bench.net.pairs import endpoints_of, ordered_pairs
from clusterbench.errors import UsageError
from clusterbench.judge.efficiency import run_link_efficiency
from clusterbench.store import Store
from clusterbench.sweep import plan
from clusterbench.sweep.analyze import SubsetResult, analyze, parse_topology, pick_value
from clusterbench.sweep.run import parse_records

HOSTS = ["n1", "n2", "n3", "n4"]


def _pairs(values: dict[tuple[str, str], float]) -> list[SubsetResult]:
    return [SubsetResult(k, "pair", v, "GB/s") for k, v in values.items()]


def test_plan_pairs_ring_batches():
    assert plan.pairs(HOSTS[:3]) == [("n1", "n2"), ("n1", "n3"), ("n2", "n3")]
    assert plan.pairs(HOSTS, "ring") == [("n1", "n2"), ("n2", "n3"), ("n3", "n4"), ("n4", "n1")]
    assert plan.pairs(HOSTS, "none") == []
    assert plan.batches(HOSTS + ["n5"], 2) == [("n1", "n2"), ("n3", "n4", "n5")]
    with pytest.raises(UsageError):
        plan.batches(HOSTS, 1)


def test_one_slow_node_is_named_with_its_pairs():
    fast, slow = 1.10, 0.12
    results = _pairs({p: (slow if "n3" in p else fast + 0.01 * i) for i, p in enumerate(plan.pairs(HOSTS))})
    a = analyze(results)
    assert [s.host for s in a.suspects] == ["n3"]
    ev = a.suspects[0].evidence
    assert "n3: 0.12 GB/s" in ev[0] and sum("n3" in e for e in ev[1:]) == 3


def test_three_nodes_one_shaped_and_a_noisy_pair_flags_only_the_shaped():
    a = analyze(_pairs({("a", "b"): 0.117, ("a", "c"): 1.17, ("b", "c"): 0.118}))
    assert [s.host for s in a.suspects] == ["b"]
    # one noisy pair drags both its nodes equally: nobody is flagged
    a = analyze(_pairs({("a", "b"): 0.8, ("a", "c"): 1.17, ("b", "c"): 1.15}))
    assert a.suspects == []


def test_uniform_noise_flags_nobody():
    vals = [1.00, 1.03, 0.98, 1.01, 0.99, 1.02]
    a = analyze(_pairs(dict(zip(plan.pairs(HOSTS), vals))))
    assert a.suspects == []


def test_singles_failures_and_switches():
    results = [SubsetResult((h,), "single", v, "GB/s") for h, v in
               zip(HOSTS, [5.0, 5.1, 2.0, 4.9])]
    results.append(SubsetResult(("n1", "n4"), "pair", None,
                                error="rendezvous at n1:29400 timed out after 8 s: n4 never joined"))
    results += _pairs({("n1", "n2"): 1.0, ("n2", "n3"): 1.0, ("n1", "n3"): 1.01})
    a = analyze(results)
    by = {s.host: s for s in a.suspects}
    assert set(by) == {"n3", "n4"}
    assert "single" in by["n3"].reason and "failed" in by["n4"].reason and "never joined" in by["n4"].evidence[0]
    topo = parse_topology("SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-4]\nSwitchName=top Switches=s[1-2]\n")
    assert topo == {"n1": "s1", "n2": "s1", "n3": "s2", "n4": "s2"}


def test_switch_grouping_names_the_nodes_behind_a_bad_switch():
    hosts = [f"n{i}" for i in range(1, 10)]
    topo = {h: f"s{(i // 3) + 1}" for i, h in enumerate(hosts)}
    vals = {}
    for i, p in enumerate(plan.pairs(hosts)):
        vals[p] = 0.5 if topo[p[0]] == "s3" or topo[p[1]] == "s3" else 1.0 + 0.001 * i
    a = analyze(_pairs(vals), switches=topo)
    assert set(a.switch_scores) == {"s1", "s2", "s3"}
    assert {s.host for s in a.suspects} == {"n7", "n8", "n9"}


def test_pick_value_uses_the_largest_size_and_lower_is_better():
    recs = [{"metric": "busbw", "value": v, "unit": "GB/s", "params": {"bytes": b, "placement": pl}}
            for b, v, pl in [(1024, 0.1, "out"), (1 << 20, 2.0, "out"), (1 << 20, 4.0, "in")]]
    assert pick_value(recs, "busbw") == (3.0, "GB/s")
    assert pick_value(recs, "nothing") is None
    lat = _pairs({("a", "b"): 10.0, ("a", "c"): 500.0, ("b", "c"): 505.0})
    assert [s.host for s in analyze(lat, higher_is_better=False).suspects] == ["c"]
    assert parse_records('# x\n{"metric": "busbw", "value": 1}\n{bad json\n') == [{"metric": "busbw", "value": 1}]


def test_net_pairs_and_endpoints():
    assert ordered_pairs(3, "all") == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert ordered_pairs(2, "ring") == [(0, 1), (1, 0)]
    assert endpoints_of(["a", "a", "b", "b"]) == ([0, 2], "host")
    assert endpoints_of(["a", "a"]) == ([0, 1], "rank")


def test_rdma_skipped_without_devices(tmp_path):
    assert "no RDMA devices" in perftest.skip_reason(str(tmp_path))
    argv = perftest.perftest_argv("mlx5_0", qps=4, bidirectional=True, gpu="--use_rocm=0", server="10.0.0.1")
    assert argv == ["ib_write_bw", "-d", "mlx5_0", "-a", "-F", "--report_gbits", "-q", "4", "-p", "18515",
                    "--bidirectional", "--use_rocm=0", "10.0.0.1"]


def test_perftest_report_imported_with_pair_params():
    ms = perftest.parse_report(_PERFTEST, {"src_host": "a", "dst_host": "b"})
    avg = [m for m in ms if m.metric == "bw_avg"]
    assert avg and avg[0].params["src_host"] == "a" and avg[0].params["bytes"] == 65536
    assert avg[0].unit == "GB/s" and abs(avg[0].value - 97.8 / 8) < 0.01


_PERFTEST = """                    RDMA_Write BW Test
 Dual-port       : OFF		Device         : mlx5_0
 Number of qps   : 1		Transport type : IB
 Connection type : RC		Using SRQ      : OFF
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      5000             97.90              97.80  		   0.186533
---------------------------------------------------------------------------------------
"""


def test_net_over_loopback_stores_a_matrix(tmp_path):
    db = str(tmp_path / "net.db")
    r = subprocess.run([sys.executable, "-m", "clusterbench", "net", "--np", "3", "--duration", "0.3",
                        "--latency-iters", "20", "--link-rate", "100Gbps", "--db", db],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    with Store.open(db) as store:
        (run,) = store.list_runs()
        ms = store.measurements(run.id)
    bw = [m for m in ms if m.metric == "bandwidth"]
    lat = [m for m in ms if m.metric == "latency_us"]
    assert len(bw) == 6 and all(m.value > 0 and m.params["streams"] == 4 for m in bw)
    assert {(m.params["src_rank"], m.params["dst_rank"]) for m in bw} == \
        {(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)}
    assert len(lat) == 12 and {m.params["stat"] for m in lat} == {"min", "avg", "p50", "max"}
    # the --link-rate is the run's link_speed: each pair is judged against it when read
    assert run.tags["link_speed"] == "100Gbps"
    eff = run_link_efficiency(run, ms, None)
    assert len(eff) == 6 and all(abs(e.ratio - b.value / 12.5) < 1e-9 for e, b in zip(eff, bw))


def test_net_keeps_its_telemetry_interval(tmp_path):
    db = str(tmp_path / "net.db")
    for interval in ("0", "0.05"):
        r = subprocess.run([sys.executable, "-m", "clusterbench", "net", "--np", "2", "--duration", "0.3",
                            "--no-latency", "--telemetry-interval", interval, "--db", db],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    with Store.open(db) as store:
        off, on = reversed(store.list_runs())
        assert "telemetry" not in off.meta and store.telemetry(off.id) == []
        assert on.meta["telemetry"]["interval_s"] == 0.05 and store.telemetry(on.id)


def test_perftest_client_waits_until_the_server_listens(tmp_path):
    """The server side polls its own listening sockets (no fixed sleep, no probe connection)."""
    import textwrap
    import threading

    port = free_port()
    assert not perftest.listening(port)
    # a server that listens only when told to: the wait must last until then, however long
    slow = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import socket, sys, time
        sys.stdin.readline()
        s = socket.socket(); s.bind(("127.0.0.1", {port})); s.listen(); time.sleep(120)""")],
        stdin=subprocess.PIPE, text=True)
    ended: list[tuple[str | None, bool]] = []
    waiter = threading.Thread(target=lambda: ended.append(
        (perftest.wait_listening(slow, port, timeout=120), perftest.listening(port))))
    try:
        waiter.start()
        slow.stdin.write("listen\n")
        slow.stdin.flush()
        waiter.join(150)
        # it returned "listening" while the server listened (never before: it listens when told)
        assert ended == [(None, True)]
    finally:
        slow.kill()
        slow.wait()
    dead = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert "exited with code 3" in perftest.wait_listening(dead, port, timeout=20)
    never = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert "did not listen" in perftest.wait_listening(never, port, timeout=0.5)
    finally:
        never.kill()
        never.wait()


@pytest.mark.parametrize("args", [["--streams", "0"], ["--latency-bytes", "-5"], ["--latency-bytes", "0"],
                                  ["-t", "nan"], ["-t", "inf"], ["-t", "-1"], ["--rdma-qps", "0"]])
def test_net_bad_input_is_one_line(args):
    r = subprocess.run([sys.executable, "-m", "clusterbench", "net", "--np", "2", *args],
                       capture_output=True, text=True, timeout=60)
    option = "--duration" if args[0] == "-t" else args[0]
    assert r.returncode == 2 and r.stderr.startswith("clusterbench: error: ") and option in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_rounds_keep_each_subsets_best_and_alternate_the_order(monkeypatch):
    """A transient slowdown in one round does not survive best-of-rounds; a slow node does."""
    from clusterbench.sweep import run as sweep_run

    calls: list[tuple[str, ...]] = []
    # round 1: the first launches are slow (a transient); every pair with c is slow (degraded)
    values = {("a", "b"): [0.5, 1.0], ("a", "c"): [0.6, 0.6], ("b", "c"): [0.6, 0.61]}

    def fake(cfg, hosts, stage, index):
        calls.append(tuple(hosts))
        v = values[tuple(hosts)][index // 3]
        return SubsetResult(tuple(hosts), stage, v, "GB/s")

    monkeypatch.setattr(sweep_run, "run_subset", fake)
    cfg = sweep_run.SweepConfig(hosts=["a", "b", "c"], command=["coll"], metric="busbw", agent=["ssh"])
    subsets = [("pair", ("a", "b")), ("pair", ("a", "c")), ("pair", ("b", "c"))]
    best = sweep_run.run_sweep(cfg, subsets, rounds=2)
    assert calls == [("a", "b"), ("a", "c"), ("b", "c"), ("b", "c"), ("a", "c"), ("a", "b")]
    assert [r.value for r in best] == [1.0, 0.6, 0.61]
    assert [s.host for s in analyze(best).suspects] == ["c"]
    once = sweep_run.run_sweep(cfg, subsets, rounds=1)
    assert [r.value for r in once] == [0.5, 0.6, 0.6]
    # lower is better (a latency): the smallest value is kept
    lat = sweep_run.run_sweep(cfg, subsets, rounds=2, higher_is_better=False)
    assert [r.value for r in lat] == [0.5, 0.6, 0.6]
