"""Tests of clusterbench.cli.commands.serve_metrics: ``clusterbench serve-metrics``."""

from __future__ import annotations

from fleet_helpers import night, real_measurements, store_history
from judge_helpers import cli
from process_helpers import free_port

from clusterbench.records import Run
from clusterbench.store import Store

LOGS = ["nccl-tests/a3mega-h100-2node-all_reduce.txt", "babelstream/seed-mi300x-hip-8gpu-mpi.txt",
        "transferbench/seed-mi300x-p2p.txt", "rocblas-bench/seed-mi300x-sgemm-4000.txt"]


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


def test_serve_metrics_bad_input_is_one_line_before_listening(capsys, db):
    rc, _, err = cli(capsys, "serve-metrics", "--port", str(free_port()), "nosuch=tag", "--db", db)
    assert rc == 2 and err.count("\n") == 1 and "no results database" in err   # nothing stored there yet
    _fleet(db)
    rc, _, err = cli(capsys, "serve-metrics", "--port", str(free_port()), "nosuch=tag", "--db", db)
    assert rc == 2 and err.count("\n") == 1 and "matches no run" in err
