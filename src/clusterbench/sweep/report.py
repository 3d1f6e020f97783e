"""A finished sweep as records and as a table: every subset's value, every node's scores, the
suspects with their evidence."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterbench.families.sweep import BENCHMARK, EFFICIENCY, NODE_SCORE
from clusterbench.records import COMPLETE, FAILED, WARNINGS, Measurement, Run, utc_now
from clusterbench.sweep.analyze import Analysis, SubsetResult
from clusterbench.units import fixed

RATE_UNIT = "GB/s"  # a score in this unit can be held against a link rate


def to_run(results: list[SubsetResult], a: Analysis, test: list[str], metric: str, command: list[str],
           started: str, tags: dict[str, str], rate: float | None) -> tuple[Run, list[Measurement]]:
    """The sweep as one stored run: each subset's value and each node's scores."""
    unit = next((r.unit for r in results if r.value is not None), "")
    ms: list[Measurement] = []
    for r in results:
        if r.value is not None:
            ms.append(Measurement(BENCHMARK, r.stage, r.value, unit,
                                  {"hosts": ",".join(r.hosts), "test": test[0], "test_metric": metric}))
    for stage, scores in (("single", a.single_scores), ("pair", a.pair_scores),
                          ("send", a.send_scores), ("receive", a.receive_scores)):
        for h, v in scores.items():
            p = {"host": h, "stage": stage, "test": test[0], "test_metric": metric,
                 "suspect": any(s.host == h for s in a.suspects)}
            ms.append(Measurement(BENCHMARK, NODE_SCORE.name, v, unit, p))
            # past the float limit (a score of 1.7e308 GB/s on a 1 b/s link) an efficiency is no
            # number the store keeps: the score itself is stored, its efficiency left out
            if rate and unit == RATE_UNIT and math.isfinite(eff := _efficiency(v, rate)):
                ms.append(EFFICIENCY(BENCHMARK, eff, {**p, "link_rate": rate / 1e9}))
    hosts = list(dict.fromkeys(h for r in results for h in r.hosts))
    run = Run(benchmark=BENCHMARK, command=command, started_at=started, ended_at=utc_now(),
              status=COMPLETE if any(r.value is not None for r in results) else FAILED,
              hosts=hosts, ranks=len(hosts), tags=tags,
              errors=[f"{'+'.join(r.hosts)}: {r.error}" for r in results if r.error],
              meta={"test": test, "metric": metric,
                    "suspects": [{"host": s.host, "reason": s.reason, "evidence": s.evidence}
                                 for s in a.suspects],
                    "switch_scores": a.switch_scores,
                    # printed as "# warning:" with the run, and a `warning` line of --json
                    **({WARNINGS: list(a.warnings)} if a.warnings else {})})
    return run, ms


# A node's scores by stage, in the order the table prints them
STAGES = ("single", "pair", "send", "receive")


@dataclass
class NodeVerdict:
    """One node of a sweep as --json's `host` line and a --junit case tell it."""
    host: str
    status: str                                  # "ok" or "suspect"
    scores: dict[str, float | None]              # STAGES -> score; None where the node had none
    unit: str
    reason: str = ""
    evidence: list[str] = field(default_factory=list)

    def fields(self) -> dict[str, Any]:
        """The `host` line's fields after `host` and `status`: send and receive are null for a
        test whose records do not name sender and receiver."""
        return {**self.scores, "unit": self.unit, "reason": self.reason, "evidence": list(self.evidence)}

    def score_lines(self) -> list[str]:
        return [f"{stage} score: {v:.6g}" for stage, v in self.scores.items() if v is not None]

    def message(self) -> str:
        """A failing case's message: the reason names the score that failed (send, receive, ...)."""
        return f"fail: {self.reason}" + (f": {self.evidence[0]}" if self.evidence else "")


def node_verdicts(a: Analysis, results: Sequence[SubsetResult], hosts: Sequence[str]) -> list[NodeVerdict]:
    """Every node of ``hosts``, then any other suspect, with its four scores and its verdict."""
    unit = next((r.unit for r in results if r.unit), "")
    suspects = {s.host: s for s in a.suspects}
    stage_scores = dict(zip(STAGES, (a.single_scores, a.pair_scores, a.send_scores, a.receive_scores),
                            strict=True))
    out = []
    for h in dict.fromkeys([*hosts, *suspects]):
        s = suspects.get(h)
        out.append(NodeVerdict(h, "suspect" if s else "ok", {k: v.get(h) for k, v in stage_scores.items()},
                               unit, s.reason if s else "", list(s.evidence) if s else []))
    return out


def _efficiency(score: float, rate: float) -> float:
    """A GB/s score as a fraction of a link ``rate`` in B/s. score * 1e9 overflows for a score
    near the float limit where the fraction itself does not: then it is divided the other way
    (ordinary scores keep the product's rounding, as stored before)."""
    eff = score * 1e9 / rate
    return eff if math.isfinite(eff) or not math.isfinite(score) else score / (rate / 1e9)


def _score(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def table_lines(a: Analysis, results: list[SubsetResult], metric: str, rate: float | None) -> list[str]:
    """The sweep's verdict as a terminal table: every node's scores, then the suspects."""
    lines: list[str] = []
    unit = next((r.unit for r in results if r.value is not None), "")
    eff = bool(rate) and unit == RATE_UNIT
    # a test whose records name sender and receiver (net) has two more columns; others none
    ways = bool(a.send_scores or a.receive_scores)
    lines.append(f"# sweep: {metric} ({unit}) per node; pair score = median of the node's pairs"
                 + ("; send/receive = median of the node's pairs in that direction" if ways else "")
                 + (f"; efficiency = pair score / link rate {rate / 1e9:g} GB/s" if eff and rate else ""))
    lines.append(f"{'host':>24s} {'single':>12s} {'pairs':>12s} "
                 + (f"{'send':>12s} {'receive':>12s} " if ways else "")
                 + f"{'efficiency' if eff else '':>10s}  flag")
    suspects = {s.host for s in a.suspects}
    hosts = list(dict.fromkeys(h for r in results for h in r.hosts))
    for h in hosts:
        s = a.single_scores.get(h)
        p = a.pair_scores.get(h)
        # fixed: an efficiency off a score near the float limit keeps its 10 characters (%g)
        # a node with no score (its runs failed, or it took part in none) shows "-", not a nan
        # that reads as a broken measurement
        directed = (f"{_score(a.send_scores.get(h)):>12s} {_score(a.receive_scores.get(h)):>12s} "
                    if ways else "")
        lines.append(f"{h:>24s} {_score(s):>12s} {_score(p):>12s} {directed}"
                     f"{(fixed(_efficiency(p, rate), 10, 3) if eff and rate and p is not None else ''):>10s}  "
                     f"{'SUSPECT' if h in suspects else ''}")
    lines += [f"# warning: {w}" for w in a.warnings]
    for sw, v in a.switch_scores.items():
        lines.append(f"# switch {sw}: median pair score {v:.4g} {unit}")
    if not a.suspects and max(len(a.single_scores), len(a.pair_scores)) < 3:
        # two values have no majority: nothing was judged, which is not the same as all agreeing
        lines.append("# no suspect: fewer than 3 nodes scored, no majority to judge a node by")
    elif not a.suspects:
        lines.append("# no suspect: every node is within the threshold of the median")
    for suspect in a.suspects:
        lines.append(f"# SUSPECT {suspect.host}: {suspect.reason}")
        for e in suspect.evidence:
            lines.append(f"#   {e}")
    return lines
