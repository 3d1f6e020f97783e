"""System tests (env telemetry): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

import shutil
import subprocess

import pytest
from fleet_metrics import _gauges
from paths import TESTS
from process_helpers import free_port
from rankfns import slow_steps

from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Header, Meta, Telemetry
from clusterbench.report import openmetrics
from clusterbench.runner import run_job
from clusterbench.store import Store


def _events(interval, np=2):
    events = []
    outcome = execute(Job(slow_steps, {"steps": 3, "sleep": 0.1},
                          RankOptions(device="cpu", timeout=60, telemetry_interval=interval), np=np),
                      events.append)
    assert outcome.status == "complete"
    return events


class _Quiet:
    def on_event(self, event):
        pass

    def finish(self, run, measurements):
        pass


_LAUNCHED = """
import json, sys
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Meta, Telemetry
from rankfns import slow_steps
events = []
outcome = execute(Job(slow_steps, {"steps": 3, "sleep": 0.1},
                      RankOptions(device="cpu", timeout=60, telemetry_interval=0.05)), events.append)
meta = {}
for e in events:
    if isinstance(e, Meta):
        meta.update(e.data)
hosts = sorted({s.host for e in events if isinstance(e, Telemetry) for s in e.samples})
print(json.dumps({"status": outcome.status, "inventory": sorted(meta.get("inventory", {})),
                  "telemetry_hosts": hosts}))
"""


def test_driver_records_inventory_and_telemetry():
    events = _events(0.05)
    assert isinstance(events[0], Header)
    meta = {}
    for e in events:
        if isinstance(e, Meta):
            meta.update(e.data)
    host = events[0].hosts[0]
    assert list(meta["inventory"]) == [host]  # one inventory per host, not per rank
    assert meta["inventory"][host]["cpu"]["logical"]
    samples = [s for e in events if isinstance(e, Telemetry) for s in e.samples]
    assert {s.metric for s in samples} >= {"cpu_utilization", "host_memory_used"}
    assert {s.host for s in samples} == {host}
    assert meta["telemetry"]["samples"] == len(samples) and meta["telemetry"]["interval_s"] == 0.05


def test_telemetry_interval_zero_disables():
    events = _events(0, np=1)
    assert not any(isinstance(e, Telemetry) for e in events)
    assert any(isinstance(e, Meta) and "inventory" in e.data for e in events)


def test_run_job_stores_telemetry_and_inventory(db):
    job = Job(slow_steps, {"steps": 2, "sleep": 0.05}, RankOptions(device="cpu", timeout=60, telemetry_interval=0.05), np=2)
    result = run_job(job, "selftest", ["test"], _Quiet(), db=db, announce=lambda _t: None)
    assert result.exit_code == 0
    with Store.open(db) as store:
        run = store.get_run(result.run.id)
        tel = store.telemetry(run.id)
    assert run.meta["inventory"] and run.meta["telemetry"]["samples"] == len(tel) > 0
    assert all(s.unit in ("%", "MHz", "bytes") for s in tel)


def test_two_hosts_under_a_launcher(tmp_path):
    """Two processes started as a launcher would (torchrun's variables), each its own 'host':
    rank 0 ends up with both hosts' inventories and telemetry."""
    import json
    import os
    import subprocess
    import sys

    port = free_port()
    tests_dir = os.path.join(str(TESTS), "helpers")   # rankfns
    procs = []
    for rank, host in enumerate(("node-a", "node-b")):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), CLUSTERBENCH_HOSTNAME=host,
                   PYTHONPATH=os.pathsep.join([tests_dir, os.environ.get("PYTHONPATH", "")]))
        procs.append(subprocess.Popen([sys.executable, "-c", _LAUNCHED], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    root = outs[0]
    assert root["status"] == "complete"
    assert root["inventory"] == ["node-a", "node-b"]
    assert root["telemetry_hosts"] == ["node-a", "node-b"]
    assert outs[1]["inventory"] == []  # only rank 0 holds the run


def test_text_with_odd_params_passes_promtool():
    text = openmetrics.render_text(_gauges())
    assert '{="' not in text and "__name__=" not in text
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian package prometheus) is not installed")
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
