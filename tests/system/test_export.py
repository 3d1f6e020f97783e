"""System tests (export): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import shutil
import signal
import subprocess
import sys
import termios

import pytest
from fleet_helpers import night, real_measurements, store_history
from judge_helpers import cli, coll_rows, save
from process_helpers import assert_all_gone, process_family, wait_until

from clusterbench.records import Measurement, Run
from clusterbench.store import Store

prom_parser = pytest.importorskip("prometheus_client.parser", reason="prometheus-client (the metrics extra)")


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


prom_text = pytest.importorskip("prometheus_client.parser", reason="prometheus-client (the metrics extra)")


BUSBW = "clusterbench_collectives_busbw_bytes_per_second"


def _store(db: str, params: list[dict], benchmark: str = "all_reduce", metric: str = "busbw",
           hosts: tuple[str, ...] = ("gpu01",)) -> int:
    with Store.open(db) as s:
        return s.save_run(Run(benchmark, hosts=list(hosts), started_at="2026-03-01T02:00:00.000Z",
                              status="complete"),
                          [Measurement(benchmark, metric, 10.0 * (i + 1), "GB/s", p) for i, p in enumerate(params)])


def _text_families(text: str) -> dict[str, list]:
    return {f.name: f.samples for f in prom_text.text_string_to_metric_families(text)}


def _export_metrics_which(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/bin/{name}",) if os.path.exists(p)), None)


HOST = "n\u0153ud-\u00b5\u2192"     # œ (not latin-1), µ (latin-1), → (neither)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "CLUSTERBENCH_DEBUG")}
    return {**env, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", **extra}


@pytest.fixture(scope="module")
def big_db(tmp_path_factory) -> str:
    from clusterbench.records import Measurement, Run

    path = str(tmp_path_factory.mktemp("big") / "big.db")
    with Store.open(path) as store:
        for i in range(300):   # far more than a pipe holds, in every form
            store.save_run(Run(benchmark="coll", tags={"i": str(i), "site": "z\u00fcrich"}),
                           [Measurement("all_reduce", "busbw", float(j), "GB/s", {"bytes": j, "host": f"{HOST}{j % 4}"})
                            for j in range(40)])
    return path


BIG = {"show": ["results", "show", "1-300"], "export": ["results", "export", "1-300"],
       "csv": ["results", "export", "1-300", "--csv"], "list": ["results", "list", "--limit", "300", "--json"],
       "trend": ["trend", "--json"]}


def _blocked_writing(proc: subprocess.Popen) -> bool:
    """The command waits in a write to its full pipe (the kernel's wait channel says so; where it
    does not, the pipe holds nearly its 64 KiB)."""
    assert proc.stdout is not None
    if proc.poll() is not None:
        return True
    with contextlib.suppress(OSError), open(f"/proc/{proc.pid}/wchan") as f:
        if f.read().endswith("pipe_write"):
            return True
    buf = bytearray(4)
    fcntl.ioctl(proc.stdout.fileno(), termios.FIONREAD, buf)
    return int.from_bytes(buf, sys.byteorder) >= 60 * 1024


@pytest.fixture
def stored(db):
    save(db, coll_rows(1.0, random.Random(5)), tags={"env": "a"})
    return db


def _read_only_mounts() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


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


def test_le_and_quantile_params_are_not_gauge_labels(capsys, db):
    _store(db, [{"bytes": 8, "le": "0.5", "quantile": "p99"}])
    rc, out, err = cli(capsys, "export", "openmetrics", "--db", db)
    assert rc == 0, err
    (s,) = _text_families(out)[BUSBW]
    assert "le" not in s.labels and "quantile" not in s.labels
    assert (s.labels["param_le"], s.labels["param_quantile"]) == ("0.5", "p99")
    promtool = _export_metrics_which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian package prometheus) is not installed")
    r = subprocess.run([promtool, "check", "metrics"], input=out, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("name", ["show", "export"])
def test_a_signal_while_blocked_on_a_full_pipe_is_one_line(big_db, name, sig):
    proc = subprocess.Popen([sys.executable, "-m", "clusterbench", *BIG[name], "--db", big_db], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    family = process_family(proc)
    wait_until(lambda: _blocked_writing(proc) or proc.poll() is not None, 60, "the pipe filled")
    assert proc.poll() is None, "finished before the pipe filled"
    assert _blocked_writing(proc)
    proc.send_signal(sig)
    assert proc.stderr is not None
    err = proc.stderr.read()   # the command ends without its output being read
    proc.wait(timeout=30)
    assert proc.returncode == 128 + sig, err
    assert err.decode().splitlines() == [f"clusterbench: error: interrupted by {'SIGTERM' if sig == signal.SIGTERM else 'SIGINT (Ctrl-C)'}"]
    assert_all_gone(family)


@pytest.mark.skipif(not _read_only_mounts(), reason="needs root and unshare to mount a read-only file system")
@pytest.mark.parametrize("argv", [("export", "openmetrics", "-o", "{ro}/m.prom"), ("report", "1", "-o", "{ro}/r.html")],
                         ids=["openmetrics", "report"])
def test_a_read_only_file_system_is_one_line(stored, tmp_path, argv):
    ro = tmp_path / "ro"
    ro.mkdir()
    cmd = " ".join([sys.executable, "-m", "clusterbench", *(a.format(ro=ro) for a in argv), "--db", stored])
    p = subprocess.run(["unshare", "-m", "sh", "-c",
                        f"mount --bind {ro} {ro} && mount -o remount,bind,ro {ro} && exec {cmd}"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith(f"clusterbench: error: cannot write {ro}/") and "read-only file system" in p.stderr
    assert list(ro.iterdir()) == []
