"""System tests (stream): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import json
import math
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from fleet_helpers import night, real_measurements, store_history
from json_schema import check_lines
from paths import ROOT, TESTS
from process_helpers import free_port

from clusterbench.cli import main
from clusterbench.output import OUTPUT_FAILED
from clusterbench.records import COMPLETE, Run
from clusterbench.report import openmetrics
from clusterbench.store import Store

DASHBOARD = ROOT / "docs" / "grafana" / "clusterbench-fleet.json"


BUSBW = "clusterbench_collectives_busbw_bytes_per_second"


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


def _dashboard_queries() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in dash["templating"]["list"]]
    return exprs


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


def clusterbench_native_records(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "clusterbench", *args], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def lines_native_records(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def cli_bench_cpu(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def measurements(text: str) -> list[dict[str, Any]]:
    return [d for d in map(json.loads, text.splitlines()) if d.get("kind") == "measurement"]


def stored_bench_cpu(capsys: pytest.CaptureFixture[str], db: str, run: int) -> list[dict[str, Any]]:
    code, out, err = cli_bench_cpu(capsys, "results", "show", "--db", db, str(run), "--json")
    assert code == 0, err
    return measurements(out)


def _key(m: dict[str, Any]) -> tuple:
    return m["benchmark"], m["metric"], json.dumps(m["params"], sort_keys=True)


DATA = TESTS / "data"


STREAM_LOG = DATA / "stream" / "babelstream-repo-results-v2.0-broadwell-mccalpin-cray.txt"


NCCL_LOG = DATA / "nccl-tests" / "a3mega-h100-2node-all_reduce.txt"


HOST = "n\u0153ud-\u00b5\u2192"     # œ (not latin-1), µ (latin-1), → (neither)


TAG = "site=z\u00fcrich\u00b1\u00b2"


# the read commands, run 1 and 2 the stream imports, run 3 the nccl-tests one
READS = {
    "list": ["results", "list"],
    "show": ["results", "show", "1-3"],
    "export": ["results", "export", "1-3"],
    "export-csv": ["results", "export", "1-3", "--csv"],
    "report": ["report", "1", "2", "-o", "{tmp}/r.html"],
    "compare": ["compare", "1", "2"],
    "validate": ["validate", "1", "--profile", "cpu-smoke"],
    "trend": ["trend", "--min-runs", "2"],
    "env-diff": ["env", "diff", "1", "2"],
    "env-show": ["env", "show", "1"],
    "theory": ["theory", "--run", "3"],
}


WITH_JSON = [k for k in READS if not k.startswith("export")]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "CLUSTERBENCH_DEBUG")}
    return {**env, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", **extra}


def _cb(argv: list[str], env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clusterbench", *argv], env=env or _env(), capture_output="stdout" not in kw,
                          timeout=120, **kw)


@pytest.fixture(scope="module")
def db_stdio(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("stdio") / "runs.db")
    for i, log in ((1, STREAM_LOG), (2, STREAM_LOG), (3, NCCL_LOG)):
        p = _cb(["import", str(log), "--host", f"{HOST}{i}", "--tag", TAG, "--db", path])
        assert p.returncode == 0, p.stderr
    return path


def _argv(name: str, db_stdio: str, tmp: Path, as_json: bool = False) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in READS[name]] + (["--json"] if as_json else []) + ["--db", db_stdio]


_utf8: dict[tuple[str, bool], subprocess.CompletedProcess] = {}


def _reference(name: str, db_stdio: str, tmp: Path, as_json: bool = False) -> subprocess.CompletedProcess:
    """The command's output with a UTF-8 standard output: what the others are held to."""
    if (name, as_json) not in _utf8:
        _utf8[name, as_json] = _cb(_argv(name, db_stdio, tmp, as_json))
    return _utf8[name, as_json]


def _closing(*fds: int):
    def close() -> None:
        for fd in fds:
            os.close(fd)
    return close


STREAM = ["stream", "--sizes", "1K:1K", "-n", "2", "--telemetry-interval", "0"]


def _progress_env() -> dict[str, str]:
    return {**os.environ, "TERM": "xterm", "COLUMNS": "120", "PYTHONUNBUFFERED": "1"}


def _run(args: list[str], tty_stderr: bool, timeout: float = 300) -> tuple[int, bytes, bytes]:
    """Run clusterbench with stdout piped and stderr on a pty (or piped); (rc, stdout, stderr)."""
    cmd = [sys.executable, "-m", "clusterbench", *args]
    if not tty_stderr:
        r = subprocess.run(cmd, capture_output=True, timeout=timeout, env=_progress_env())
        return r.returncode, r.stdout, r.stderr
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, env=_progress_env())
    os.close(slave)
    got = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the pty
                break
            if not chunk:
                break
            got += chunk
        elif p.poll() is not None:
            break
    os.close(master)
    out = p.stdout.read()
    return p.wait(30), out, got


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
    arrays = {"Copy": 2, "Mul": 2, "Add": 3, "Triad": 3, "Dot": 2, "Nstream": 6}
    records = lines_native_records(clusterbench_native_records("stream", "--sizes", "64K:128K", "--float", "-n", "5", "--device", "cpu",
                                 "--telemetry-interval", "0", "--db", str(tmp_path / "s.db"), "--json", "-q"))
    stats: dict[tuple, dict[str | None, float]] = defaultdict(dict)
    for r in records:
        if r["kind"] == "measurement":
            p = dict(r["params"])
            stat = p.pop("stat", None)
            stats[tuple(sorted(p.items()))][f"{r['metric']}:{stat}"] = r["value"]
    assert {dict(k)["array_size"] for k in stats} == {16384, 32768}         # bytes per array / 4
    assert {dict(k)["kernel"] for k in stats} == set(arrays)
    for key, v in stats.items():
        p = dict(key)
        moved = arrays[p["kernel"]] * 4 * p["array_size"]
        assert math.isclose(v["bandwidth:None"], moved / (v["time_us:min"] * 1e-6) / 1e9, rel_tol=1e-12), key
        assert v["time_us:min"] <= v["time_us:median"] <= v["time_us:max"], key


def test_cli_cpu_run_json_contract_and_store(capsys, db):
    code, out, err = cli(capsys, "stream", "-s", "64K", "-n", "4", "--float", "--json", "--db", db,
                         "--tag", "who=test")
    assert code == 0, err
    rows = [d for d in map(json.loads, out.splitlines()) if d["kind"] == "measurement"]
    assert {r["benchmark"] for r in rows} == {"stream"}
    bw = [r for r in rows if r["metric"] == "bandwidth"]
    assert [r["params"]["kernel"] for r in bw] == ["Copy", "Mul", "Add", "Nstream", "Triad", "Dot"]
    for r in bw:
        assert r["unit"] == "GB/s" and r["value"] > 0
        assert r["params"] == {"kernel": r["params"]["kernel"], "array_size": 65536, "dtype": "float",
                               "device": "cpu"}
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
    arrays = {"Copy": 2, "Mul": 2, "Add": 3, "Triad": 3, "Dot": 2, "Nstream": 6}
    tmin = {m["params"]["kernel"]: m["value"] for m in live
            if m["metric"] == "time_us" and m["params"]["stat"] == "min"}
    bw = {m["params"]["kernel"]: m["value"] for m in live if m["metric"] == "bandwidth"}
    assert set(bw) == set(arrays)
    for kernel, count in arrays.items():
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
