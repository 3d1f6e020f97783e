"""``clusterbench sweep`` results: each node and pair's value of the test's metric, and the
per-node scores the bad-node analysis ranks (in the unit of the test's metric)."""

from __future__ import annotations

from clusterbench.families.base import Family, Metric

BENCHMARK = "sweep"
SINGLE = Metric("single", "", about="the test's value on one node alone")
PAIR = Metric("pair", "", about="the test's value on a pair (or batch) of nodes")
NODE_SCORE = Metric("node_score", "", headline=True, about="median of a node's subset values")
EFFICIENCY = Metric("efficiency", "", about="node score / link rate")

FAMILY = Family(
    name="sweep", title="Bad-node sweep", benchmarks=(BENCHMARK,),
    metrics=(SINGLE, PAIR, NODE_SCORE, EFFICIENCY), row_params=("stage", "hosts", "host", "test"),
    commands=("sweep",),
)
