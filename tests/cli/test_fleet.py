"""Tests of clusterbench.cli.fleet: options the judging commands share for running a fleet."""

from __future__ import annotations

import shlex

from clusterbench.launch import drain


def test_the_dry_run_prints_one_safe_line_per_command(monkeypatch, capsys) -> None:
    from clusterbench.cli.fleet import OnFail, take_out

    monkeypatch.setattr(drain.shutil, "which", lambda tool: None)   # no scheduler here: a dry run
    take_out(OnFail("drain"), {"node1": ["busbw \x1b[2J\x9b2J low \u202eevil"]}, [], False)
    out = capsys.readouterr().out
    assert out.isascii() or all(ch.isprintable() or ch == "\n" for ch in out), repr(out)
    command = [line for line in out.splitlines() if line.startswith("scontrol")]
    assert len(command) == 1
    assert shlex.split(command[0])[:4] == ["scontrol", "update", "NodeName=node1", "State=DRAIN"]
