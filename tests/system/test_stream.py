"""System tests (stream): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import urllib.request
from collections import defaultdict
from typing import Any

import pytest
import torch
from bench_cli import _key, cli, cli_bench_cpu, measurements
from fleet_helpers import real_measurements
from fleet_metrics import BUSBW, LOGS, _dashboard_queries
from json_schema import check_lines
from process_helpers import free_port
from stream_facts import ARRAYS
from system_cli import (
    READS,
    _argv,
    _cb,
    _closing,
    _env,
    _get,
    _reference,
    _wait,
    _which,
    clusterbench_native_records,
    lines_native_records,
    stored_bench_cpu,
)
from tty_runs import _run

from clusterbench.bench import devices as devs
from clusterbench.families.stream import spec as stream_spec
from clusterbench.output import OUTPUT_FAILED
from clusterbench.records import COMPLETE
from clusterbench.report import openmetrics
from clusterbench.store import Store

WITH_JSON = [k for k in READS if not k.startswith("export")]


STREAM = ["stream", "--sizes", "1K:1K", "-n", "2", "--telemetry-interval", "0"]


def test_a_one_device_benchmark_runs_under_a_launcher_with_more_ranks(tmp_path):
    """stream picks one rank per device; under torchrun the launcher's ranks are the ranks (the
    extra one has no device and waits), not an error about an --np the user never gave."""
    db = str(tmp_path / "s.db")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                           "-m", "clusterbench", "stream", "-s", "64K", "-n", "3", "--device", "cpu",
                           "--telemetry-interval", "0", "--timeout", "60", "--db", db],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    with Store.open(db) as store:
        (run,) = store.list_runs()
        assert run.status == COMPLETE and run.ranks == 2
        assert {m.params["kernel"] for m in store.measurements(run.id) if m.metric == "bandwidth"} >= {"Copy", "Triad"}


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


def test_stream_bandwidth_is_bytes_over_min_time(tmp_path):
    records = lines_native_records(clusterbench_native_records("stream", "--sizes", "64K:128K", "--float", "-n", "5", "--device", "cpu",
                                 "--telemetry-interval", "0", "--db", str(tmp_path / "s.db"), "--json", "-q"))
    stats: dict[tuple, dict[str | None, float]] = defaultdict(dict)
    for r in records:
        if r["kind"] == "measurement":
            p = dict(r["params"])
            stat = p.pop("stat", None)
            stats[tuple(sorted(p.items()))][f"{r['metric']}:{stat}"] = r["value"]
    assert {dict(k)["array_size"] for k in stats} == {16384, 32768}         # bytes per array / 4
    assert {dict(k)["kernel"] for k in stats} == set(ARRAYS)
    for key, v in stats.items():
        p = dict(key)
        moved = ARRAYS[p["kernel"]] * 4 * p["array_size"]
        assert math.isclose(v["bandwidth:None"], moved / (v["time_us:min"] * 1e-6) / 1e9, rel_tol=1e-12), key
        assert v["time_us:min"] <= v["time_us:median"] <= v["time_us:max"], key


def test_cli_cpu_run_json_contract_and_store(capsys, db):
    code, out, err = cli(capsys, "stream", "-s", "64K", "-n", "4", "--float", "--json", "--db", db,
                         "--tag", "who=test")
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    assert {r["benchmark"] for r in rows} == {"stream"}
    bw = [r for r in rows if r["metric"] == "bandwidth"]
    assert [r["params"]["kernel"] for r in bw] == list(stream_spec.NAMES)    # in the table's run order
    # 64K floats fit in the cache of most CPUs: the rows say so where the node reports its cache
    level = stream_spec.memory_level(65536, 4, devs.last_level_cache(torch.device("cpu")))
    for r in bw:
        assert r["unit"] == "GB/s" and r["value"] > 0
        assert r["params"] == {"kernel": r["params"]["kernel"], "array_size": 65536, "dtype": "float",
                               "device": "cpu", **({"memory": level} if level else {})}
    stats = sorted(r["params"]["stat"] for r in rows if r["metric"] == "time_us")
    assert stats == sorted(["min", "max", "avg", "median", "stddev", "mad", "first"] * 6)
    with Store.open(db) as store:
        run = store.get_run(rows[0]["run"])
        assert run.status == "complete" and run.tags == {"who": "test"} and run.meta["threads"] >= 1


def test_cli_table_sweep_and_kernels(capsys, db):
    code, out, err = cli(capsys, "stream", "--sizes", "256K:512K", "-n", "3", "--kernels", "Triad,Dot",
                         "--db", db)
    assert code == 0, err
    lines = [ln for ln in out.splitlines() if not ln.startswith("#")]
    assert len(lines) == 4 and all(ln.split()[0] == "cpu" for ln in lines)
    assert [ln.split()[1] for ln in lines] == ["32768", "32768", "65536", "65536"]
    assert "not in the peaks table" in out  # this CPU has no datasheet entry: no percentage


def test_stream_bandwidth_counts_babelstream_arrays(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    db = str(tmp_path / "stream.db")
    code, out, err = cli_bench_cpu(capsys, "stream", "-s", "1000", "-n", "3", "--float", "--json", "--db", db)
    assert code == 0, err
    live = measurements(out)
    tmin = {m["params"]["kernel"]: m["value"] for m in live
            if m["metric"] == "time_us" and m["params"]["stat"] == "min"}
    bw = {m["params"]["kernel"]: m["value"] for m in live if m["metric"] == "bandwidth"}
    assert set(bw) == set(ARRAYS)
    for kernel, count in ARRAYS.items():
        assert math.isclose(bw[kernel], count * 4 * 1000 / (tmin[kernel] * 1e-6) / 1e9, rel_tol=1e-12)
    assert {_key(m): m["value"] for m in live} == {_key(m): m["value"] for m in stored_bench_cpu(capsys, db, 1)}


@pytest.mark.parametrize("name", list(READS))
def test_an_ascii_stdout_shows_what_it_cannot_encode_as_escapes(db_stdio, tmp_path, name):
    """``PYTHONIOENCODING=ascii`` with a host ``nœud-µ→``: the same lines, each character ASCII
    cannot hold written as its escape (``n\\u0153ud``); before, ``results list``, ``show``,
    ``trend`` and ``env`` ended with an internal UnicodeEncodeError."""
    want = _reference(name, db_stdio, tmp_path)
    got = _cb(_argv(name, db_stdio, tmp_path), _env(PYTHONIOENCODING="ascii"))
    assert b"internal error" not in got.stderr, got.stderr
    assert got.returncode == want.returncode, got.stderr
    assert got.stdout == want.stdout.decode().encode("ascii", "backslashreplace")


def test_the_escapes_are_there_where_the_text_is_not_ascii(db_stdio, tmp_path):
    shown = _cb(_argv("list", db_stdio, tmp_path), _env(PYTHONIOENCODING="ascii")).stdout.decode("ascii")
    assert "n\\u0153ud-\\xb5\\u21921" in shown and "site=z\\xfcrich\\xb1\\xb2" in shown


@pytest.mark.parametrize("name", WITH_JSON)
def test_json_lines_are_the_same_bytes_whatever_the_encoding(db_stdio, tmp_path, name):
    """JSON escapes every character past ASCII itself: the lines never depend on the locale."""
    want = _reference(name, db_stdio, tmp_path, as_json=True)
    got = _cb(_argv(name, db_stdio, tmp_path, as_json=True), _env(PYTHONIOENCODING="ascii"))
    assert got.returncode == want.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    check_lines(got.stdout.decode("ascii"))


def test_a_handler_the_user_chose_is_kept(db_stdio, tmp_path):
    """``PYTHONIOENCODING=ascii:replace`` asks for ``?``: the command leaves that choice alone."""
    got = _cb(_argv("list", db_stdio, tmp_path), _env(PYTHONIOENCODING="ascii:replace"))
    assert got.returncode == 0 and b"n?ud-??1" in got.stdout, got.stderr


@pytest.mark.parametrize(("name", "as_json"), [(n, False) for n in READS] + [(n, True) for n in WITH_JSON])
def test_a_closed_stdout_is_one_line_and_exit_74(db_stdio, tmp_path, name, as_json):
    """``clusterbench ... >&-``: before, an internal AttributeError (Python leaves ``sys.stdout``
    None), exit 1. As ``ls >&-`` does: one line naming the output, and a non-zero exit, here the
    one every failed standard output ends with."""
    p = _cb(_argv(name, db_stdio, tmp_path, as_json), preexec_fn=_closing(1), stdout=None, stderr=subprocess.PIPE)
    assert p.returncode == OUTPUT_FAILED, p.stderr
    assert p.stderr == b"clusterbench: error: cannot write to standard output (closed): Bad file descriptor\n"


def test_a_benchmark_with_stdin_and_stdout_closed_stores_its_run(tmp_path):
    db_stdio = str(tmp_path / "b.db")
    p = _cb([*STREAM, "--db", db_stdio], preexec_fn=_closing(0, 1), stdout=None, stderr=subprocess.PIPE)
    assert p.returncode == OUTPUT_FAILED, p.stderr
    errors = [e for e in p.stderr.decode().splitlines() if e.startswith("clusterbench: error:")]
    assert errors == ["clusterbench: error: cannot write to standard output (closed): Bad file descriptor; "
                      "the run is stored"], p.stderr
    with Store.open(db_stdio) as store:
        (run,) = store.list_runs()
        assert run.status == COMPLETE and store.measurements(run.id)


def test_a_benchmark_with_a_full_stderr_still_succeeds(tmp_path):
    """``2>/dev/full``: its notes and ``# run N stored`` line are lost, the run and the table are
    not (before: exit 1 for a complete run)."""
    db_stdio = str(tmp_path / "f.db")
    with open("/dev/full", "w") as full:
        p = _cb([*STREAM, "--db", db_stdio], stdout=subprocess.PIPE, stderr=full)
    assert p.returncode == 0
    assert b"Triad" in p.stdout
    with Store.open(db_stdio) as store:
        assert [r.status for r in store.list_runs()] == [COMPLETE]


def test_quiet_leaves_stderr_empty_even_on_a_terminal(tmp_path):
    rc, out, err = _run(["stream", "--device", "cpu", "-s", "64K", "-n", "3", "--telemetry-interval", "0",
                         "--db", str(tmp_path / "r.db"), "--quiet"], tty_stderr=True)
    assert rc == 0 and err == b""
    assert b"Copy" in out


def test_a_terminal_shows_the_iterations_done_of_the_plan(tmp_path):
    """The steps a benchmark planned show as k/N on a terminal; piped, nothing is drawn."""
    args = ["stream", "--device", "cpu", "-s", "4M", "-n", "40", "--kernels", "Copy,Triad",
            "--telemetry-interval", "0", "--db", str(tmp_path / "r.db")]
    rc, out, err = _run(args, tty_stderr=True)
    assert rc == 0 and b"Copy" in out
    assert re.search(rb"stream.*[0-9]+/40 iterations", err), err[-2000:]
    rc, out, err = _run(args, tty_stderr=False)
    assert rc == 0 and b"/40 iterations" not in err and b"about" not in err
