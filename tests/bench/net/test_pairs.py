"""Tests of clusterbench.bench.net.pairs."""

from __future__ import annotations

from clusterbench.bench.net.pairs import endpoints_of, ordered_pairs


def test_net_pairs_and_endpoints():
    assert ordered_pairs(3, "all") == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert ordered_pairs(2, "ring") == [(0, 1), (1, 0)]
    assert endpoints_of(["a", "a", "b", "b"]) == ([0, 2], "host")
    assert endpoints_of(["a", "a"]) == ([0, 1], "rank")
