"""Theoretical limits: the best all_reduce can do over a given network.

For n nodes on links of bandwidth B (bytes/s each way, full duplex), every node must send and
receive 2(n-1)/n of the buffer, so the optimal algorithm bandwidth (nccl-tests' algbw = S/t) is
``B * n / (2 (n - 1))`` (Y. Bulatov, "Benchmarking AWS 100Gbps network", which tabulates
12.5, 8.33, 7.14, 6.67, 6.52, 6.45 GB/s for 2..32 nodes at 100 Gbps). The matching bus bandwidth
(algbw * 2(n-1)/n) is B itself: busbw's definition makes it comparable to the link speed.

This holds for the inter-node link when intra-node aggregation is free (hierarchical all_reduce),
so ``nodes`` is the number of hosts, not GPUs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from clusterbench.bench.collectives.spec import BUSBW_FACTORS
from clusterbench.errors import UsageError
from clusterbench.units import parse_rate


def optimal_allreduce_algbw(link_bytes_per_s: float, nodes: int) -> float:
    """Optimal all_reduce algbw in GB/s for ``nodes`` nodes over links of the given bytes/s."""
    if nodes < 2:
        raise UsageError(f"theory needs at least 2 nodes, got {nodes}")
    return link_bytes_per_s * nodes / (2 * (nodes - 1)) / 1e9


def optimal_algbw(benchmark: str, link_bytes_per_s: float, nodes: int) -> float | None:
    """Optimal algbw (GB/s) of a collective across ``nodes`` nodes: link speed / bus factor.

    busbw is defined so that a collective at full link speed shows busbw == B, hence the optimum
    algbw is B / factor(n); for all_reduce that is B*n/(2(n-1)). None for unknown collectives.
    """
    factor = BUSBW_FACTORS.get(benchmark)
    if factor is None or nodes < 2:
        return None
    return link_bytes_per_s / factor(nodes) / 1e9


@dataclass(frozen=True)
class TheoryRow:
    nodes: int
    link_gbps: float
    algbw: float  # GB/s
    busbw: float  # GB/s


def theory_table(link: str, nodes: list[int]) -> list[TheoryRow]:
    rate = parse_rate(link)
    rows = []
    for n in nodes:
        algbw = optimal_allreduce_algbw(rate, n)
        rows.append(TheoryRow(n, rate * 8 / 1e9, algbw, algbw * 2 * (n - 1) / n))
    return rows


def parse_nodes(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 2:
            raise UsageError(f"invalid node count {part!r} in {text!r}: expected integers >= 2")
        out.append(int(part))
    return out


def link_speed_for(tags: Mapping[str, str], override: str | None) -> float | None:
    """Link speed in bytes/s: the ``--link-speed`` option, else the run tag ``link_speed``."""
    text = override or tags.get("link_speed")
    return parse_rate(text) if text else None


@dataclass(frozen=True)
class Efficiency:
    benchmark: str
    bytes: int
    placement: str
    nodes: int
    measured_algbw: float
    optimal_algbw: float

    @property
    def ratio(self) -> float:
        return self.measured_algbw / self.optimal_algbw


def collective_efficiency(measurements, nodes: int, link_bytes_per_s: float) -> list[Efficiency]:
    """measured algbw / optimal algbw for every collective algbw row (largest rows matter most)."""
    out = []
    for m in measurements:
        if m.metric != "algbw":
            continue
        opt = optimal_algbw(m.benchmark, link_bytes_per_s, nodes)
        if opt is None:
            continue
        out.append(Efficiency(m.benchmark, int(m.params.get("bytes", 0)),
                              str(m.params.get("placement", "")), nodes, m.value, opt))
    return out
