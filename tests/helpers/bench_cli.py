"""A command run in-process, and its --json lines read back (the benchmark commands' tests)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from judge_helpers import cli as judge_cli

from clusterbench.cli import main

SMALL = ["-b", "8", "-e", "256", "-f", "4", "-n", "2", "-w", "1"]


def cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def _cli(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


# the in-process CLI (an int exit code), by the name the benchmark tests know it
cli_bench_cpu = judge_cli


def measurements(text: str) -> list[dict[str, Any]]:
    return [d for d in map(json.loads, text.splitlines()) if d.get("kind") == "measurement"]


def _key(m: dict[str, Any]) -> tuple:
    return m["benchmark"], m["metric"], json.dumps(m["params"], sort_keys=True)
