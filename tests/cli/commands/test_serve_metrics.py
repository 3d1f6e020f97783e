"""Tests of clusterbench.cli.commands.serve_metrics: ``clusterbench serve-metrics``."""

from __future__ import annotations

from fleet_metrics import _fleet
from judge_helpers import cli
from process_helpers import free_port


def test_serve_metrics_bad_input_is_one_line_before_listening(capsys, db):
    rc, _, err = cli(capsys, "serve-metrics", "--port", str(free_port()), "nosuch=tag", "--db", db)
    assert rc == 2 and err.count("\n") == 1 and "no results database" in err   # nothing stored there yet
    _fleet(db)
    rc, _, err = cli(capsys, "serve-metrics", "--port", str(free_port()), "nosuch=tag", "--db", db)
    assert rc == 2 and err.count("\n") == 1 and "matches no run" in err
