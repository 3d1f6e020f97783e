"""The Prometheus feed: `export openmetrics` text that promtool accepts, `serve-metrics` scraped by
a real Prometheus (Debian's, started here on localhost) whose PromQL answers with the stored
value, and a Grafana dashboard that queries only what the exporter emits."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from fleet_helpers import night, real_measurements, store_history
from judge_helpers import cli
from process_helpers import free_port

from clusterbench.families import FAMILIES
from clusterbench.records import Measurement, Run
from clusterbench.report import openmetrics
from clusterbench.store import Store

prom_parser = pytest.importorskip("prometheus_client.parser", reason="prometheus-client (the metrics extra)")
ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "docs" / "grafana" / "clusterbench-fleet.json"
BUSBW = "clusterbench_collectives_busbw_bytes_per_second"
TRIAD = "clusterbench_stream_bandwidth_bytes_per_second"
LOGS = ["nccl-tests/a3mega-h100-2node-all_reduce.txt", "babelstream/seed-mi300x-hip-8gpu-mpi.txt",
        "transferbench/seed-mi300x-p2p.txt", "rocblas-bench/seed-mi300x-sgemm-4000.txt"]


def _which(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/bin/{name}", f"/usr/sbin/{name}") if os.path.exists(p)), None)


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


def test_export_is_the_latest_state_in_base_units(capsys, db):
    _fleet(db)
    rc, out, err = cli(capsys, "export", "openmetrics", "--profile", "amd-mi300x-oem", "--db", db)
    assert rc == 0, err
    fams = _families(out)
    a3 = {m.params["placement"]: m.value for m in real_measurements(LOGS[0])
          if m.metric == "busbw" and m.params["bytes"] == 8589934592}
    busbw = fams[BUSBW]
    assert _value(busbw, host="gpu01", bytes="8589934592", placement="in") == pytest.approx(a3["in"] * 1e9)
    # the second night replaced the first: gpu02 shows the low value
    assert _value(busbw, host="gpu02", bytes="8589934592", placement="in") == pytest.approx(a3["in"] * 0.5e9)
    triad = {s.labels["device"]: s.value for s in fams[TRIAD] if s.labels["kernel"] == "Triad"
             and s.labels["host"] == "gpu01"}
    assert set(triad) == {"0", "1"} and triad["1"] < 0.6 * triad["0"]
    assert "clusterbench_gemm_flop_per_second" in fams
    crit = fams[openmetrics.CRITERION]
    assert _value(crit, host="gpu02", criterion="RCCL all_reduce in-place busbw at 8 GiB") == 0.0
    assert _value(crit, host="gpu01", criterion="RCCL all_reduce in-place busbw at 8 GiB") == 1.0
    assert _value(crit, host="gpu01", criterion="BabelStream Triad") == 0.0
    assert not [s for s in crit if s.labels["criterion"] == "no degraded GPU in BabelStream Triad"]  # skipped
    pre = fams[openmetrics.PREFLIGHT]
    assert _value(pre, host="gpu03", check="gpu_count") == 0.0 and _value(pre, host="gpu03", check="pcie_link") == 1.0
    ts = fams[openmetrics.TIMESTAMP]
    assert _value(ts, host="gpu01", benchmark="import") == pytest.approx(1740798000 + 86400)
    # names: prefix, base unit at the end, no counter suffix; labels snake_case
    for name in fams:
        assert name.startswith("clusterbench_") and not name.endswith("_total")
    for s in fams["clusterbench_gemm_flop_per_second"]:
        assert "trans_a" in s.labels and "transA" not in s.labels


def test_selectors_and_since_choose_the_runs(capsys, db):
    _fleet(db)
    rc, out, _ = cli(capsys, "export", "openmetrics", "--since", night(1)[:10], "--db", db)
    busbw = _families(out)[BUSBW]
    assert {s.labels["host"] for s in busbw} == {"gpu01", "gpu02", "gpu03"}
    rc, out, _ = cli(capsys, "export", "openmetrics", "node=gpu01", "--db", db)
    assert {s.labels["host"] for s in _families(out)[BUSBW]} == {"gpu01"}
    rc, out, err = cli(capsys, "export", "openmetrics", "node=nosuch", "--db", db)
    assert rc == 2 and err.count("\n") == 1


def test_textfile_is_written_atomically_and_promtool_accepts_it(capsys, db, tmp_path):
    _fleet(db)
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    out = textfiles / "clusterbench.prom"
    rc, _, err = cli(capsys, "export", "openmetrics", "--profile", "amd-mi300x-oem", "--db", db, "-o", str(out))
    assert rc == 0, err
    assert [p.name for p in textfiles.iterdir()] == ["clusterbench.prom"]   # no temporary left
    assert _families(out.read_text())
    promtool = _which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian package prometheus) is not installed")
    r = subprocess.run([promtool, "check", "metrics"], input=out.read_text(), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_text_format_escapes_label_values():
    g = openmetrics.Gauge("clusterbench_x_bytes", "help with \\ and\nnewline")
    g.add({"host": 'a"b\\c\nd', "benchmark": "x"}, 1.5)
    g.add({"host": "e", "benchmark": "x", "extra": "y"}, float("nan"))
    text = openmetrics.render_text([g])
    fams = list(prom_parser.text_string_to_metric_families(text))
    samples = fams[0].samples
    assert samples[0].labels["host"] == 'a"b\\c\nd' and samples[0].value == 1.5
    assert samples[1].labels == {"host": "e", "benchmark": "x", "extra": "y"}


def test_every_headline_has_a_prometheus_name():
    names = openmetrics.headline_names()
    for f in FAMILIES:
        if f.headline is not None and f.headline.unit in openmetrics.BASE_UNITS:
            name = openmetrics.metric_name(f, f.headline.name, f.headline.unit)[0]
            assert re.fullmatch(r"clusterbench_[a-z0-9_]+", name) and name in names
    assert BUSBW in names and TRIAD in names and "clusterbench_train_tokens_per_second" in names


def _dashboard_queries() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in dash["templating"]["list"]]
    return exprs


def test_dashboard_parses_and_queries_only_exported_metrics(capsys, db):
    dash = json.loads(DASHBOARD.read_text())
    assert dash["panels"] and all(p["targets"] for p in dash["panels"])
    titles = " ".join(p["title"] for p in dash["panels"])
    for what in ("busbw per node", "STREAM Triad per GPU", "Failed criteria", "Trend of the 5 worst"):
        assert what in titles
    _fleet(db)
    rc, out, _ = cli(capsys, "export", "openmetrics", "--profile", "amd-mi300x-oem", "--db", db)
    labels: dict[str, set[str]] = {}
    for fam in prom_parser.text_string_to_metric_families(out):
        for s in fam.samples:
            labels.setdefault(s.name, set()).update(s.labels)
    exported = openmetrics.exported_names()
    for expr in _dashboard_queries():
        for name, selector in re.findall(r"(clusterbench_[a-z0-9_]+)(\{[^}]*\})?", expr):
            assert name in exported, (name, expr)
            if name == openmetrics.EXPORT_OK:
                continue
            assert name in labels, f"{name} is not in an export of real logs"
            for label in re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", selector):
                assert label in labels[name], (label, name)


# -- a real Prometheus scraping serve-metrics ------------------------------------------------------

def _get(url: str, timeout: float = 5) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def _wait(fn, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            got = fn()
            if got:
                return got
        except OSError as e:
            last = e
        time.sleep(0.5)
    pytest.fail(f"{what} within {timeout:g} s (last error: {last})")


@pytest.fixture
def serve(db, tmp_path):
    """serve-metrics on a free port over the fleet history; yields (port, process)."""
    _fleet(db)
    port = free_port()
    log = open(tmp_path / "serve.log", "w")
    p = subprocess.Popen([sys.executable, "-m", "clusterbench", "serve-metrics", "--port", str(port),
                          "--db", db, "--profile", "amd-mi300x-oem"], stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait(lambda: "clusterbench_" in _get(f"http://127.0.0.1:{port}/metrics"), "serve-metrics answering")
        yield port, p
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()


def test_serve_metrics_reads_the_database_at_each_scrape_and_stops_on_sigterm(serve, db):
    port, proc = serve
    text = _get(f"http://127.0.0.1:{port}/metrics")
    fams = _families(text)
    assert _value(fams[openmetrics.EXPORT_OK], ) == 1.0
    assert not [s for s in fams[BUSBW] if s.labels["host"] == "gpu09"]
    with Store.open(db) as s:   # a run stored now is on the next scrape
        s.save_run(Run("coll", hosts=["gpu09"], started_at=night(2)),
                   [Measurement("all_reduce", "busbw", 123.0, "GB/s", {"bytes": 8589934592, "placement": "in"})])
    fams = _families(_get(f"http://127.0.0.1:{port}/metrics"))
    assert _value(fams[BUSBW], host="gpu09") == pytest.approx(123e9)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0


def test_serve_metrics_bad_input_is_one_line_before_listening(capsys, db):
    rc, _, err = cli(capsys, "serve-metrics", "--port", str(free_port()), "nosuch=tag", "--db", db)
    assert rc == 2 and err.count("\n") == 1 and "no results database" in err   # nothing stored there yet
    _fleet(db)
    rc, _, err = cli(capsys, "serve-metrics", "--port", str(free_port()), "nosuch=tag", "--db", db)
    assert rc == 2 and err.count("\n") == 1 and "matches no run" in err


def test_prometheus_scrapes_serve_metrics_and_promql_returns_the_stored_value(serve, tmp_path):
    prometheus = _which("prometheus")
    if prometheus is None:
        pytest.skip("prometheus (Debian package prometheus) is not installed")
    port, _ = serve
    web = free_port()
    conf = tmp_path / "prom.yml"
    conf.write_text("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                    "scrape_configs: [{job_name: clusterbench, static_configs: "
                    f"[{{targets: ['127.0.0.1:{port}']}}]}}]\n")
    log = open(tmp_path / "prometheus.log", "w")
    p = subprocess.Popen([prometheus, f"--config.file={conf}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                          f"--web.listen-address=127.0.0.1:{web}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        api = f"http://127.0.0.1:{web}/api/v1"

        def query(q: str) -> list:
            doc = json.loads(_get(f"{api}/query?{urllib.parse.urlencode({'query': q})}"))
            assert doc["status"] == "success", doc
            return doc["data"]["result"]

        q = f'{BUSBW}{{host="gpu01", bytes="8589934592", placement="in"}}'
        result = _wait(lambda: query(q), "Prometheus returning the scraped busbw")
        stored = next(m.value for m in real_measurements(LOGS[0]) if m.metric == "busbw"
                      and m.params["bytes"] == 8589934592 and m.params["placement"] == "in")
        assert len(result) == 1 and float(result[0]["value"][1]) == pytest.approx(stored * 1e9)
        assert result[0]["metric"]["job"] == "clusterbench"
        failed = query(f"{openmetrics.CRITERION} == 0")
        assert {(r["metric"]["host"], r["metric"]["criterion"]) for r in failed} >= {
            ("gpu02", "RCCL all_reduce in-place busbw at 8 GiB"), ("gpu01", "BabelStream Triad")}
        # every query of the Grafana dashboard is valid PromQL and the panels have data
        for expr in _dashboard_queries():
            if expr.startswith("label_values("):
                continue
            q = expr.replace("$op", "all_reduce").replace("$bytes", "8589934592")
            assert query(q), q
    finally:
        p.terminate()
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
        log.close()


def test_serve_refuses_an_address_no_resolver_encodes():
    # the CLI checks --addr first; the API said UnicodeError (a label past 63 characters)
    from clusterbench.errors import UsageError
    from clusterbench.report import openmetrics

    with pytest.raises(UsageError, match="not a host name or address"):
        openmetrics.serve(lambda: [], 9, "a" * 70, lambda _e: None)
