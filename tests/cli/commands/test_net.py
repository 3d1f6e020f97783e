"""Tests of clusterbench.cli.commands.net: ``clusterbench net``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from judge_helpers import cli
from paths import DATA
from stored_runs import import_log, shown_show_tables_complete

from clusterbench.bench.net.matrix import MAX_RDMA_QPS


def _shown_runs(path: Path, tmp_path: Path) -> list[tuple[str, list[dict]]]:
    db = str(tmp_path / "x.db")
    return [shown_show_tables_complete(run, db) for run in import_log(path, db)]


def _show(tool_file: str, tmp_path: Path) -> list[tuple[str, list[dict]]]:
    return _shown_runs(DATA / tool_file, tmp_path)


def test_bad_duration_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    code, out, err = cli(capsys, "net", "--np", "2", "-t", "4", "--timeout", "2", "--db", tmp_path / "x.db")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        "clusterbench: error: --duration 4 s must be at most half of --timeout 2 s "
        "(every rank waits on the pair being measured): raise --timeout"]


def test_command_refuses_in_one_line_before_any_rank(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    rc, out, err = cli(capsys, "net", "--np", "2", "--rdma", "--rdma-qps", "100000000", "--db", db)
    assert rc == 2 and out == "", (rc, out, err)
    assert err == f"clusterbench: error: --rdma-qps must be 1..{MAX_RDMA_QPS} (perftest's range for " \
                  "ib_write_bw -q), got 100000000\n", err
    assert not db.exists()


def test_a_sweep_test_line_and_a_suite_step_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    line = ["net", "--rdma", "--rdma-qps", "20000"]
    rc, out, err = cli(capsys, "sweep", "--hosts", "a,b", "--db", db, "--", *line)
    assert rc == 2 and err.count("\n") == 1 and "the test after --: --rdma-qps must be 1..16384" in err, err
    profile = tmp_path / "p.yaml"
    profile.write_text(json.dumps({"name": "p", "criteria": [
        {"name": "t", "benchmark": "net", "metric": "bandwidth", "op": ">=", "value": 1e-9, "unit": "GB/s"}],
        "suite": [{"name": "s0", "command": line}]}))
    rc, out, err = cli(capsys, "qualify", "--profile", profile, "--db", db, "--dry-run")
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert "suite step 's0': --rdma-qps must be 1..16384" in err, err
    assert not db.exists()


def test_net_small_values_and_sides(tmp_path):
    from clusterbench.families.net.table import NetTable
    from clusterbench.records import Measurement, Run

    p = {"src_host": "a", "dst_host": "b", "streams": 1}
    ms = [Measurement("net", "bandwidth", 0.000393, "GB/s", {**p, "side": "sender"}),
          Measurement("net", "bandwidth", 0.117, "GB/s", {**p, "side": "receiver"})]
    table = NetTable()
    rows = table.rows(ms)
    assert "0.000393" in rows[0] and "side=sender" in rows[0] and "side=receiver" in rows[1]
    assert "0.000 " not in rows[0]
    assert "min 0.000393" in table.footer(Run("net"), ms)[0]
    ((text, _),) = _show("iperf3/cloudpilot-10k_file-bytes-mode.json", tmp_path)
    assert "side=sent" in text and "side=received" in text
