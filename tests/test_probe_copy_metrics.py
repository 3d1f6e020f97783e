"""Probe of ``results copy`` from a hand-edited source and of the Prometheus feed
(``export openmetrics``, ``serve-metrics``) over real HTTP: each bad input is one line, nothing
half-written, no traceback; no client holds the server; every label reads back as one host."""

from __future__ import annotations

import http.client
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from judge_helpers import cli

from clusterbench.records import Measurement, Run
from clusterbench.report import openmetrics
from clusterbench.store import Store
from clusterbench.store.copy import copy_databases

parser = pytest.importorskip("prometheus_client.parser")
DEEP = "[" * 3000 + "]" * 3000
BUSBW = "clusterbench_collectives_busbw_bytes_per_second"


def _source(path: Path, runs: int = 2) -> str:
    with Store.open(path) as s:
        for i in range(runs):
            s.save_run(Run("coll", hosts=[f"h{i}"], started_at=f"2026-01-0{i + 1}T00:00:00.000Z"),
                       [Measurement("all_reduce", "busbw", 1.5 + i, "GB/s", {"bytes": 8})])
    return str(path)


def _edit(db: str, sql: str, *args: object) -> None:
    con = sqlite3.connect(db)
    with con:
        con.execute(sql, args)
    con.close()


BAD_PACKS = [
    ("body", '{"k":' + DEEP + ',"p":[],"r":[]}', "nested more than"),
    ("body", "not json", "not JSON"),
    ("body", "[1, 2]", "not a JSON object"),
    ("body", '{"k":[[1]],"p":[],"r":[]}', "keys are not"),          # was copied as benchmark 1
    ("body", '{"k":[["a","b","c"]],"p":[{}],"r":[[0,3,1.0]]}', "records are not"),
    ("body", b"\x00\xff", "bytes, not text"),
    ("format", "zzz", "unknown measurement pack format"),               # was copied as rows
    ("count", "x", "record count is not a number"),
]


@pytest.mark.parametrize("column, value, why", BAD_PACKS)
def test_a_copy_of_unreadable_measurements_is_one_line_naming_the_run(capsys, tmp_path, column, value, why):
    src = _source(tmp_path / "src.db")
    _edit(src, f"UPDATE measurement_packs SET {column}=? WHERE run_id=2", value)
    dest = tmp_path / "dest.db"
    rc, out, err = cli(capsys, "results", "copy", "--from", src, "--to", dest)
    assert rc == 2 and err.count("\n") == 1 and "internal error" not in err, err
    assert f"run 2 of {src} is not copied: unreadable measurements: " in err and why in err, err
    assert out.startswith("run 1: copied as run 1")
    with Store.open(dest) as s:   # the run before is whole, nothing of the bad one
        assert [r.hosts for r in s.list_runs()] == [["h0"]]
        assert s._query("SELECT count(*) FROM measurement_packs")[0][0] == 1
        assert s._query("SELECT count(*) FROM run_benchmarks")[0][0] == 1


@pytest.mark.parametrize("sql", [
    "UPDATE measurement_packs SET body='not json'",
    "UPDATE runs SET meta='{'",
])
def test_a_copy_that_copies_nothing_makes_no_destination(tmp_path, sql):
    src = _source(tmp_path / "src.db", runs=1)
    _edit(src, sql)
    dest = tmp_path / "dest.db"
    with pytest.raises(Exception, match="run 1") as e:
        copy_databases(src, dest)
    assert type(e.value).__name__ == "StoreError"
    assert not list(tmp_path.glob("dest.db*"))


def test_copy_databases_copies_and_makes_the_destination_as_needed(tmp_path):
    src = _source(tmp_path / "src.db")
    dest = tmp_path / "dest.db"
    assert copy_databases(src, dest).copied == 2
    again = copy_databases(src, dest)   # the destination is there now: every run is skipped
    assert (again.copied, again.skipped) == (0, 2)
    empty = tmp_path / "empty.db"
    Store.open(empty).close()
    assert copy_databases(empty, tmp_path / "new.db").copied == 0 and (tmp_path / "new.db").is_file()


# -- the host label --------------------------------------------------------------------------

ODD = ['q"uote', "back\\slash", "new\nline", "uni©ode✓", "trail\\"]


def _families(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in parser.text_string_to_metric_families(text)}


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


# -- the HTTP server ---------------------------------------------------------------------------

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


def _request(port: int, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


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


def test_serve_metrics_stops_on_a_signal_in_one_line(tmp_path):
    db = _source(tmp_path / "r.db", runs=1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([sys.executable, "-m", "clusterbench", "serve-metrics", "--port", str(port), "--db", db],
                         stderr=subprocess.PIPE, text=True)
    try:
        assert "serve-metrics: http://" in (p.stderr.readline() if p.stderr else "")
        assert _request(port, "GET", "/metrics")[0] == 200
        p.send_signal(signal.SIGINT)
        assert p.wait(20) == 0
        err = p.stderr.read() if p.stderr else ""
        assert err == "# serve-metrics: stopped by SIGINT\n", err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
        if p.stderr:
            p.stderr.close()
