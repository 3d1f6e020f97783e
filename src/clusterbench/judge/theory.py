"""Theoretical limits: the best a collective can do over a given network.

For n nodes on links of bandwidth B (bytes/s each way, full duplex), every node must send and
receive 2(n-1)/n of the buffer, so the optimal algorithm bandwidth (nccl-tests' algbw = S/t) is
``B * n / (2 (n - 1))`` (Y. Bulatov, "Benchmarking AWS 100Gbps network", which tabulates
12.5, 8.33, 7.14, 6.67, 6.52, 6.45 GB/s for 2..32 nodes at 100 Gbps). The matching bus bandwidth
(algbw * 2(n-1)/n) is B itself: busbw's definition makes it comparable to the link speed. Other
collectives follow from their bus factors (``families.collectives.spec.optimal_algbw``).

This holds for the inter-node link when intra-node aggregation is free (hierarchical all_reduce),
so ``nodes`` is the number of hosts, not GPUs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from clusterbench.errors import UsageError
from clusterbench.families import family_of, metric_of
from clusterbench.families.collectives.spec import busbw, optimal_algbw
from clusterbench.judge.compare import percent_text
from clusterbench.records import Measurement
from clusterbench.units import parse_rate

THEORY_OP = "all_reduce"   # the collective ``clusterbench theory`` tabulates


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
        algbw = optimal_algbw(THEORY_OP, rate, n)
        assert algbw is not None  # parse_nodes admits 2 or more
        rows.append(TheoryRow(n, rate * 8 / 1e9, algbw, busbw(THEORY_OP, algbw, n)))
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
    placement: str      # out / in for collectives, src->dst for a pair of hosts, "" otherwise
    nodes: int
    measured_algbw: float
    optimal_algbw: float

    @property
    def ratio(self) -> float:
        return self.measured_algbw / self.optimal_algbw

    def percent_text(self, decimals: int = 0) -> str:
        """measured / optimal in percent as text: ``8e+300%`` or ``1.36e+320%`` over a 1 bps link
        where ``ratio * 100`` is inf, ``3.95e-323%`` where the float ratio is 0."""
        return percent_text(self.measured_algbw, self.optimal_algbw, decimals)

    @property
    def label(self) -> str:
        """What the row is, as the table lines print it: ``all_reduce in-place 8589934592 B``."""
        where = {"out": "out-of-place", "in": "in-place"}.get(self.placement, self.placement)
        return " ".join(w for w in (self.benchmark, where, f"{self.bytes} B") if w)


def _where(m: Measurement) -> str:
    if "placement" in m.params:
        return str(m.params["placement"])
    if "src_host" in m.params and "dst_host" in m.params:
        return f"{m.params['src_host']}->{m.params['dst_host']}"
    return ""


def _nodes(m: Measurement, run_nodes: int) -> int:
    """The n of a row: its own ``nodes`` param (DDP on one host), 2 for a pair of hosts, else the run's."""
    if "nodes" in m.params:
        return int(m.params["nodes"])
    if "src_host" in m.params and "dst_host" in m.params:
        return 2
    return run_nodes


def link_efficiency(measurements: Iterable[Measurement], nodes: int,
                    link_bytes_per_s: float) -> list[Efficiency]:
    """measured / optimal for every link-bound row (collective algbw, DDP's gradient algbw, a
    host pair's bandwidth); per-step rows and best-of statistics are left out."""
    out = []
    for m in measurements:
        metric = metric_of(m.benchmark, m.metric)
        if metric is None or not metric.link_bound or "step" in m.params \
                or m.params.get("stat", "avg") != "avg":
            continue
        family = family_of(m.benchmark)
        op = (family.link_op if family else None) or m.benchmark
        n = _nodes(m, nodes)
        opt = optimal_algbw(op, link_bytes_per_s, n)
        if opt is None:
            continue
        out.append(Efficiency(m.benchmark, int(m.params.get("bytes", 0)), _where(m), n, m.value, opt))
    return out
