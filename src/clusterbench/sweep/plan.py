"""Which node subsets a sweep runs: every node alone, then pairs (all, or a ring for large
clusters, or disjoint batches of k nodes)."""

from __future__ import annotations

from collections.abc import Sequence

from clusterbench.errors import UsageError

PAIR_MODES = ("all", "ring", "none")


def pairs(hosts: Sequence[str], mode: str = "all") -> list[tuple[str, str]]:
    n = len(hosts)
    if mode == "none" or n < 2:
        return []
    if mode == "all":
        return [(hosts[i], hosts[j]) for i in range(n) for j in range(i + 1, n)]
    if mode == "ring":
        out = [(hosts[i], hosts[(i + 1) % n]) for i in range(n)]
        return list(dict.fromkeys(tuple(p) for p in out if p[0] != p[1]))
    raise UsageError(f"--pairs must be one of {', '.join(PAIR_MODES)}")


def batches(hosts: Sequence[str], k: int) -> list[tuple[str, ...]]:
    """Disjoint groups of k nodes (the last one may be larger); for k-node tests at scale."""
    if k < 2:
        raise UsageError("--batch must be at least 2")
    groups = [tuple(hosts[i:i + k]) for i in range(0, len(hosts), k)]
    if len(groups) > 1 and len(groups[-1]) < k:
        groups[-2] = groups[-2] + groups[-1]
        groups.pop()
    return groups
