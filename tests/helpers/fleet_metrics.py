"""A fleet's OpenMetrics: the gauges' names, real logs stored night after night, the Grafana
dashboard's queries, the text format parsed, and serve-metrics asked over HTTP."""

from __future__ import annotations

import http.client
import json

from fleet_helpers import night, real_measurements, store_history
from paths import ROOT
from prom_format import prom_parser, prom_text

from clusterbench.records import Measurement, Run
from clusterbench.report import openmetrics
from clusterbench.store import Store

DASHBOARD = ROOT / "docs" / "grafana" / "clusterbench-fleet.json"


BUSBW = "clusterbench_collectives_busbw_bytes_per_second"


TRIAD = "clusterbench_stream_bandwidth_bytes_per_second"


LOGS = ["nccl-tests/a3mega-h100-2node-all_reduce.txt", "babelstream/seed-mi300x-hip-8gpu-mpi.txt",
        "transferbench/seed-mi300x-p2p.txt", "rocblas-bench/seed-mi300x-sgemm-4000.txt"]


def _fleet(db: str) -> None:
    """Two nights of real logs on three nodes; gpu02's busbw and one GPU's Triad are low on the
    second night, and the second night's preflight of gpu03 failed."""
    base = [m for path in LOGS for m in real_measurements(path)]

    def f(h, i, m):
        if i == 1 and h == "gpu02" and m.metric == "busbw":
            return 0.5
        if i == 1 and h == "gpu01" and m.benchmark == "stream" and m.params.get("device") == "1":
            return 0.5
        return 1.0

    store_history(db, base, ["gpu01", "gpu02", "gpu03"], 2, cv=0.0, factor=f)
    with Store.open(db) as s:
        s.save_run(Run("preflight", hosts=["gpu03"], started_at=night(1), tags={"node": "gpu03"},
                       meta={"preflight": {"status": "fail", "host": "gpu03", "checks": [
                           {"check": "gpu_count", "status": "fail", "summary": "7 GPU(s), expected 8"},
                           {"check": "pcie_link", "status": "ok", "summary": "fine"}]}}), [])


def _families(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in prom_parser.text_string_to_metric_families(text)}


def _value(samples, **labels) -> float:
    found = [s.value for s in samples if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (labels, found)
    return found[0]


def _dashboard_queries() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in dash["templating"]["list"]]
    return exprs


def _text_families(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in prom_text.text_string_to_metric_families(text)}


def _request(port: int, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


ODD_PARAMS = {"bytes": 8, "placement": "in", "": "empty", "__name__": "renamed", "benchmark": "a param",
              "a-b": "dash", "a.b": "dot", "é": 'ü"\\\n'}


def _gauges() -> list[openmetrics.Gauge]:
    run = Run("coll", hosts=["h1"], started_at="2026-01-01T00:00:00+00:00")
    return openmetrics.collect([(run, [Measurement("all_reduce", "busbw", 1.0, "GB/s", dict(ODD_PARAMS))])])
