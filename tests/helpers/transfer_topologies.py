"""Hosts' GPU and NUMA topologies, as the transfer benchmark reads them."""

from __future__ import annotations

from clusterbench.bench.transfer import engine

CPU = engine.Topology(0, (0,), {0: (0,)})


GPUS8 = engine.Topology(8, (0, 1), {0: (0,), 1: (1,)})
