"""Rank 0 of a two-rank net benchmark, faked: its context, and its peer's answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from clusterbench.ranks.context import RankOptions


@dataclass
class FakeCtx:
    """Rank 0 of two on one host: what net's per-rank code uses of a RankContext."""
    launcher: str = "local"
    rank: int = 0
    world_size: int = 2
    hosts: list[str] = field(default_factory=lambda: ["h", "h"])
    options: RankOptions = field(default_factory=lambda: RankOptions("cpu", "gloo", 30.0, 0.0))
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rows: list[Any] = field(default_factory=list)

    @property
    def env(self) -> SimpleNamespace:
        return SimpleNamespace(launcher=self.launcher, master_addr="no-such-host.invalid")

    def fail(self, reason: str) -> None:
        self.failures.append(reason)

    def note(self, text: str, benchmark: str | None = None) -> None:
        self.notes.append(text)

    def record(self, rows: Any) -> None:
        self.rows.extend(rows)

    def meta(self, data: dict[str, Any]) -> None:
        pass

    def progress(self) -> None:
        pass


def _peer_gathers(monkeypatch: pytest.MonkeyPatch, peer: Any) -> None:
    """all_gather_object where rank 1 gives ``peer(call, mine)``."""
    import torch.distributed as dist

    calls = iter(range(1000))

    def gather(out: list[Any], obj: Any) -> None:
        out[0], out[1] = obj, peer(next(calls), obj)

    monkeypatch.setattr(dist, "all_gather_object", gather)
