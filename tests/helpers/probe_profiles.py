"""Profiles written for a test (a stream floor, a small suite), and a command replaced to see what
it is handed."""

from __future__ import annotations

import json
from pathlib import Path

from clusterbench.cli import all_commands

STREAM_FLOOR = {"name": "stream floor", "benchmark": "stream", "metric": "bandwidth",
                "params": {"kernel": "Triad"}, "op": ">=", "value": 0.001, "unit": "GB/s"}


SMALL_STREAM = ["stream", "--device", "cpu", "-s", "1K", "-n", "2"]


def _profile(tmp_path: Path, suite: list[dict], criteria: list[dict]) -> Path:
    p = tmp_path / "probe.yaml"
    p.write_text(json.dumps({"name": "probe", "suite": suite, "criteria": criteria}))
    return p


def _replace_callback(monkeypatch, command: str, fn) -> None:
    monkeypatch.setattr(all_commands()[command], "callback", fn)
