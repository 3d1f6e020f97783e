"""Which node subsets a sweep runs: every node alone, then pairs (all, or a ring for large
clusters, or disjoint batches of k nodes)."""

from __future__ import annotations

from collections.abc import Sequence

from clusterbench.errors import UsageError

PAIR_MODES = ("all", "ring", "none")


def _distinct(hosts: Sequence[str]) -> None:
    """A host twice would pair a node with itself and count its scores twice."""
    seen: set[str] = set()
    for h in hosts:
        if h in seen:
            raise UsageError(f"--hosts: {h} is listed twice")
        seen.add(h)


def pairs(hosts: Sequence[str], mode: str = "all") -> list[tuple[str, str]]:
    _distinct(hosts)
    n = len(hosts)
    if mode == "none" or n < 2:
        return []
    if mode == "all":
        return [(hosts[i], hosts[j]) for i in range(n) for j in range(i + 1, n)]
    if mode == "ring":
        # two nodes close their ring with the same pair backwards: one launch, counted once
        ring: dict[frozenset[str], tuple[str, str]] = {}
        for i in range(n):
            ring.setdefault(frozenset((hosts[i], hosts[(i + 1) % n])), (hosts[i], hosts[(i + 1) % n]))
        return list(ring.values())
    raise UsageError(f"--pairs must be one of {', '.join(PAIR_MODES)}")


def batches(hosts: Sequence[str], k: int) -> list[tuple[str, ...]]:
    """Disjoint groups of k nodes (the last one may be larger); for k-node tests at scale."""
    if k < 2:
        raise UsageError("--batch must be at least 2")
    _distinct(hosts)
    groups = [tuple(hosts[i:i + k]) for i in range(0, len(hosts), k)]
    if len(groups) > 1 and len(groups[-1]) < k:
        groups[-2] = groups[-2] + groups[-1]
        groups.pop()
    return groups
