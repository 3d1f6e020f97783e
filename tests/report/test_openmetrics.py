"""Tests of clusterbench.report.openmetrics: stored results as Prometheus gauges."""

from __future__ import annotations

import http.client
import math
import re
import socket
import time

import pytest
from fleet_metrics import BUSBW, ODD_PARAMS, TRIAD, _gauges, _request
from prom_format import prom_parser

from clusterbench.families import FAMILIES
from clusterbench.records import Measurement, Run
from clusterbench.report import openmetrics
from clusterbench.report.openmetrics import in_base_unit

parser_copy_metrics = pytest.importorskip("prometheus_client.parser")


ODD = ['q"uote', "back\\slash", "new\nline", "uni©ode✓", "trail\\"]


def _families(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in parser_copy_metrics.text_string_to_metric_families(text)}


@pytest.fixture
def server():
    errors: list[str] = []
    gauges = openmetrics.collect([(Run("coll", hosts=ODD, started_at="2026-01-01T00:00:00Z", id=1),
                                   [Measurement("all_reduce", "busbw", 2.0, "GB/s", {"bytes": 8})])])
    srv = openmetrics.serve(lambda: gauges, 0, "127.0.0.1", errors.append, idle_timeout=0.5, deadline=2.0,
                            max_clients=4)
    try:
        yield srv.server_address[1], errors
    finally:
        srv.shutdown()
        srv.server_close()


def _closed_by_server(sock: socket.socket, send: bytes = b"") -> bool:
    """Whether the server closes ``sock`` within 10 s, ``send`` going out every 0.1 s meanwhile."""
    sock.settimeout(0.1)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            if send:
                sock.sendall(send)
            if sock.recv(1000) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


# Prometheus' label name grammar; a name starting with "__" is reserved for its own use.
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _busbw_labels(gauges: list[openmetrics.Gauge]) -> dict[str, str]:
    (g,) = [g for g in gauges if g.name == "clusterbench_collectives_busbw_bytes_per_second"]
    (values,) = g.samples
    return {k: v for k, v in zip(g.labels, values) if v != ""}


def test_openmetrics_value_in_base_unit_is_exact_when_not_converted():
    assert in_base_unit(123456789012345678.0, 1.0) == 123456789012345678.0
    assert in_base_unit(4269.126275, 1e9) == 4269126275000.0
    assert in_base_unit(1.7e308, 1e9) == math.inf   # 1.7e317 B/s: past every float


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


def test_serve_refuses_an_address_no_resolver_encodes():
    # the CLI checks --addr first; the API said UnicodeError (a label past 63 characters)
    from clusterbench.errors import UsageError
    from clusterbench.report import openmetrics

    with pytest.raises(UsageError, match="not a host name or address"):
        openmetrics.serve(lambda: [], 9, "a" * 70, lambda _e: None)


def test_each_host_of_a_multi_node_result_is_a_series_of_its_own():
    m = Measurement("all_reduce", "busbw", 2.0, "GB/s", {"bytes": 8, "nodes": 7})
    runs = [(Run("coll", hosts=["gpu01,gpu02"], started_at="2026-01-01T00:00:00Z", id=1), [m]),
            (Run("coll", hosts=["gpu01", "gpu02"], started_at="2026-01-02T00:00:00Z", id=2), [m]),
            (Run("coll", hosts=[*ODD, "a,b"], started_at="2026-01-03T00:00:00Z", id=3), [m])]
    fams = _families(openmetrics.render_text(openmetrics.collect(runs)))
    busbw = {(s.labels["host"], s.labels.get("nodes")) for s in fams[BUSBW]}
    # one name holding a comma is one host, apart from the two-node result on gpu01 and gpu02
    assert busbw == {("gpu01,gpu02", None), ("gpu01", "2"), ("gpu02", "2"),
                     *((h, "6") for h in [*ODD, "a,b"])}
    # a param named as one of the gauge's own labels is labelled param_<name>
    assert {s.labels["param_nodes"] for s in fams[BUSBW]} == {"7"}
    stamps = {s.labels["host"] for s in fams[openmetrics.TIMESTAMP]}
    assert stamps == {"gpu01,gpu02", "gpu01", "gpu02", *ODD, "a,b"}


def test_metrics_are_on_metrics_only_and_head_answers_without_a_body(server):
    port, errors = server
    status, _, body = _request(port, "GET", "/metrics")
    fams = _families(body.decode())
    assert status == 200 and {s.labels["host"] for s in fams[BUSBW]} == set(ODD)
    for path in ("/foo", "/metrics/x", "/favicon.ico"):
        assert _request(port, "GET", path)[0] == 404, path
    assert _request(port, "GET", "/")[0] == 200
    status, headers, body = _request(port, "HEAD", "/metrics")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 100
    status, headers, _ = _request(port, "POST", "/metrics")
    assert status == 405 and "GET" in headers["Allow"]
    assert errors == []


def test_a_client_that_stalls_or_trickles_is_dropped_and_others_are_served(server):
    port, errors = server
    idle = socket.create_connection(("127.0.0.1", port), timeout=5)
    drip = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        idle.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")   # headers never finished
        drip.sendall(b"GET /metrics HTTP/1.1\r\n")
        assert _request(port, "GET", "/metrics")[0] == 200   # served while both hang on
        assert _closed_by_server(idle)
        assert _closed_by_server(drip, send=b"X")            # a header byte at a time: the deadline
    finally:
        idle.close()
        drip.close()
    assert errors == []


def test_every_param_becomes_a_valid_label_that_overwrites_no_other():
    labels = _busbw_labels(_gauges())
    for name in labels:
        assert LABEL_NAME.match(name) and not name.startswith("__"), name
    assert labels["benchmark"] == "all_reduce" and labels["host"] == "h1"
    # every param's value is kept, none replaced by another that reads as the same name
    assert sorted(labels.values()) == sorted(["all_reduce", "h1", *(str(v) for v in ODD_PARAMS.values())])


def test_served_exposition_with_odd_params_parses():
    parser = pytest.importorskip("prometheus_client.parser", reason="prometheus-client (the metrics extra)")
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(openmetrics.StoreCollector(_gauges, lambda _e: None))
    fams = {f.name: f for f in parser.text_string_to_metric_families(generate_latest(registry).decode())}
    (sample,) = fams["clusterbench_collectives_busbw_bytes_per_second"].samples
    assert sample.name == "clusterbench_collectives_busbw_bytes_per_second"
    assert sample.labels["benchmark"] == "all_reduce" and 'ü"\\\n' in sample.labels.values()


def test_only_headline_rows_are_kept_without_a_profile_and_the_gauges_agree():
    run = Run("all_reduce", hosts=["gpu01"], started_at="2026-03-01T02:00:00.000Z", id=1)
    p = {"bytes": 8, "dtype": "float"}
    ms = [Measurement("all_reduce", "busbw", 1.0, "GB/s", p), Measurement("all_reduce", "algbw", 2.0, "GB/s", p),
          Measurement("all_reduce", "time_us", 3.0, "us", p)]
    kept = openmetrics.latest_rows([(run, ms)], openmetrics.is_headline)
    assert [r.row.m.metric for r in kept] == ["busbw"]
    every = openmetrics.latest_rows([(run, ms)])
    assert len(every) == 3
    (g,) = [g for g in openmetrics.collect([(run, ms)]) if g.name == BUSBW]
    assert list(g.samples.values()) == [1e9]


def _scrape(cache) -> dict[str, list]:
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(cache)
    return _families(generate_latest(registry).decode())


def _one_busbw(value: float) -> list[openmetrics.Gauge]:
    return openmetrics.collect([(Run("coll", hosts=["h1"], started_at="2026-01-01T00:00:00Z", id=1),
                                 [Measurement("all_reduce", "busbw", value, "GB/s", {"bytes": 8})])])


def test_a_cache_says_export_success_0_until_its_first_read_and_scrapes_never_read():
    import threading

    release = threading.Event()
    reads: list[int] = []

    def load():
        release.wait(30)
        reads.append(1)
        return _one_busbw(2.0)

    cache = openmetrics.GaugeCache(load, lambda _e: None, refresh=60).start()
    try:
        for _ in range(20):   # scrapes while the first read is under way: answered at once, none reads
            fams = _scrape(cache)
            assert BUSBW not in fams and fams["clusterbench_export_success"][0].value == 0.0
        release.set()
        assert cache.wait_read(30)
        for _ in range(20):
            fams = _scrape(cache)
            assert fams[BUSBW][0].value == 2e9 and fams["clusterbench_export_success"][0].value == 1.0
        assert reads == [1]
    finally:
        cache.stop()


def test_a_cache_reads_again_when_the_store_changed_and_says_a_failed_read():
    token = [0]
    values = iter([1.0, 3.0])
    errors: list[str] = []
    failing = [False]

    def load():
        if failing[0]:
            raise OSError("database gone")
        return _one_busbw(next(values))

    cache = openmetrics.GaugeCache(load, errors.append, changed=lambda: token[0], refresh=0.01, reread=10**9).start()
    try:
        assert cache.wait_read(30)
        assert _scrape(cache)[BUSBW][0].value == 1e9
        reads = cache.reads
        deadline = time.monotonic() + 30
        while cache.reads == reads and time.monotonic() < deadline:   # unchanged: no read
            time.sleep(0.01)
            if time.monotonic() > deadline - 29.5:
                break
        assert cache.reads == reads
        token[0] = 1   # a run was stored
        while _scrape(cache).get(BUSBW, [None])[0] is None or _scrape(cache)[BUSBW][0].value != 3e9:
            assert time.monotonic() < deadline, "the changed store was not read again"
            time.sleep(0.01)
        failing[0] = True
        token[0] = 2
        while _scrape(cache)["clusterbench_export_success"][0].value != 0.0:
            assert time.monotonic() < deadline, "the failed read was not said"
            time.sleep(0.01)
        assert BUSBW not in _scrape(cache) and errors == ["OSError: database gone"]
    finally:
        cache.stop()


def test_a_served_cache_renders_each_read_once_and_each_format_apart():
    token = [0]
    values = iter([1.0, 3.0])
    collected: list[int] = []

    class Counted(openmetrics.GaugeCache):
        def collect(self):
            collected.append(self.generation)
            yield from super().collect()

    cache = Counted(lambda: _one_busbw(next(values)), lambda _e: None, changed=lambda: token[0], refresh=0.01,
                    reread=10**9)
    srv = openmetrics.serve(cache, 0, "127.0.0.1", lambda _e: None)
    cache.start()
    port = srv.server_address[1]
    try:
        assert cache.wait_read(30)
        bodies = {_request(port, "GET", "/metrics")[2] for _ in range(5)}
        assert len(bodies) == 1 and _families(bodies.pop().decode())[BUSBW][0].value == 1e9
        assert collected == [1]   # five scrapes, one rendering
        # a scraper asking for OpenMetrics gets that format, rendered for it
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
        r = conn.getresponse()
        assert r.getheader("Content-Type").startswith("application/openmetrics-text") and r.read().endswith(b"# EOF\n")
        conn.close()
        assert collected == [1, 1]
        token[0] = 1   # a run was stored: the next read's gauges are rendered, once
        deadline = time.monotonic() + 30
        while cache.generation < 2:
            assert time.monotonic() < deadline, "the changed store was not read again"
            time.sleep(0.01)
        for _ in range(3):
            assert _families(_request(port, "GET", "/metrics")[2].decode())[BUSBW][0].value == 3e9
        assert collected == [1, 1, 2]
    finally:
        srv.shutdown()
        srv.server_close()
        cache.stop()


def _null_redop_runs() -> list[tuple[Run, list[Measurement]]]:
    """One row stored three ways, oldest first: its redop null, then absent, then "", with a
    broadcast row (no reduction) beside an all_reduce row whose redop is sum."""
    def run(i: int, redop: dict) -> tuple[Run, list[Measurement]]:
        return (Run("coll", hosts=["h1"], started_at=f"2026-01-0{i}T00:00:00Z", id=i),
                [Measurement("broadcast", "busbw", float(i), "GB/s", {"bytes": 8, **redop, "device": None}),
                 Measurement("all_reduce", "busbw", 10.0 + i, "GB/s", {"bytes": 8, "redop": "sum"})])
    return [run(1, {"redop": None}), run(2, {}), run(3, {"redop": ""})]


def test_a_null_param_is_no_label_and_one_series_with_a_row_without_it():
    text = openmetrics.render_text(openmetrics.collect(_null_redop_runs()))
    assert "None" not in text and '=""' not in text
    samples = _families(text)[BUSBW]
    by_op = {s.labels["benchmark"]: s for s in samples}
    assert len(samples) == 2, samples   # null, absent and "" are one series: the newest value
    assert by_op["broadcast"].value == 3e9 and "redop" not in by_op["broadcast"].labels
    assert "device" not in by_op["broadcast"].labels
    assert by_op["all_reduce"].labels["redop"] == "sum"


def test_a_null_param_is_an_empty_label_on_every_row_served():
    # prometheus-client writes every label of a family on every sample: the absent one is ""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(openmetrics.StoreCollector(lambda: openmetrics.collect(_null_redop_runs()),
                                                 lambda _e: None))
    text = generate_latest(registry).decode()
    assert "None" not in text
    samples = _families(text)[BUSBW]
    assert {s.labels["benchmark"]: s.labels["redop"] for s in samples} == {"broadcast": "", "all_reduce": "sum"}
    assert len({frozenset(s.labels) for s in samples}) == 1   # one label set for the family


def test_a_null_param_stored_is_no_label_in_the_default_view(db):
    from clusterbench.store import Store

    with Store.open(db) as store:
        for run, ms in _null_redop_runs():
            run.id = None
            store.save_run(run, ms)
    for every_row in (False, True):
        gauges = openmetrics.from_store(db, [], None, None, every_row=every_row)
        text = openmetrics.render_text(gauges)
        assert "None" not in text, (every_row, text)
        samples = _families(text)[BUSBW]
        by_op = {s.labels["benchmark"]: s for s in samples}
        assert len(samples) == 2 and by_op["broadcast"].value == 3e9, (every_row, samples)
        assert "redop" not in by_op["broadcast"].labels and by_op["all_reduce"].labels["redop"] == "sum"
