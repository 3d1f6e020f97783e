"""Tests of clusterbench.bench.transfer.config: the validated configuration of a transfer run."""

from __future__ import annotations

import pytest
from transfer_topologies import CPU

from clusterbench.bench.transfer.config import build_plan, transfer_config, transfer_options
from clusterbench.errors import UsageError


@pytest.mark.parametrize("iterations, warmups, words", [
    (99999999999999999999, 3, "--iterations must be 1..1000000"),
    (10, 99999999999999999999, "--warmups must be 0..1000000"),
])
def test_transfer_iteration_counts_are_bounded(iterations, warmups, words):
    with pytest.raises(UsageError, match=words):
        transfer_options(None, (), "64K", "copy_engine", iterations, warmups)


def test_a_kernel_method_on_a_run_without_p2p_or_a2a_says_it_was_not_used():
    cfg = transfer_config("h2h", (), None, "64K", "kernel", 2, 0, True, "cpu", None)
    assert any("--method kernel not used" in n and "h2h" in n for n in cfg.notes)
    cfg = transfer_config("h2h", (), None, "64K", "copy_engine", 2, 0, True, "cpu", None)
    assert cfg.notes == ()


def test_a_config_whose_every_test_is_skipped_runs_nothing_else(tmp_path):
    cfg = tmp_path / "gpu.cfg"
    cfg.write_text("G0->G1@4K\n1 1 (C0->D0->C0)\n")
    notes: list[str] = []
    # before: the h2h matrix ran instead of the tests asked for, exit 0
    with pytest.raises(UsageError, match="nothing to run: skipped .*GPU 0 does not exist.*1 more"):
        build_plan(None, (), str(cfg), 4096, "copy_engine", CPU, notes)
    # a matrix asked for beside it still runs
    planned = build_plan("h2h", (), str(cfg), 4096, "copy_engine", CPU, [])
    assert [p.kind for p in planned] == ["h2h"]


def test_an_empty_config_names_the_file(tmp_path):
    cfg = tmp_path / "comments.cfg"
    cfg.write_text("# only\r\n# comments\r\n")
    with pytest.raises(UsageError, match="comments.cfg: no transfer tests found"):
        build_plan(None, (), str(cfg), 4096, "copy_engine", CPU, [])
