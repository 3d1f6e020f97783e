"""Output files of ``report``, ``export openmetrics -o`` and ``--junit``: a path naming a device,
a FIFO or a directory is refused, never replaced; a symbolic link is written through; a place
that cannot be written (a read-only file system, /proc, a file where the plots directory goes) is
one line naming the path, exit 2; and a report is written whole or not at all."""

from __future__ import annotations

import os
import random
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from judge_helpers import cli, coll_rows, save

from clusterbench.errors import UsageError
from clusterbench.report import junit


@pytest.fixture
def stored(db):
    save(db, coll_rows(1.0, random.Random(5)), tags={"env": "a"})
    return db


def _one_line(rc, out, err, *words):
    assert rc == 2 and len(err.splitlines()) == 1, (rc, out, err)
    assert err.startswith("clusterbench: error: ") and "internal error" not in err, err
    for w in words:
        assert str(w) in err, err


def _special(path: Path, kind: str) -> None:
    if kind == "device":   # /dev/null's numbers, made in the test's directory
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    else:
        os.mkfifo(path)


def _is(path: Path, kind: str) -> bool:
    mode = os.lstat(path).st_mode
    return stat.S_ISCHR(mode) if kind == "device" else stat.S_ISFIFO(mode)


@pytest.mark.parametrize("kind", ["device", "fifo"])
@pytest.mark.parametrize("link", [False, True], ids=["path", "link"])
def test_openmetrics_never_replaces_a_device_or_fifo(capsys, stored, tmp_path, kind, link):
    special = tmp_path / "special"
    _special(special, kind)
    out = tmp_path / "m.prom"
    if link:
        out.symlink_to(special)
    _one_line(*cli(capsys, "export", "openmetrics", "--db", stored, "-o", str(out if link else special)),
              out if link else special, "not a regular file")
    assert _is(special, kind) and (not link or out.is_symlink())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["special", "results.db", *(["m.prom"] if link else [])])


def test_openmetrics_writes_through_a_symlink_and_keeps_the_mode(capsys, stored, tmp_path):
    real = tmp_path / "real.prom"
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "m.prom"
    link.symlink_to(real)
    rc, _, err = cli(capsys, "export", "openmetrics", "--db", stored, "-o", str(link))
    assert rc == 0, err
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert "clusterbench_" in real.read_text() and stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.prom", "real.prom", "results.db"]


def test_openmetrics_into_proc_is_one_line(capsys, stored):
    _one_line(*cli(capsys, "export", "openmetrics", "--db", stored, "-o", "/proc/clusterbench-test.prom"),
              "/proc/clusterbench-test.prom")


def test_junit_never_replaces_a_device(tmp_path):
    dev = tmp_path / "dev"
    _special(dev, "device")
    with pytest.raises(UsageError, match="not a regular file"):
        junit.write(dev, [junit.Suite("s", [junit.Case("c", "k", junit.PASS)])])
    assert _is(dev, "device")


def test_report_refuses_a_file_where_its_plots_go_before_writing_anything(capsys, stored, tmp_path):
    (tmp_path / "z_plots").write_text("mine\n")
    _one_line(*cli(capsys, "report", "1", "-o", str(tmp_path / "z.html"), "--db", stored), tmp_path / "z_plots")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.db", "z_plots"]
    assert (tmp_path / "z_plots").read_text() == "mine\n"


def test_report_names_the_summary_that_is_a_directory_and_writes_nothing(capsys, stored, tmp_path):
    (tmp_path / "v.md").mkdir()
    _one_line(*cli(capsys, "report", "1", "-o", str(tmp_path / "v.html"), "--db", stored),
              f"{tmp_path / 'v.md'}: it is a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.db", "v.md"]


@pytest.mark.parametrize("name", ["", "x/.."])
def test_report_needs_a_file_name(capsys, stored, tmp_path, monkeypatch, name):
    # before: an internal error (pathlib cannot add a suffix to an empty name)
    monkeypatch.chdir(tmp_path)
    _one_line(*cli(capsys, "report", "1", "-o", name, "--db", stored), "give the HTML file's name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.db"]


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_report_never_replaces_a_device_or_fifo(capsys, stored, tmp_path, kind):
    page = tmp_path / "r.html"
    _special(page, kind)
    _one_line(*cli(capsys, "report", "1", "-o", str(page), "--db", stored), page, "not a regular file")
    assert _is(page, kind) and sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "results.db"]


def test_report_into_proc_is_one_line(capsys, stored):
    _one_line(*cli(capsys, "report", "1", "-o", "/proc/clusterbench-test.html", "--db", stored), "/proc/")


def test_report_through_a_symlink_writes_its_target(capsys, stored, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "r.html").write_text("old")
    link = tmp_path / "r.html"
    link.symlink_to(site / "r.html")
    rc, _, err = cli(capsys, "report", "1", "-o", str(link), "--db", stored)
    assert rc == 0, err
    assert link.is_symlink() and "<html" in (site / "r.html").read_text()
    assert (tmp_path / "r.md").is_file() and any((tmp_path / "r_plots").iterdir())
    assert not [p for p in tmp_path.rglob(".*tmp*")]


def _read_only_mounts() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


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
