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
from clusterbench.units import MAX_UINT64, parse_rate, whole_number, whole_number_or_none

THEORY_OP = "all_reduce"   # the collective ``clusterbench theory`` tabulates

# The largest node count the table takes: past 2**53 a float (and a JSON reader's number) no
# longer holds every integer, and n / (n - 1) is 1 to the last bit anyway. A stored run's count
# above it (a ``nodes`` tag of 400 digits) is judged as this many: the same optimum, no overflow.
MAX_NODES = 2**53

# A --link longer than this is no rate; the error quotes only its start.
_MAX_LINK_CHARS = 64


@dataclass(frozen=True)
class TheoryRow:
    nodes: int
    link_gbps: float
    algbw: float  # GB/s
    busbw: float  # GB/s


def parse_link(text: str) -> float:
    """A link speed as the user typed it, in bytes/s, or one short line saying why not."""
    if len(text) > _MAX_LINK_CHARS:
        raise UsageError(f"invalid rate {text[:32]!r}...: too long for a rate (e.g. 100Gbps, 50GB/s)")
    return parse_rate(text)


def theory_table(link: str, nodes: list[int]) -> list[TheoryRow]:
    rate = parse_link(link)
    rows = []
    for n in nodes:
        algbw = optimal_algbw(THEORY_OP, rate, n)
        assert algbw is not None  # parse_nodes admits 2 or more
        rows.append(TheoryRow(n, rate * 8 / 1e9, algbw, busbw(THEORY_OP, algbw, n)))
    return rows


def parse_nodes(text: str) -> list[int]:
    """Comma-separated node counts, each a whole number from 2 to ``MAX_NODES`` (``whole_number``:
    ASCII digits only, so neither ``²`` nor ``٢``)."""
    return [whole_number(part, what="node count", minimum=2, maximum=MAX_NODES) for part in text.split(",")]


def link_speed_for(tags: Mapping[str, str], override: str | None) -> float | None:
    """Link speed in bytes/s: the ``--link-speed`` option, else the run tag ``link_speed``. An
    option given empty is an error, not a fall back to the tag."""
    if override is not None:
        return parse_link(override)
    text = tags.get("link_speed")
    return parse_link(text) if text else None


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


def _nodes(m: Measurement, run_nodes: int) -> int | None:
    """The n of a row: its own ``nodes`` param (DDP on one host), 2 for a pair of hosts, else the
    run's; None where the row's own param is no node count (imported params may hold anything:
    int() truncated 2.5 nodes to 2 and raised on ``"x"`` and ``"²"``). Past ``MAX_NODES`` it is
    that many."""
    if "nodes" in m.params:
        return whole_number_or_none(m.params["nodes"], maximum=MAX_NODES, clamp=True)
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
        opt = None if n is None else optimal_algbw(op, link_bytes_per_s, min(n, MAX_NODES))
        if n is None or opt is None:
            continue
        size = whole_number_or_none(m.params.get("bytes", 0), maximum=MAX_UINT64) or 0
        out.append(Efficiency(m.benchmark, size, _where(m), n, m.value, opt))
    return out
