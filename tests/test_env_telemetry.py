"""The telemetry sampler, and telemetry plus inventory stored with every run by the driver."""

import time

import pytest
from rankfns import slow_steps

from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Header, Meta, Telemetry
from clusterbench.runner import run_job
from clusterbench.store import Store
from clusterbench.telemetry.sampler import CpuSource, Sampler, summarize


class Counting:
    def __init__(self):
        self.n = 0

    def __call__(self):
        self.n += 1
        return [("gpu0", "gpu_power", 100.0 + self.n, "W"), ("", "cpu_utilization", 50.0, "%")]


def broken_source():
    raise RuntimeError("sensor gone")


def test_sampler_ticks_and_labels():
    src = Counting()
    s = Sampler(0.02, host="node-a", sources=[src, broken_source]).start()
    time.sleep(0.2)
    samples = s.stop()
    assert src.n >= 3  # first tick at start, then on the interval grid, one at stop
    assert {x.host for x in samples} == {"node-a"}
    power = [x for x in samples if x.metric == "gpu_power"]
    assert power[0].device == "gpu0" and power[0].unit == "W"
    assert [x.t for x in power] == sorted(x.t for x in power)
    assert s.errors == {"function": "RuntimeError: sensor gone"}  # the broken source is reported, others go on
    assert s.stop() == samples  # stopping twice is harmless


def test_sampler_rejects_nonpositive_interval():
    with pytest.raises(ValueError):
        Sampler(0, sources=[])


def test_cpu_source_reads_psutil():
    src = CpuSource()
    time.sleep(0.05)
    readings = {m: (v, u) for _, m, v, u in src()}
    assert 0.0 <= readings["cpu_utilization"][0] <= 100.0 and readings["cpu_utilization"][1] == "%"
    assert readings["host_memory_used"][0] > 0
    # a reading right after the previous one would be noise: left out
    assert "cpu_utilization" not in {m for _, m, _, _ in src()}


def test_summarize():
    s = Sampler(1.0, host="h", sources=[Counting()])
    s._tick()
    s._tick()
    summary = summarize(s.samples)
    assert summary["h/gpu0/gpu_power"] == {"min": 101.0, "max": 102.0, "mean": 101.5, "count": 2.0}


def _events(interval, np=2):
    events = []
    outcome = execute(Job(slow_steps, {"steps": 3, "sleep": 0.1},
                          RankOptions(device="cpu", timeout=60, telemetry_interval=interval), np=np),
                      events.append)
    assert outcome.status == "complete"
    return events


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


class _Quiet:
    def on_event(self, event):
        pass

    def finish(self, run, measurements):
        pass


def test_run_job_stores_telemetry_and_inventory(db):
    job = Job(slow_steps, {"steps": 2, "sleep": 0.05}, RankOptions(device="cpu", timeout=60, telemetry_interval=0.05), np=2)
    result = run_job(job, "selftest", ["test"], _Quiet(), db=db, announce=lambda _t: None)
    assert result.exit_code == 0
    with Store.open(db) as store:
        run = store.get_run(result.run.id)
        tel = store.telemetry(run.id)
    assert run.meta["inventory"] and run.meta["telemetry"]["samples"] == len(tel) > 0
    assert all(s.unit in ("%", "MHz", "bytes") for s in tel)


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


def test_two_hosts_under_a_launcher(tmp_path):
    """Two processes started as a launcher would (torchrun's variables), each its own 'host':
    rank 0 ends up with both hosts' inventories and telemetry."""
    import json
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tests_dir = os.path.join(os.path.dirname(__file__), "helpers")   # rankfns
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


def test_cli_option_stores_telemetry(db, capsys):
    from clusterbench.cli import main

    with pytest.raises(SystemExit) as e:
        main(["coll", "all_reduce", "-b", "1K", "-e", "1K", "-n", "2", "-w", "1", "--np", "2", "--device", "cpu",
              "--telemetry-interval", "0.05", "--db", db, "--json"])
    assert e.value.code == 0
    with Store.open(db) as store:
        (run,) = store.list_runs()
        assert run.meta["telemetry"]["interval_s"] == 0.05
        assert len(store.telemetry(run.id)) == run.meta["telemetry"]["samples"] > 0
    with pytest.raises(SystemExit) as e:
        main(["coll", "all_reduce", "--telemetry-interval", "-1", "--db", db])
    assert e.value.code == 2 and "--telemetry-interval" in capsys.readouterr().err


def test_one_sampler_per_host_is_kept(monkeypatch):
    """Under a launcher that sets no local rank every rank samples; rank 0 keeps one per host."""
    from types import SimpleNamespace

    from clusterbench.ranks import hostinfo as ranks
    from clusterbench.store import TelemetrySample

    def rows(host):
        return ([TelemetrySample(1.0, "cpu_utilization", 5.0, "%", host, "")], {}, 0.001)

    monkeypatch.setattr(ranks, "_gather", lambda ctx, obj: [rows("a"), rows("a"), rows("b"), None])
    emitted = []
    ctx = SimpleNamespace(options=RankOptions(telemetry_interval=1.0), is_root=True,
                          telemetry=lambda samples: emitted.append(("telemetry", samples)),
                          meta=lambda data: emitted.append(("meta", data)))
    ranks.finish_sampler(ctx, None)
    (samples,) = [d for k, d in emitted if k == "telemetry"]
    assert sorted(s.host for s in samples) == ["a", "b"]
    (meta,) = [d for k, d in emitted if k == "meta"]
    assert meta["telemetry"]["samples"] == 2 and meta["telemetry"]["sampler_cpu_s"] == 0.002


def test_overrun_slots_are_skipped_not_caught_up():
    """A tick that ran past several slots (or a suspended machine) went on with the missed
    slots back to back, a burst of samples of one moment."""
    from clusterbench.telemetry.sampler import next_slot
    assert next_slot(0.0, 1.0, 1, 1.2) == 2      # on time: the next slot
    assert next_slot(0.0, 1.0, 1, 5.5) == 6      # slots 2-5 overran: skipped
    assert next_slot(0.0, 1.0, 1, 2.0) == 2      # slot 2 is due now: taken at once
    assert next_slot(10.0, 0.5, 3, 10.1) == 4    # never back to a slot already taken
