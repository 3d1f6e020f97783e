"""Odd stored and read values in the environment, telemetry and metrics paths: params whose
names are no valid Prometheus label, inventories of another shape imported with a run, and the
max-int sentinels AMD SMI answers for counters a GPU does not fill."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from gpu_fakes import fake_amdsmi as _fake_amdsmi
from judge_helpers import cli

from clusterbench.envinfo.gpulib import AmdSmi
from clusterbench.records import Measurement, Run
from clusterbench.report import openmetrics
from clusterbench.store import Store

# Prometheus' label name grammar; a name starting with "__" is reserved for its own use.
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
ODD_PARAMS = {"bytes": 8, "placement": "in", "": "empty", "__name__": "renamed", "benchmark": "a param",
              "a-b": "dash", "a.b": "dot", "é": 'ü"\\\n'}


def _gauges() -> list[openmetrics.Gauge]:
    run = Run("coll", hosts=["h1"], started_at="2026-01-01T00:00:00+00:00")
    return openmetrics.collect([(run, [Measurement("all_reduce", "busbw", 1.0, "GB/s", dict(ODD_PARAMS))])])


def _busbw_labels(gauges: list[openmetrics.Gauge]) -> dict[str, str]:
    (g,) = [g for g in gauges if g.name == "clusterbench_collectives_busbw_bytes_per_second"]
    (values,) = g.samples
    return {k: v for k, v in zip(g.labels, values) if v != ""}


def test_every_param_becomes_a_valid_label_that_overwrites_no_other():
    labels = _busbw_labels(_gauges())
    for name in labels:
        assert LABEL_NAME.match(name) and not name.startswith("__"), name
    assert labels["benchmark"] == "all_reduce" and labels["host"] == "h1"
    # every param's value is kept, none replaced by another that reads as the same name
    assert sorted(labels.values()) == sorted(["all_reduce", "h1", *(str(v) for v in ODD_PARAMS.values())])


def test_text_with_odd_params_passes_promtool():
    text = openmetrics.render_text(_gauges())
    assert '{="' not in text and "__name__=" not in text
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian package prometheus) is not installed")
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_served_exposition_with_odd_params_parses():
    parser = pytest.importorskip("prometheus_client.parser", reason="prometheus-client (the metrics extra)")
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(openmetrics.StoreCollector(_gauges, lambda _e: None))
    fams = {f.name: f for f in parser.text_string_to_metric_families(generate_latest(registry).decode())}
    (sample,) = fams["clusterbench_collectives_busbw_bytes_per_second"].samples
    assert sample.name == "clusterbench_collectives_busbw_bytes_per_second"
    assert sample.labels["benchmark"] == "all_reduce" and 'ü"\\\n' in sample.labels.values()


@pytest.mark.parametrize("inventory", [{"gpu01": "not an inventory"}, ["gpu01"], "text",
                                       {"gpu01": {"virtualization": "docker", "cpu": {"numa_nodes": [{"cpus": "0-3"}]},
                                                  "nics": [{"name": "eth0", "speed_mbps": "fast"}],
                                                  "memory": {"total_bytes": -5}, "pcie": [{"bdf": "x"}],
                                                  "rdma": [{"name": "r", "ports": [{"state": "DOWN"}]}],
                                                  "versions": "1.0"}}])
def test_env_show_and_diff_read_an_inventory_of_another_shape(capsys, db, inventory):
    # an imported run line carries any meta its file held
    with Store.open(db) as s:
        s.save_run(Run("coll", hosts=["gpu01"], started_at="2026-01-01T00:00:00+00:00", versions={"torch": "2.6"},
                       meta={"inventory": inventory}), [])
        s.save_run(Run("coll", hosts=["gpu02"], started_at="2026-01-02T00:00:00+00:00", versions={"torch": "2.7"}), [])
    rc, out, err = cli(capsys, "env", "show", "1", "--db", db)
    assert rc == 0 and err == "" and "gpu01" in out and "memory" in out
    rc, out, err = cli(capsys, "env", "diff", "1", "2", "--json", "--db", db)
    assert rc == 0 and err == "", err
    lines = [json.loads(line) for line in out.splitlines()]
    assert {"key": "versions.torch", "a": "2.6", "b": "2.7"}.items() <= next(
        d for d in lines if d.get("key") == "versions.torch").items()


def test_amdsmi_max_int_sentinels_are_no_readings():
    fake = _fake_amdsmi()
    fake.amdsmi_get_power_info = lambda h: {"current_socket_power": 0xFFFF, "average_socket_power": 650}
    fake.amdsmi_get_temp_metric = lambda h, t, m: 0xFFFF
    fake.amdsmi_get_gpu_activity = lambda h: {"gfx_activity": 0xFFFF, "umc_activity": 0xFFFF}
    fake.amdsmi_get_gpu_memory_usage = lambda h, t: 0xFFFFFFFFFFFFFFFF
    got = {m: v for _, m, v, _u in AmdSmi(fake).sample()}
    assert got["gpu_power"] == 650.0   # the current power is unfilled: the average stands in
    assert "gpu_temperature" not in got and "gpu_utilization" not in got and "gpu_memory_used" not in got
