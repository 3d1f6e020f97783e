"""The family table: every benchmark family clusterbench measures or imports, declared once.

Readers ask here which family owns a ``benchmark``, what its metrics mean (unit, direction,
headline), which table prints it and which command measures it. A new family is a module (or
package) in this directory exporting its ``Family`` and one line in ``FAMILIES``.
"""

from __future__ import annotations

import functools

from clusterbench.families import collectives, gemm, serving, stream, sweep, transfer
from clusterbench.families.base import (
    IDENTITY_PARAMS,
    Family,
    Figure,
    GenericRenderer,
    Metric,
    Renderer,
    run_header_lines,
)
from clusterbench.families.net import NET_FAMILY, OSU_FAMILY, RDMA_FAMILY
from clusterbench.families.workloads import DDP_COMM_FAMILY, INFER_TP_FAMILY, TRAIN_FAMILY
from clusterbench.records import Measurement
from clusterbench.units import is_time_unit

FAMILIES: tuple[Family, ...] = (
    collectives.FAMILY,
    stream.FAMILY,
    gemm.FAMILY,
    transfer.FAMILY,
    NET_FAMILY,
    RDMA_FAMILY,
    OSU_FAMILY,
    TRAIN_FAMILY,
    DDP_COMM_FAMILY,
    INFER_TP_FAMILY,
    serving.FAMILY,
    sweep.FAMILY,
)

__all__ = ["FAMILIES", "IDENTITY_PARAMS", "Family", "Figure", "Metric", "Renderer", "by_command",
           "describes_spread", "family_of", "headline_metrics", "higher_is_better", "is_judged", "metric_of", "renderer_for",
           "run_header_lines"]


# The table is fixed at import: a judgement of a thousand runs asks these for each of 400,000
# records, a dozen families' prefixes and metrics scanned each time without the caches.
@functools.lru_cache(maxsize=4096)
def family_of(benchmark: str) -> Family | None:
    return next((f for f in FAMILIES if f.owns(benchmark)), None)


@functools.lru_cache(maxsize=4096)
def metric_of(benchmark: str, metric: str) -> Metric | None:
    family = family_of(benchmark)
    return family.metric(metric) if family else None


def by_command(command: str) -> Family | None:
    """The family a CLI command measures (``coll`` -> collectives)."""
    return next((f for f in FAMILIES if command in f.commands), None)


def higher_is_better(benchmark: str, metric: str, unit: str = "") -> bool:
    """Whether a larger value is better: as the family declares, else lower for times."""
    known = metric_of(benchmark, metric)
    if known is not None:
        return known.higher_is_better
    return not is_time_unit(unit)


def is_judged(benchmark: str, metric: str) -> bool:
    """A performance figure (compared, baselined, checked for outliers), not a count or check."""
    known = metric_of(benchmark, metric)
    return known.judged if known is not None else True


def describes_spread(m: Measurement) -> bool:
    """A record of how a row's iterations spread (``Metric.describes_spread``), which the noise
    check reads and comparisons leave out."""
    known = metric_of(m.benchmark, m.metric)
    return known is not None and known.describes_spread(m.params)


def headline_metrics() -> tuple[str, ...]:
    """The metric names families are judged by (busbw, bandwidth, tflops, ...), once each."""
    return tuple(dict.fromkeys(f.headline.name for f in FAMILIES if f.headline is not None))


def renderer_for(benchmark: str) -> Renderer:
    family = family_of(benchmark)
    if family is None or family.renderer is None:
        return GenericRenderer()
    return family.renderer(benchmark)
