"""Across real network hops: 3 hosts as network namespaces on a bridge (root only), torchrun's
c10d rendezvous, Open MPI's mpirun, tc tbf shaping one host's link, and the faults: a node
that never joins, a node that dies mid-run, an unreachable host. The namespaces are removed
even when a test fails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from cluster_fixtures import IP, cluster_or_skip
from json_schema import check_lines

from clusterbench.store import Store

pytestmark = [pytest.mark.root, pytest.mark.slow]

COLL = ["coll", "all_reduce", "-b", "4M", "-e", "4M", "-n", "5", "-w", "1", "--device", "cpu"]
GLOO = ["--env", "GLOO_SOCKET_IFNAME=eth0"]


@pytest.fixture(scope="module")
def cluster():
    yield from cluster_or_skip(3)


@pytest.fixture
def clean(cluster):
    yield cluster
    for i in range(cluster.n):
        cluster.unshape(i)
        cluster.link(i, True)


def _cb(args, timeout=240, ns=None, env=None):
    argv = [sys.executable, "-m", "clusterbench", *args]
    if ns:
        argv = [IP, "netns", "exec", ns, *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _sweep(c, db, *extra, test=()):
    return _cb(["sweep", "--hosts", ",".join(c.hosts), "--agent", c.agent, "--no-single", *GLOO,
                "--join-timeout", "40", "--timeout", "120", "--db", db, *extra, "--", *COLL, *test])


def test_sweep_without_shaping_flags_nobody_and_stores_each_pair(clean, tmp_path):
    db = str(tmp_path / "sweep.db")
    marker = tmp_path / "pwned"
    evil = f"note=$(touch {marker}); `touch {marker}`"
    # Unshaped, the veth links are CPU-bound on 2 cores: two rounds, best of each, so a transient
    # slowdown of the first launches is not taken for a degraded node. Even so, pairs of one CI run
    # ranged 0.82-1.09 GB/s and one node's score fell 7.4% below the median, so "nobody flagged" is
    # checked above this machine's noise (25%); a shaped link (next test) is 87% below.
    r = _sweep(clean, db, "--rounds", "2", "--min-rel-dev", "0.25",
               test=["--tag", evil])   # the tag crosses the agent's shell
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no suspect" in r.stdout and "SUSPECT" not in r.stdout
    with Store.open(db) as store:
        runs = store.list_runs()
        pairs = [x for x in runs if x.benchmark != "sweep"]
        sweep_run = next(x for x in runs if x.benchmark == "sweep")
        assert len(pairs) == 6 and all(x.status == "complete" for x in pairs)
        # every multi-node torchrun all_reduce stored one run per round with both hosts recorded
        assert sorted(tuple(sorted(x.hosts)) for x in pairs) == [
            ("node0", "node1"), ("node0", "node1"), ("node0", "node2"), ("node0", "node2"),
            ("node1", "node2"), ("node1", "node2")]
        assert all(x.meta.get("launcher") == "torchrun" and x.ranks == 2 for x in pairs)
        assert all(x.tags["sweep"] == sweep_run.tags["sweep"] for x in pairs)
        assert sorted(sweep_run.hosts) == sorted(clean.hosts) and sweep_run.meta["suspects"] == []
        assert all(x.tags["note"] == evil.split("=", 1)[1] for x in pairs)
    assert not marker.exists()


def test_sweep_names_the_host_behind_a_shaped_link(clean, tmp_path):
    clean.shape(1, "1gbit")
    db = str(tmp_path / "sweep.db")
    r = _sweep(clean, db, "--link-rate", "1gbit", "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    lines = check_lines(r.stdout)  # every line valid against the published schema
    rows = [m for m in lines if m["kind"] == "measurement"]
    flagged = {m["params"]["host"] for m in rows if m["metric"] == "node_score" and m["params"]["suspect"]}
    assert flagged == {clean.hosts[1]}
    hosts = {h["host"]: h for h in lines if h["kind"] == "host"}
    assert set(hosts) == set(clean.hosts) and hosts[clean.hosts[1]]["status"] == "suspect"
    assert [h["status"] for n, h in hosts.items() if n != clean.hosts[1]] == ["ok", "ok"]
    assert lines[-1]["kind"] == "summary" and lines[-1]["suspects"] == [clean.hosts[1]]
    assert lines[-1]["exit_code"] == 1
    # large-message efficiency of the shaped host against the link the test knows (1 Gbit/s)
    eff = [m for m in rows if m["metric"] == "efficiency" and m["params"]["host"] == clean.hosts[1]]
    assert len(eff) == 1 and eff[0]["params"]["link_rate"] == 0.125
    assert 0 < eff[0]["value"] < 1.2   # a tbf link cannot be beaten by much: shaping took effect


def test_node_that_never_joins_is_named(clean, tmp_path):
    clean.link(2, False)   # host 2 is up but cannot reach anyone
    r = _cb(["launch", "torchrun", "--hosts", ",".join(clean.hosts), "--agent", clean.agent, *GLOO,
             "--join-timeout", "8", "--wall-timeout", "90", "--", *COLL,
             "--db", str(tmp_path / "x.db")], timeout=120)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("clusterbench: error: rendezvous at") and "never joined" in last
    # ended by --join-timeout (these words), not by --wall-timeout ("did not finish within 90 s")
    assert f"{clean.hosts[2]} never joined" in last and clean.hosts[0] in last.split("joined:")[1]


def test_rank_0_output_arrives_whichever_host_the_rendezvous_makes_rank_0(clean, tmp_path):
    # c10d numbers the nodes by address: with the hosts listed backwards, rank 0 is the last
    # one given, not the first (whose output alone was read before)
    hosts = list(reversed(clean.hosts[:2]))
    r = _cb(["launch", "torchrun", "--hosts", ",".join(hosts), "--agent", clean.agent, *GLOO,
             "--join-timeout", "40", "--wall-timeout", "120", "--", *COLL, "--json",
             "--db", str(tmp_path / "x.db")], timeout=150)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    lines = check_lines(r.stdout)
    assert any(m["kind"] == "measurement" and m["metric"] == "busbw" for m in lines)
    assert [m["status"] for m in lines if m["kind"] == "run"] == ["complete"]


def test_node_dying_mid_run_ends_the_run_incomplete(clean, tmp_path):
    db = str(tmp_path / "dies.db")
    argv = [sys.executable, "-m", "clusterbench", "launch", "torchrun", "--hosts",
            ",".join(clean.hosts[:2]), "--agent", clean.agent, *GLOO, "--join-timeout", "60",
            "--wall-timeout", "150", "--", "coll", "all_reduce", "-b", "1K", "-e", "64M", "-n", "5",
            "--device", "cpu", "--timeout", "30", "--db", db]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.monotonic()
        first = ""
        while time.monotonic() - t0 < 90:
            first = p.stdout.readline()   # the table prints each size's row as it finishes
            if not first or (first.strip()[:1].isdigit() and not first.startswith("#")):
                break
        assert first.strip()[:1].isdigit(), "no row arrived before the kill"
        pids = subprocess.run([IP, "netns", "pids", clean.namespaces[1]], capture_output=True,
                              text=True, timeout=10).stdout.split()
        for pid in pids:   # the node dies: every process on it, at once
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        out, err = p.communicate(timeout=140)   # a bound only: --wall-timeout would say so itself
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode != 0
    assert err.strip().splitlines()[-1].startswith("clusterbench: error: host ")
    with Store.open(db) as store:
        (run,) = store.list_runs()
        assert run.status == "incomplete" and run.errors
        assert store.measurements(run.id)   # the rows that finished are kept


def _hostfile(tmp_path, lines):
    f = tmp_path / "hostfile"
    f.write_text("\n".join(lines) + "\n")
    return str(f)


def test_mpirun_runs_ranks_on_every_host(clean, tmp_path):
    db = str(tmp_path / "mpi.db")
    hf = _hostfile(tmp_path, [f"{h} slots=1" for h in clean.hosts])
    # All "hosts" share one kernel and /dev/shm: Open MPI 4.1's orteds then sometimes crash in
    # hwloc_shmem_topology_write (about 1 launch in 4 here); its hwloc rtc component is only for
    # binding, which this test does not use, so it is turned off for the emulated cluster.
    r = _cb(["launch", "mpi", "--hostfile", hf, "--agent", clean.agent, "--mca", "rtc=^hwloc",
             "--mca", "btl=tcp,self",
             "--mca", "btl_tcp_if_include=eth0", "--mca", "oob_tcp_if_include=eth0", *GLOO,
             "--wall-timeout", "120", "--", "coll", "all_reduce", "-b", "64K", "-e", "256K",
             "-n", "3", "-w", "1", "--device", "cpu", "--db", db],
            ns=clean.namespaces[0], env=clean.host_env(0), timeout=150)
    # (the start of stderr holds Open MPI's own reason when a daemon failed to start)
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[:1500] + r.stderr[-1500:]
    with Store.open(db) as store:
        (run,) = store.list_runs()
        assert run.status == "complete" and run.ranks == 3 and run.meta.get("launcher") == "mpi"
        assert "launch_id" in run.tags   # what launch mpi found it by
        assert sorted(run.hosts) == ["node0", "node1", "node2"]


def test_unreachable_host_in_hostfile_is_one_line(clean, tmp_path):
    bad = f"{clean.subnet}.99"
    hf = _hostfile(tmp_path, [f"{clean.hosts[0]} slots=1", f"{bad} slots=1"])
    r = _cb(["launch", "mpi", "--hostfile", hf, "--agent", clean.agent, "--", "net"], timeout=60)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and bad in lines[0] and "unreachable" in lines[0]
