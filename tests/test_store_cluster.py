"""Many hosts writing one PostgreSQL database at once, for real: 3 hosts as network namespaces
on a bridge (root only), the server in the first one listening on its bridge address, 32
writer processes spread over the hosts (Store API and ``clusterbench import`` of a real log).
Afterwards every run is whole, none lost, none duplicated; a writer killed with SIGKILL in the
middle of a run leaves nothing of it."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster_fixtures import IP, cluster_or_skip
from pg_fixtures import pg_server_or_skip

from clusterbench.store import Store

pytestmark = [pytest.mark.root, pytest.mark.slow]

HERE = Path(__file__).parent
SRC = str(HERE.parent / "src")
ALLTOALL = HERE / "data" / "nccl-tests" / "superbench-nccl_alltoall.log"   # 206 measurements
WRITERS, RUNS, MEAS = 32, 4, 300


@pytest.fixture(scope="module")
def cluster():
    yield from cluster_or_skip(3)


@pytest.fixture(scope="module")
def server(cluster):
    yield from pg_server_or_skip(listen=cluster.hosts[0], prefix=[IP, "netns", "exec", cluster.namespaces[0]])


def _in_host(cluster, i: int, argv: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": SRC, "CLUSTERBENCH_HOSTNAME": f"node{i}", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(cluster.exec_argv(i, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def _wait_line(proc: subprocess.Popen, want: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        if ready:
            line = proc.stdout.readline()
            if want in line:
                return
            if not line and proc.poll() is not None:
                break
    raise AssertionError(f"writer never printed {want}: rc={proc.poll()} {proc.stderr.read() if proc.poll() is not None else ''}")


def test_32_writers_on_3_hosts_and_a_killed_one(cluster, server):
    name = server.create_db()
    url = server.url(name)                        # the bridge address, as every host sees it
    local = server.socket_url(name)               # this process is outside the namespaces
    Store.open(local).close()

    # One writer is killed mid-run: it inserts its run and half its measurements, then hangs
    # inside the transaction until SIGKILL.
    killed = _in_host(cluster, 1, [sys.executable, str(HERE / "helpers" / "store_writer.py"),
                                   f"{url}?application_name=cb-killed", "killed", "node1", "1", "1000",
                                   "--hang-after", "500"])
    _wait_line(killed, "HANGING")
    activity = server.sql("SELECT state, backend_xid IS NOT NULL FROM pg_stat_activity"
                          " WHERE application_name = 'cb-killed'")
    assert activity and activity[0][1], activity   # its transaction is open and has written

    procs = []
    for w in range(WRITERS):
        host = w % cluster.n
        if w % 5 == 0:   # some writers import a real log through the CLI
            argv = [sys.executable, "-m", "clusterbench", "import", str(ALLTOALL), "--db", url,
                    "--tag", f"writer=w{w}", "--host", f"node{host}"]
        else:
            argv = [sys.executable, str(HERE / "helpers" / "store_writer.py"), url, f"w{w}", f"node{host}",
                    str(RUNS), str(MEAS)]
        procs.append((w, _in_host(cluster, host, argv)))

    with Store.open(local) as s:                  # meanwhile, nothing of the hanging run shows
        assert s.runs_with_tags({"writer": "killed"}) == []
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(30)

    for w, p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, f"writer {w}: {err}"

    importers = [w for w in range(WRITERS) if w % 5 == 0]
    with Store.open(local) as s:
        runs = s.list_runs()
        counts = s.measurement_counts()
        assert s.runs_with_tags({"writer": "killed"}) == []
        orphans = s.db.execute("SELECT count(*) FROM measurement_packs WHERE run_id NOT IN (SELECT id FROM runs)")
        assert orphans.fetchone()[0] == 0
        assert len(s.uids()) == len(runs)
    assert len(runs) == (WRITERS - len(importers)) * RUNS + len(importers)
    seen = sorted((r.tags["writer"], r.tags.get("i", "-")) for r in runs)
    want = sorted([(f"w{w}", str(i)) for w in range(WRITERS) if w not in importers for i in range(RUNS)]
                  + [(f"w{w}", "-") for w in importers])
    assert seen == want                               # none lost, none twice
    for r in runs:
        assert counts.get(r.id) == (206 if r.benchmark == "import" else MEAS), r
    assert {h for r in runs if r.benchmark == "coll" for h in r.hosts} == {"node0", "node1", "node2"}
    # the killed writer's server process ended with its connection: nothing waits on it
    deadline = time.monotonic() + 60
    while server.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'cb-killed'") != [(0,)]:
        assert time.monotonic() < deadline, "the killed writer's backend never went away"
        time.sleep(0.2)
