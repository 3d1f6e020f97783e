"""Tests of clusterbench.telemetry.sampler: a background thread that samples the host and its GPUs while a benchmark runs."""

from types import SimpleNamespace

import pytest
from process_helpers import wait_until

from clusterbench.telemetry import sampler
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
    wait_until(lambda: src.n >= 2, 30, "a tick on the interval grid after the first")
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


def test_cpu_source_reads_psutil(monkeypatch):
    # the source's own clock, set by the test: "right after" must not depend on this machine's load
    now = [1000.0]
    monkeypatch.setattr(sampler, "time", SimpleNamespace(monotonic=lambda: now[0]))
    src = CpuSource()
    now[0] += 0.05
    readings = {m: (v, u) for _, m, v, u in src()}
    assert 0.0 <= readings["cpu_utilization"][0] <= 100.0 and readings["cpu_utilization"][1] == "%"
    assert readings["host_memory_used"][0] > 0
    # a reading right after the previous one would be noise: left out
    now[0] += 0.001
    assert "cpu_utilization" not in {m for _, m, _, _ in src()}
    now[0] += 0.05
    assert "cpu_utilization" in {m for _, m, _, _ in src()}


def test_summarize():
    s = Sampler(1.0, host="h", sources=[Counting()])
    s._tick()
    s._tick()
    summary = summarize(s.samples)
    assert summary["h/gpu0/gpu_power"] == {"min": 101.0, "max": 102.0, "mean": 101.5, "count": 2.0}


def test_overrun_slots_are_skipped_not_caught_up():
    """A tick that ran past several slots (or a suspended machine) went on with the missed
    slots back to back, a burst of samples of one moment."""
    from clusterbench.telemetry.sampler import next_slot
    assert next_slot(0.0, 1.0, 1, 1.2) == 2      # on time: the next slot
    assert next_slot(0.0, 1.0, 1, 5.5) == 6      # slots 2-5 overran: skipped
    assert next_slot(0.0, 1.0, 1, 2.0) == 2      # slot 2 is due now: taken at once
    assert next_slot(10.0, 0.5, 3, 10.1) == 4    # never back to a slot already taken
