"""benchmarks/nccl_tests_vs.py runs on a CPU (--quick) against a recorded nccl-tests log: a GPU
session has minutes of device time, and a script that breaks there costs them."""

from __future__ import annotations

import json
import subprocess
import sys

from paths import ROOT

SCRIPT = ROOT / "benchmarks" / "nccl_tests_vs.py"


def test_quick_run_reads_the_recorded_log_and_prints_both_engines(tmp_path):
    out = tmp_path / "rows.json"
    p = subprocess.run([sys.executable, str(SCRIPT), "--quick", "-n", "2", "-w", "1", "--json-out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = json.loads(out.read_text())
    # the log's sizes up to 32 KiB (8 B .. 32 KiB by 2) that clusterbench's sweep (by 4) runs too
    assert sorted({r["bytes"] for r in rows}) == [8, 32, 128, 512, 2048, 8192, 32768]
    assert {r["placement"] for r in rows} == {"out", "in"}
    for r in rows:
        assert r["nccl_tests_us"] > 0 and r["torch_us"] > 0 and r["aa"] == 1.0, r
        assert r["torch_ratio"] == r["torch_us"] / r["nccl_tests_us"]
        assert r["nccl_us"] is None           # --engine nccl needs GPU ranks, and says so
    by_size = [(r["bytes"], r["placement"]) for r in rows]
    assert by_size[:2] == [(8, "out"), (8, "in")]
    first = next(r for r in rows if (r["bytes"], r["placement"]) == (8, "out"))
    assert first["nccl_tests_us"] == 135.8      # the recorded log's first out-of-place time
    assert "--engine nccl: no rows: clusterbench: error: --engine nccl calls the NCCL/RCCL library on GPU" in p.stdout
    assert "engine torch" in p.stdout.splitlines()[-1] and "A/A 1.000" in p.stdout.splitlines()[-1]


def test_without_binaries_or_quick_it_says_what_it_needs():
    p = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "--bin DIR (the built nccl-tests) or --quick" in p.stderr
    p = subprocess.run([sys.executable, str(SCRIPT), "--bin", "/nonexistent"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2 and "not every one of all_reduce_perf" in p.stderr
