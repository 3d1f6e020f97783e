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


def _rounds(p: plan.Plan) -> list[list[tuple[str, ...]]]:
    return [r.subsets for r in p.rounds()]


def _check_disjoint(rounds: list[list[tuple[str, ...]]]) -> None:
    for subsets in rounds:
        nodes = [h for s in subsets for h in s]
        assert len(nodes) == len(set(nodes)), subsets


@pytest.mark.parametrize("n", [*range(2, 20), 32, 33, 64, 101])
def test_all_pairs_in_the_fewest_rounds_of_disjoint_pairs(n):
    """The circle method: every pair exactly once, no node twice in a round, n-1 rounds of n/2
    pairs (even n) or n rounds of (n-1)/2 (odd n, one node sitting out each round)."""
    hosts = [f"h{i}" for i in range(n)]
    p = plan.build(hosts, single=False, pair_mode="all")
    rounds = _rounds(p)
    _check_disjoint(rounds)
    met = [frozenset(s) for r in rounds for s in r]
    assert len(met) == len(set(met)) == n * (n - 1) // 2
    assert set(met) == {frozenset(x) for x in plan.pairs(hosts)}
    assert len(rounds) == p.round_count() == (n - 1 if n % 2 == 0 else n)
    assert all(len(r) == n // 2 for r in rounds) and p.largest_round() == n // 2
    # each pair in --hosts order, as plan.pairs gives it (its first host holds the rendezvous)
    assert all(hosts.index(a) < hosts.index(b) for r in rounds for a, b in r)
    assert p.launches() == len(met)


def test_a_1024_node_sweep_is_1024_rounds_made_one_at_a_time():
    """The issue's bound: a 1,024-node pair sweep in at most 1,100 rounds; the plan holds no pair
    list (1,023 rounds of 512 pairs are made as they are reached)."""
    hosts = [f"gpu{i:04d}" for i in range(1, 1025)]
    p = plan.build(hosts, pair_mode="all")
    assert p.round_count() == 1024 <= 1100 and p.launches() == 1024 + 1024 * 1023 // 2
    assert p.waves() == 1024 and plan.build(hosts, pair_mode="all", parallel=100).waves() == 11 + 1023 * 6
    rounds = p.rounds()
    first, second = next(rounds), next(rounds)
    assert first.stage == "single" and len(first.subsets) == 1024
    assert second.stage == "pair" and len(second.subsets) == 512
    _check_disjoint([second.subsets])
    # no field of the plan grows with the pairs: only the host order is kept
    assert all(len(st.listed) == 0 and len(st.order) == 0 for st in p.stages)


@pytest.mark.parametrize("n", [4, 5, 6, 7, 8])
def test_ring_in_two_or_three_rounds(n):
    hosts = [f"h{i}" for i in range(n)]
    p = plan.build(hosts, single=False, pair_mode="ring")
    rounds = _rounds(p)
    _check_disjoint(rounds)
    assert len(rounds) == (2 if n % 2 == 0 else 3)
    links = [frozenset(s) for r in rounds for s in r]
    assert len(links) == n and set(links) == {frozenset(x) for x in plan.pairs(hosts, "ring")}


@pytest.mark.parametrize("n", [40, 41, 100, 101])
@pytest.mark.parametrize("k", [3, 5])
def test_random_matchings_give_every_node_k_distinct_partners(n, k):
    hosts = [f"h{i}" for i in range(n)]
    p = plan.build(hosts, single=False, pair_mode="random", partners=k, seed=7)
    rounds = _rounds(p)
    _check_disjoint(rounds)
    assert len(rounds) == k + n % 2   # an odd count: one node sits out each round, one round more
    partners: dict[str, set[str]] = {h: set() for h in hosts}
    met = [frozenset(s) for r in rounds for s in r]
    assert len(met) == len(set(met))   # no pair twice
    for a, b in (tuple(s) for s in met):
        partners[a].add(b)
        partners[b].add(a)
    assert min(len(v) for v in partners.values()) >= k
    assert _rounds(plan.build(hosts, single=False, pair_mode="random", partners=k, seed=7)) == rounds
    assert _rounds(plan.build(hosts, single=False, pair_mode="random", partners=k, seed=8)) != rounds


def test_auto_is_all_pairs_for_a_few_nodes_and_random_matchings_above():
    few = [f"h{i}" for i in range(plan.AUTO_ALL_PAIRS_UP_TO)]
    many = [f"h{i}" for i in range(plan.AUTO_ALL_PAIRS_UP_TO + 1)]
    assert plan.build(few, single=False).stages[0].kind == "all"
    st = plan.build(many, single=False).stages[0]
    assert st.kind == "random" and st.partners == plan.DEFAULT_PARTNERS
    # fewer nodes than K+1 have no K distinct partners each: every pair instead
    assert plan.build(HOSTS, single=False, pair_mode="random", partners=3).stages[0].kind == "all"


def test_batches_single_and_the_bad_values():
    p = plan.build(HOSTS + ["n5"], batch=2)
    assert _rounds(p) == [[("n1",), ("n2",), ("n3",), ("n4",), ("n5",)], [("n1", "n2"), ("n3", "n4", "n5")]]
    assert p.waves("single") == 1 and p.waves("pair") == 1
    assert plan.build(HOSTS, pair_mode="none", single=False).launches() == 0
    for kw, words in (({"parallel": 0}, "--parallel"), ({"partners": 0}, "--partners"), ({"batch": 1}, "--batch"),
                      ({"pair_mode": "star"}, "--pairs")):
        with pytest.raises(UsageError, match=words):
            plan.build(HOSTS, **kw)
    with pytest.raises(UsageError, match="listed twice"):
        plan.build(["a", "b", "a"])


def test_reverse_pass_and_round_starts():
    """An odd --rounds pass runs the plan backwards; round_starts places every round's first subset
    in the plan's order, as run_sweep keys results by it."""
    p = plan.build(HOSTS + ["n5"], pair_mode="ring")
    forward = list(p.rounds())
    backward = list(p.rounds(reverse=True))
    assert [r.number for r in backward] == [r.number for r in reversed(forward)]
    assert [s for r in backward for s in r.subsets] == [s for r in forward for s in r.subsets][::-1]
    starts = p.round_starts()
    flat = [s for r in forward for s in r.subsets]
    assert [flat[i] for i in starts] == [r.subsets[0] for r in forward]
    assert p.projected_seconds({"single": 10.0, "pair": 30.0}) == 10.0 + 3 * 30.0


def test_listed_subsets_run_one_a_round():
    p = plan.listed([("single", ("a",)), ("pair", ("a", "b"))])
    assert [(r.stage, r.subsets) for r in p.rounds()] == [("single", [("a",)]), ("pair", [("a", "b")])]
    assert p.parallel == 1 and p.waves() == 2
