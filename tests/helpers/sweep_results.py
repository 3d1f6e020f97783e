"""A bad-node sweep's inputs and results: hosts, pairs' bandwidth and latency lines, suspects."""

from __future__ import annotations

import json

from clusterbench.sweep import plan
from clusterbench.sweep.analyze import SubsetResult, pick_value, read_directions
from clusterbench.sweep.run import parse_records

UNIT = "GB/s"


HOSTS = ["n1", "n2", "n3", "n4"]


def _bw(src: str, dst: str, gbps: float) -> str:
    return json.dumps({"benchmark": "net", "metric": "bandwidth", "value": gbps, "unit": "GB/s",
                       "params": {"src_host": src, "dst_host": dst, "streams": 4, "bytes": int(gbps * 2e9),
                                  "protocol": "tcp"}}) + "\n"


def _directed(send_drop: str) -> list[SubsetResult]:
    def speed(s: str, d: str) -> float:
        return 10.0 * (1 + 0.001 * ((HOSTS.index(s) * 7 + HOSTS.index(d) * 3) % 5)) * (0.92 if s == send_drop else 1.0)
    out = []
    for a, b in plan.pairs(HOSTS):
        records = parse_records(_bw(a, b, speed(a, b)) + _bw(b, a, speed(b, a)))
        value, unit = pick_value(records, "bandwidth")  # type: ignore[misc]
        out.append(SubsetResult((a, b), "pair", value, unit, directions=read_directions(records, "bandwidth", (a, b)).values))
    return out


def _suspects(a) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {s.host: s.reason for s in a.suspects}


def _lat(src: str, dst: str, stats: dict[str, float]) -> str:
    """The lines ``net --json`` prints for one pair's round trip, one per stat."""
    return "".join(json.dumps({"benchmark": "net", "metric": "latency_us", "value": v, "unit": "us",
                               "params": {"src_host": src, "dst_host": dst, "src_rank": 0, "dst_rank": 1,
                                          "streams": 1, "bytes": 8, "protocol": "tcp", "iterations": 200,
                                          "stat": s}}) + "\n"
                   for s, v in stats.items())
