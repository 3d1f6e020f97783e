"""Which node a failed criterion is on: the per-node verdicts ``--on-fail drain|taint`` acts on.

A criterion names a node when its failing measurements carry a host (a ``host`` param, or the
run's only host). A multi-node measurement (an all_reduce over 16 nodes) belongs to no single
node: it is reported, never turned into a drain of every node of the job (``clusterbench sweep``
finds the bad one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from clusterbench.judge.select import Row, Selection
from clusterbench.judge.validate import ERROR, FAIL, SKIPPED, Outcome


@dataclass
class NodeFindings:
    problems: dict[str, list[str]] = field(default_factory=dict)   # host -> one text per failure
    checked: list[str] = field(default_factory=list)               # hosts any criterion saw
    unsure: list[str] = field(default_factory=list)                # hosts of errored criteria
    notes: list[str] = field(default_factory=list)                 # failures with no single node


def problem_text(o: Outcome, value: float) -> str:
    """``<criterion> <measured> <op> <threshold>``: what the Slurm reason says after the prefix."""
    c = o.criterion
    if c.outliers:
        med = next((f["median"] for f in o.outliers if f.get("value") == value), None)
        against = f" (median {med:.4g} {o.unit})" if med is not None else ""
        return f"{c.name} {value:.4g} {o.unit} outlier{against}"
    return f"{c.name} {value:.4g} {o.unit} {o.threshold}"


def node_findings(outcomes: Sequence[Outcome], rows: Sequence[Row]) -> NodeFindings:
    out = NodeFindings()
    seen: dict[str, None] = {}
    unsure: dict[str, None] = {}
    index = Selection(rows)
    for o in outcomes:
        if o.status == SKIPPED:
            continue
        c = o.criterion
        for r in index.select(c.benchmark, c.metric, c.params, c.absent):
            host = r.key("host")
            if host is not None:
                seen.setdefault(host)
                if o.status == ERROR:  # not judged: neither a failure nor a pass of this node
                    unsure.setdefault(host)
        if o.status != FAIL:
            continue
        if not o.failing:
            out.notes.append(f"{c.name}: failed on measurements that belong to no single node "
                             "(a multi-node result): run `clusterbench sweep` to find the node")
        for host, value in o.failing.items():
            out.problems.setdefault(host, []).append(problem_text(o, value))
    out.checked = list(seen)
    out.unsure = list(unsure)
    return out


def passing_nodes(f: NodeFindings) -> list[str]:
    """Nodes every judged criterion passed on: the ones ``--undrain`` may resume."""
    return [h for h in f.checked if h not in f.problems and h not in f.unsure]
