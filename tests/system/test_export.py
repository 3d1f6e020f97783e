"""System tests (export): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import termios

import pytest
from fleet_metrics import BUSBW, _families, _fleet, _text_families
from judge_helpers import cli
from process_helpers import assert_all_gone, process_family, wait_until
from stored_runs import _store
from system_cli import BIG, _env, _which


def _export_metrics_which(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/bin/{name}",) if os.path.exists(p)), None)


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
