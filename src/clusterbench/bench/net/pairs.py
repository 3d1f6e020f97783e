"""Which ranks a network matrix spans, in which pairs, and how long one pair may take: shared by
the TCP and RDMA tests."""

from __future__ import annotations

PAIR_MODES = ("all", "ring")


def endpoints_of(hosts: list[str]) -> tuple[list[int], str]:
    """Ranks that take part (one per host) and whether the matrix is per host or per rank."""
    if len(set(hosts)) > 1:
        firsts: dict[str, int] = {}
        for r, h in enumerate(hosts):
            firsts.setdefault(h, r)
        return sorted(firsts.values()), "host"
    return list(range(len(hosts))), "rank"


def ordered_pairs(n: int, mode: str) -> list[tuple[int, int]]:
    """Directed (src, dst) index pairs: every ordered pair, or each node to its ring neighbours."""
    if n < 2:
        return []
    if mode == "ring":
        pairs = [(i, (i + 1) % n) for i in range(n)] + [((i + 1) % n, i) for i in range(n)]
        return list(dict.fromkeys(p for p in pairs if p[0] != p[1]))
    return [(i, j) for i in range(n) for j in range(n) if i != j]


def pair_budget(timeout: float) -> float:
    """Seconds one pair's test may take: the other ranks wait for it, and give up (and the
    watchdog ends the run) after --timeout without progress; the rest is for passing results."""
    return 0.8 * timeout
