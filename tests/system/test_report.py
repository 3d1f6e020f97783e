"""System tests (report): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from judge_helpers import cli, json_lines, save
from report_runs import (
    _busbw,
    _report_busbw,
    _save_with_telemetry,
    _store,
    _transfer,
    _verdict_of_html,
)
from tmpfs_helpers import small_tmpfs

import clusterbench

SRC = Path(clusterbench.__file__).resolve().parents[1]   # the tree under test, for a child process


def _run_without_matplotlib(args: list[str]) -> subprocess.CompletedProcess[str]:
    code = ("import sys; sys.modules['matplotlib'] = None\n"   # `import matplotlib` raises ImportError
            "from clusterbench.cli import main\n"
            f"main({args!r})\n")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_report_renders_in_headless_chromium(tmp_path, db, capsys):
    _store(db)
    out = tmp_path / "r.html"
    rc, _, _ = cli(capsys, "report", "env=native", "env=container", "-o", str(out), "--link-speed",
                   "100Gbps", "--db", db)
    assert rc == 0
    base = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}"]
    png = tmp_path / "shot.png"
    subprocess.run(base + [f"--screenshot={png}", "--window-size=1200,3000", out.as_uri()],
                   check=True, capture_output=True, timeout=120)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20000
    dom = subprocess.run(base + ["--dump-dom", out.as_uri()], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    # the page as the browser built it shows the run's figures, escaped hostnames, no injected script
    assert "Comparison: A = env=native, B = env=container" in dom
    assert "<script" not in dom and "&lt;script&gt;alert(1)&lt;/script&gt;node0" in dom
    assert dom.count("<img") >= 1 and "all_reduce busbw vs message size" in dom
    # verdict first: the browser's page opens with it, before any section
    assert dom.index('id="verdict"') < dom.index("<h2") and _verdict_of_html(dom)[0] == "REGRESSION"
    assert '<nav class="toc">' in dom
    assert "optimal GB/s" in dom  # efficiency vs theory from --link-speed
    assert "<th>p</th><th>p adj</th>" in dom and "p adj: p-values adjusted by fdr over" in dom


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_a_long_host_name_keeps_the_page_in_its_width(capsys, db, tmp_path):
    save(db, _busbw(1.0), hosts=["n" * 3000], tags={"k": "v" * 3000})
    page = tmp_path / "r.html"
    rc, _, err = cli(capsys, "report", "1", "-o", page, "--db", db)
    assert rc == 0, err
    # the page has no script of its own: a frame around it measures how wide the browser lays it out
    frame = tmp_path / "frame.html"
    frame.write_text(f'<iframe id=f src="{page.name}" style="width:1200px;height:800px"></iframe><pre id=o></pre>'
                     "<script>document.getElementById('f').onload=function(){document.getElementById('o')"
                     ".textContent='W='+this.contentDocument.documentElement.scrollWidth;};</script>")
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--allow-file-access-from-files", "--disable-background-networking",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000",
                          "--dump-dom", frame.as_uri()], check=True, capture_output=True, text=True, timeout=120).stdout
    width = int(dom.split("W=", 1)[1].split("<", 1)[0])
    assert width <= 1300, width   # before: 30000 pixels and more, the host name on one line


def test_without_matplotlib_the_page_and_summary_are_written(db, tmp_path):
    # before: the page itself imported matplotlib: no report at all, an internal error
    for i in range(3):
        save(db, _report_busbw(1.0 + i) + _report_busbw(2.0 + i, 1024), tags={"g": "a"})
    page = tmp_path / "r.html"
    r = _run_without_matplotlib(["report", "g=a", "-o", str(page), "--db", db, "--json"])
    assert r.returncode == 0, r.stderr
    assert len(r.stderr.splitlines()) == 1 and "figures skipped" in r.stderr and "matplotlib" in r.stderr
    (summary,) = json_lines(r.stdout)
    assert summary["plots"] == [] and summary["html"] == str(page)
    assert [f["figure"] for f in summary["figures_skipped"]] == ["all"]
    assert "matplotlib" in summary["figures_skipped"][0]["why"]
    assert "<img" not in page.read_text() and page.with_suffix(".md").exists()
    assert not (tmp_path / "r_plots").exists()


def test_a_full_disk_leaves_nothing_behind(capsys, db, tmp_path):
    _save_with_telemetry(db, _transfer(1.0), {"team": "a"})
    _save_with_telemetry(db, _transfer(0.5), {"team": "b"})
    with small_tmpfs(tmp_path / "full", "64k") as where:
        rc, out, err = cli(capsys, "report", "team=a", "team=b", "-o", where / "r.html", "--db", db, "--json")
        assert rc == 2 and out == "" and len(err.splitlines()) == 1, err
        assert "No space left on device" in err
        assert list(where.iterdir()) == []


def test_a_read_only_file_system_is_refused_before_any_work(capsys, db, tmp_path):
    save(db, _report_busbw(1.0), tags={"g": "a"})
    with small_tmpfs(tmp_path / "ro", "1m") as where:
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        rc, out, err = cli(capsys, "report", "g=a", "-o", where / "r.html", "--db", db, "--json")
        assert rc == 2 and out == "" and len(err.splitlines()) == 1, err
        assert "read-only file system" in err
        assert list(where.iterdir()) == []
