"""benchmarks/gpu_vs_peers.py runs end to end on a CPU (--quick): a GPU session has minutes of
device time, and a script that breaks there costs them. Checks what it compares, not how fast."""

from __future__ import annotations

import json
import subprocess
import sys

from paths import ROOT

SCRIPT = ROOT / "benchmarks" / "gpu_vs_peers.py"


def test_quick_cpu_run_compares_every_section_it_can(tmp_path):
    out = tmp_path / "bench.json"
    p = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--device", "cpu", "--only",
                        "stream,gemm,transfer,coll", "--rounds", "2", "--json-out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "! " not in p.stdout, p.stdout      # no section failed, no clusterbench command failed
    got = json.loads(out.read_text())
    rows = {(r["section"], r["what"]): r for r in got["results"]}
    for key in [("stream", "Copy 2^16 doubles"), ("stream", "Triad 2^17 doubles"), ("gemm", "fp32 512^3"),
                ("coll", "all_reduce 1M time"), ("coll", "all_gather 1M time")]:
        r = rows[key]
        assert r["clusterbench"] > 0 and r["peer"] > 0 and r["ratio"] > 0, r
    # no GPU: the host<->device rows say so instead of a number, and the graph rows too
    assert all(r["clusterbench"] is None and "no GPU" in r["extra"] for (s, _), r in rows.items() if s == "transfer")
    assert rows[("coll", "all_reduce 8 time, graph")]["ratio"] is None
    # the library engine's rows: on a GPU beside the same bare loop; here they say why not
    assert all(r["ratio"] is None and "--engine nccl needs a GPU" in r["extra"]
               for (s, what), r in rows.items() if s == "coll" and what.endswith("engine nccl"))
    assert ("coll", "all_gather 1M time, engine nccl") in rows
    assert got["environment"]["device"] == "cpu"


def test_unknown_section_is_refused():
    p = subprocess.run([sys.executable, str(SCRIPT), "--only", "strem"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "unknown section(s): strem" in p.stderr
