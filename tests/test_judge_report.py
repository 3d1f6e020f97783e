import random
import shutil
import subprocess
from pathlib import Path

import pytest
from judge_helpers import cli, coll_rows, json_lines, save

from clusterbench.records import Measurement

EVIL = "<script>alert(1)</script>node"


def _store(db: str) -> None:
    rng = random.Random(31)
    for i in range(3):
        save(db, coll_rows(1.0, rng), tags={"env": "native"}, hosts=[f"{EVIL}{i}", "node-b"],
             devices=["AMD Instinct MI300X"] * 2)
        save(db, coll_rows(0.9, rng), tags={"env": "container", "link_speed": "100Gbps"},
             hosts=["node-a", "node-b"])
    ms = [Measurement("transfer", "bandwidth", 48.0 + (i + j) % 3, "GB/s",
                      {"src": f"G{i}", "dst": f"G{j}", "test": "p2p", "direction": "uni", "stat": "pair"})
          for i in range(4) for j in range(4) if i != j]
    ms += [Measurement("stream", "bandwidth", bw * (0.7 if dev == 3 else 1.0), "GB/s",
                       {"kernel": k, "array_size": 1 << 25, "dtype": "double", "device": dev})
           for k, bw in (("Copy", 4200.0), ("Triad", 3900.0)) for dev in range(6)]
    ms += [Measurement("gemm", "tflops", t, "TFLOP/s", {"m": 4096, "n": 4096, "k": 4096, "batch": 1, "dtype": d})
           for d, t in (("fp32", 97.0), ("bf16", 650.0))]
    save(db, ms, benchmark="import", hosts=["mi300x-1"], devices=["AMD Instinct MI300X"], tags={"kind": "node"})


def test_report_files_and_escaping(tmp_path, db, capsys):
    _store(db)
    out = tmp_path / "r.html"
    rc, stdout, _ = cli(capsys, "report", "env=native", "kind=node", "-o", str(out),
                        "--profile", "amd-mi300x-oem", "--db", db, "--json")
    assert rc == 0
    (info,) = json_lines(stdout)
    page = out.read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;node0" in page
    assert "http://" not in page and "https://" not in page  # self-contained: nothing fetched
    assert page.count("data:image/png;base64,") >= 5  # busbw, algbw, heatmap, stream, gemm, validation
    plots = {Path(p).name for p in info["plots"]}
    assert {"all-reduce-busbw.png", "all-reduce-busbw.svg", "stream-bandwidth.png", "gemm-tflops.svg"} <= plots
    assert any(n.startswith("transfer-p2p") for n in plots)
    # device 3's 30% slower stream shows up as degraded
    assert any(d["by"] == "device" and d["key"] == "3" for d in info["degraded"])
    md = out.with_suffix(".md").read_text()
    assert "&lt;script&gt;" in md and "<script>" not in md
    # validation table: one of six GPUs is 30% slow, so Copy fails and says where
    assert "| FAIL | BabelStream Copy | 2940.00 GB/s" in md and "1 of 6 below the bound; worst at device=3" in md
    # two groups: the report carries the A/B comparison
    rc, _, _ = cli(capsys, "report", "env=native", "env=container", "-o", str(out), "--db", db)
    md = out.with_suffix(".md").read_text()
    assert rc == 0 and "## Comparison: A = env=native, B = env=container" in md
    assert "B is" in md and "slower" in md


def test_report_bad_input(tmp_path, db, capsys):
    _store(db)
    rc, _, err = cli(capsys, "report", "env=nothing", "-o", str(tmp_path / "x.html"), "--db", db)
    assert rc == 2 and "matches no run" in err
    rc, _, err = cli(capsys, "report", "1", "-o", str(tmp_path / "no" / "x.html"), "--db", db)
    assert rc == 2 and "does not exist" in err


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
    assert dom.count("<img") >= 2 and "all_reduce busbw vs message size" in dom
    assert "optimal GB/s" in dom  # efficiency vs theory from --link-speed
