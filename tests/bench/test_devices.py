"""Tests of clusterbench.bench.devices: which device a node-benchmark rank works on, and how it times device work."""

from __future__ import annotations

import pytest

from clusterbench.bench.devices import device_indices, parse_devices
from clusterbench.errors import UsageError


def test_gpu_timer_queues_the_call_behind_a_device_spin(monkeypatch):
    """The start event is recorded while the device spins, so the launch cost is not timed."""
    import torch

    from clusterbench.bench import devices

    order = []

    class Event:
        def __init__(self, enable_timing=False):
            self.name = "start" if not any(o == "new start" for o in order) else "end"
            order.append(f"new {self.name}")

        def record(self):
            order.append(f"record {self.name}")

        def synchronize(self):
            order.append(f"sync {self.name}")

        def elapsed_time(self, other):
            return 2.5

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: order.append(f"spin {cycles}"), raising=False)
    time_fn = devices.timer(torch.device("cuda", 0))
    assert time_fn(lambda: order.append("kernel")) == 0.0025
    assert order[2:] == [f"spin {devices.LAUNCH_COVER_CYCLES}", "record start", "kernel", "record end", "sync end"]


def test_the_devices_form_is_judged_apart_from_the_count():
    assert device_indices(None) is None and device_indices(" ALL ") is None and device_indices("") is None
    assert device_indices("2, 0") == [2, 0] and device_indices("007") == [7]
    assert parse_devices("all", "cuda", 2) == [0, 1] and parse_devices("1", "cuda", 2) == [1]
    for bad in ("²", "٣", "1" * 5000, "0,0", "0,,1", "+1", "1.0"):
        with pytest.raises(UsageError, match="^invalid --devices"):
            parse_devices(bad, "cuda", 8)
    with pytest.raises(UsageError, match=r"^--devices 2: out of range, this host has 2 GPU\(s\)$"):
        parse_devices("0,2", "cuda", 2)
    with pytest.raises(UsageError) as e:   # a megabyte-long list is quoted by its start
        parse_devices("x" * 1_000_000, "cuda", 8)
    assert len(str(e.value)) < 200
