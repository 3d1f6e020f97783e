"""Tests of clusterbench.sweep.plan: which node subsets a sweep runs."""

from __future__ import annotations

import pytest
from sweep_results import HOSTS

from clusterbench.errors import UsageError
from clusterbench.sweep import plan


def test_plan_pairs_ring_batches():
    assert plan.pairs(HOSTS[:3]) == [("n1", "n2"), ("n1", "n3"), ("n2", "n3")]
    assert plan.pairs(HOSTS, "ring") == [("n1", "n2"), ("n2", "n3"), ("n3", "n4"), ("n4", "n1")]
    assert plan.pairs(HOSTS, "none") == []
    assert plan.batches(HOSTS + ["n5"], 2) == [("n1", "n2"), ("n3", "n4", "n5")]
    with pytest.raises(UsageError):
        plan.batches(HOSTS, 1)


def test_plan_refuses_a_host_twice():
    """A host twice made a pair of a node with itself, its score counted twice."""
    with pytest.raises(UsageError, match="listed twice"):
        plan.pairs(["a", "b", "a"])
    with pytest.raises(UsageError, match="listed twice"):
        plan.batches(["a", "b", "a", "c"], 2)
    assert plan.pairs(["a"]) == []
    # a ring of two closed itself with the same pair backwards: launched and counted twice
    assert plan.pairs(["a", "b"], "ring") == [("a", "b")]
    assert plan.pairs(["a", "b", "c"], "ring") == [("a", "b"), ("b", "c"), ("c", "a")]
