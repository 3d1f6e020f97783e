"""``--rdma-qps`` within perftest's own range for ``ib_write_bw -q`` (1..16384): a larger count
is refused in one line before any rank starts, by the command and by the check that sweep and
qualify run on a test line, never handed to ib_write_bw on every host."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judge_helpers import cli

from clusterbench.bench.net import perftest
from clusterbench.bench.net.matrix import MAX_RDMA_QPS, NetConfig
from clusterbench.cli.argv_check import check_argv
from clusterbench.errors import UsageError


def test_the_bound_is_perftests() -> None:
    # perftest_parameters.h: MIN_QP_NUM 1, MAX_QP_NUM 16384, checked by -q's CHECK_VALUE_IN_RANGE
    assert MAX_RDMA_QPS == 16384


@pytest.mark.parametrize("qps", [0, -1, MAX_RDMA_QPS + 1, 100_000_000, 2**63])
def test_config_refuses_out_of_range(qps: int) -> None:
    with pytest.raises(UsageError, match=rf"^--rdma-qps must be 1\.\.{MAX_RDMA_QPS} .*got {qps}$"):
        NetConfig(rdma=True, rdma_qps=qps).check()


@pytest.mark.parametrize("qps", [1, 4, MAX_RDMA_QPS])
def test_config_takes_the_range(qps: int) -> None:
    NetConfig(rdma=True, rdma_qps=qps).check()
    assert perftest.perftest_argv("mlx5_0", qps)[-3:-2] == [str(qps)]


@pytest.mark.parametrize("qps", ["16385", "100000000"])
def test_sweep_and_qualify_check_refuse_it(qps: str) -> None:
    with pytest.raises(UsageError, match=f"^net: --rdma-qps must be 1..{MAX_RDMA_QPS}"):
        check_argv(["net", "--rdma", "--rdma-qps", qps], "net", values=True)


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
