"""Host/device and device/device copies: the ``transfer`` benchmark."""

from __future__ import annotations

from clusterbench.families.base import Family, Figure, HeadlineRows
from clusterbench.families.transfer.spec import BANDWIDTH, BENCHMARK, METRICS
from clusterbench.families.transfer.table import TransferTable

FAMILY = Family(
    name="transfer",
    title="Transfers",
    benchmarks=(BENCHMARK,),
    metrics=METRICS,
    # iteration (SHOW_ITERATIONS rows), subexecutors (the scaling preset's rows) and rank (a
    # multi-rank config table) tell rows apart that the other params leave alike
    row_params=("test", "direction", "method", "src", "dst", "stat", "bytes", "iteration", "subexecutors", "rank"),
    renderer=lambda _benchmark: TransferTable(),
    commands=("transfer",),
    # bidirectional pairs have one combined cell (their legs carry a ``leg`` param, skipped);
    # config tests (imported: test config; native: transfers with subexecs) are a handful of
    # named transfers: a table, not a matrix
    figure=Figure("matrix", (BANDWIDTH.name,), split=("test", "direction", "method"),
                  select={"stat": "pair"}, skip={"test": ("config",), "subexecs": (), "leg": ()}),
    # a test's average or aggregate, not every cell of its matrix (488 series a host)
    headline_rows=HeadlineRows(only=(("stat", ("average", "aggregate")),), without=("leg", "iteration")),
)
