"""Fixtures the tests of bench/collectives share."""

from __future__ import annotations

import pytest


@pytest.fixture
def one_rank_group():
    """A one-process gloo group: P2POp and the bound calls need a default group to exist."""
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()
