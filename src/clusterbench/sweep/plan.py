"""Which node subsets a sweep runs, and in which rounds.

A round is a set of disjoint subsets (no node in two of them), so its subsets can run at once,
each its own launch; the next round starts when the last subset of this one has ended. A plan is
generated lazily, one round when it is reached: every pair of 4,096 nodes is 8.4 million pairs,
which made as one list took 2 GB and 9 s before the first launch. What a plan holds up front is
the host order (and, for random matchings, a shuffle of it and the rounds chosen).

The schedules:

- ``single``: every node alone, one round.
- ``all`` pairs: the circle method (a round-robin tournament). Node ``m-1`` stays put and the
  others sit on a circle of the odd size ``m-1``; in round ``r`` node ``r`` meets ``m-1`` and
  ``r+i`` meets ``r-i`` (mod ``m-1``). Two nodes ``a``, ``b`` of the circle meet in the one round
  with ``2r = a+b`` (mod ``m-1``, an odd number, so 2 has an inverse): every pair exactly once.
  An even count of nodes takes ``n-1`` rounds of ``n/2`` pairs; an odd count takes ``n`` rounds of
  ``(n-1)/2`` pairs, one node sitting out each round, which is the fewest possible (no round can
  hold more than ``(n-1)/2`` disjoint pairs of ``n(n-1)/2``).
- ``ring``: each node with the next in ``--hosts`` order, the last with the first: 2 rounds
  (the even and the odd links) for an even count, 3 for an odd one (the closing link shares a node
  with both of its neighbours' rounds).
- ``random``: ``K`` rounds of the circle method, over a seeded shuffle of the nodes and chosen at
  random among its rounds: ``K`` disjoint random perfect matchings, so every node meets ``K``
  distinct partners (with an odd count one node sits out each round: ``K+1`` rounds, so each
  node still meets at least ``K``). Fewer than ``K+1`` nodes have no ``K`` distinct partners: all
  pairs then.
- ``batch`` of k: disjoint groups of k nodes (the last one may be larger), one round.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from clusterbench.errors import UsageError

PAIR_MODES = ("auto", "all", "ring", "random", "none")

# --pairs auto: all pairs up to this many nodes, random matchings above it. All pairs give every
# node n-1 partners, and up to 32 nodes that is at most 31 rounds (a quarter of an hour at 30 s a
# test); above it the rounds grow with the cluster (1,023 rounds at 1,024 nodes: 8.5 h), while
# random matchings stay at K rounds whatever its size (docs/multi-node.md).
AUTO_ALL_PAIRS_UP_TO = 32
DEFAULT_PARTNERS = 3
DEFAULT_SEED = 0

Subset = tuple[str, ...]


def _distinct(hosts: Sequence[str]) -> None:
    """A host twice would pair a node with itself and count its scores twice."""
    seen: set[str] = set()
    for h in hosts:
        if h in seen:
            raise UsageError(f"--hosts: {h} is listed twice")
        seen.add(h)


def pairs(hosts: Sequence[str], mode: str = "all") -> list[tuple[str, str]]:
    """Every pair a mode tests, as one list (``all``: in ``--hosts`` order; ``ring``: the links in
    order): the set the rounds of a plan cover, for a few nodes (the plan is what a sweep runs)."""
    _distinct(hosts)
    n = len(hosts)
    if mode == "none" or n < 2:
        return []
    if mode == "all":
        return list(itertools.combinations(hosts, 2))
    if mode == "ring":
        return [(hosts[i], hosts[(i + 1) % n]) for i in range(n if n > 2 else 1)]
    raise UsageError("--pairs must be one of all, ring, none")


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


def circle_round(names: Sequence[str], r: int) -> list[tuple[str, str]]:
    """The pairs of round ``r`` of the circle method over ``names`` (``circle_rounds(n)``
    rounds); no pair repeats across rounds. Made by slicing the circle written out twice, so that
    ``r+i`` and ``r-i`` (mod its size) are plain positions, not a modulo per pair."""
    n = len(names)
    if n % 2:   # the circle is all n nodes, and round r leaves out node r, which meets nobody
        c, m, fixed = n, (n - 1) // 2, []
    else:
        c, m, fixed = n - 1, n // 2 - 1, [(names[r], names[n - 1])]
    twice = [*names[:c], *names[:c]]
    # Each pair in --hosts order (the rendezvous on the first), as plan.pairs lists it. Node r+i
    # meets node r-i: for i up to r the lower one is r-i unless r+i wraps past the circle's end
    # (then r+i-c is lower); for i above r, r-i wraps (to r-i+c) and r+i is the lower.
    k1 = min(r, c - 1 - r, m)   # i <= k1: neither wraps
    k2 = min(r, m)              # k1 < i <= k2: r+i wraps; i > k2: r-i wraps
    return [*fixed,
            *zip(reversed(twice[r - k1:r]), twice[r + 1:r + 1 + k1], strict=True),
            *zip(twice[r + k1 + 1:r + k2 + 1], reversed(twice[r - k2:r - k1]), strict=True),
            *zip(twice[r + k2 + 1:r + m + 1], reversed(twice[r + c - m:r + c - k2]), strict=True)]


def circle_rounds(n: int) -> int:
    """How many rounds the circle method takes for ``n`` nodes: n-1 (even n) or n (odd n)."""
    if n < 2:
        return 0
    return n - 1 if n % 2 == 0 else n


@dataclass(frozen=True)
class Stage:
    """One kind of subset (``single`` or ``pair``: the stage it is scored in) and how its rounds
    are made: ``kind`` is single, all, ring, random or batch."""
    stage: str
    kind: str
    hosts: tuple[str, ...]
    batch: int = 2
    partners: int = DEFAULT_PARTNERS
    seed: int = DEFAULT_SEED
    # random: the shuffled host order and the circle rounds taken of it (made once, small)
    order: tuple[str, ...] = field(default=(), repr=False)
    chosen: tuple[int, ...] = field(default=(), repr=False)
    listed: tuple[tuple[Subset, ...], ...] = field(default=(), repr=False)

    def round_sizes(self) -> list[tuple[int, int]]:
        """(subsets in a round, how many rounds have that many), known without making a round."""
        n = len(self.hosts)
        if self.kind == "single":
            return [(n, 1)] if n else []
        if self.kind == "all":
            return [(n // 2, circle_rounds(n))] if n >= 2 else []
        if self.kind == "random":
            return [(n // 2, len(self.chosen))]
        if self.kind == "ring":
            if n < 2:
                return []
            if n == 2:
                return [(1, 1)]
            if n % 2 == 0:
                return [(n // 2, 2)]
            return [((n - 1) // 2, 2), (1, 1)]
        if self.kind == "batch":
            return [(max(1, n // self.batch), 1)] if n >= 2 else []
        return [(len(r), 1) for r in self.listed]

    def rounds(self) -> int:
        return sum(count for _, count in self.round_sizes())

    def subsets(self) -> int:
        return sum(size * count for size, count in self.round_sizes())

    def round(self, i: int) -> list[Subset]:
        """The subsets of round ``i`` of this stage (``0 <= i < rounds()``), made now."""
        h = self.hosts
        n = len(h)
        if self.kind == "single":
            return [(x,) for x in h]
        if self.kind == "all":
            return circle_round(h, i)
        if self.kind == "random":
            return circle_round(self.order, self.chosen[i])
        if self.kind == "ring":
            if n == 2:
                return [(h[0], h[1])]
            if i < 2:   # the links i, i+2, ... that start at an even (round 0) or odd (1) node
                last = n if n % 2 == 0 else n - 1
                return [(h[j], h[(j + 1) % n]) for j in range(i, last, 2)]
            return [(h[n - 1], h[0])]
        if self.kind == "batch":
            return batches(h, self.batch)
        return list(self.listed[i])


@dataclass(frozen=True)
class Round:
    stage: str                    # single or pair
    number: int                   # 1-based, over the whole plan, in the order of a first pass
    subsets: list[Subset]


@dataclass(frozen=True)
class Plan:
    """The rounds of a sweep. ``parallel``: at most this many subsets of a round at once (None:
    all of them: each node takes part in one subset at a time whatever the bound)."""
    stages: tuple[Stage, ...]
    parallel: int | None = None

    def rounds(self, reverse: bool = False) -> Iterator[Round]:
        """Every round, made as it is reached; ``reverse``: last round first, each round's
        subsets backwards (the odd passes of ``--rounds``)."""
        numbered: list[tuple[int, Stage, int]] = []
        first = 1
        for st in self.stages:
            numbered.append((first, st, st.rounds()))
            first += st.rounds()
        order = reversed(numbered) if reverse else iter(numbered)
        for first, st, count in order:
            idx = range(count - 1, -1, -1) if reverse else range(count)
            for i in idx:
                subsets = st.round(i)
                if reverse:
                    subsets.reverse()
                yield Round(st.stage, first + i, subsets)

    def round_starts(self) -> list[int]:
        """The place of each round's first subset among all subsets of a pass, in plan order."""
        out: list[int] = []
        first = 0
        for st in self.stages:
            for size, count in st.round_sizes():
                for _ in range(count):
                    out.append(first)
                    first += size
        return out

    def round_count(self) -> int:
        return sum(st.rounds() for st in self.stages)

    def launches(self) -> int:
        """Subsets in one pass over the plan, each a launch."""
        return sum(st.subsets() for st in self.stages)

    def largest_round(self) -> int:
        return max((size for st in self.stages for size, _ in st.round_sizes()), default=0)

    def waves(self, stage: str | None = None) -> int:
        """Launches one after another in one pass: a round of more subsets than ``parallel`` is
        run in ceil(size / parallel) waves."""
        p = self.parallel
        return sum(count * (math.ceil(size / p) if p else (1 if size else 0))
                   for st in self.stages if stage is None or st.stage == stage
                   for size, count in st.round_sizes())

    def projected_seconds(self, seconds: dict[str, float]) -> float:
        """One pass at ``seconds[stage]`` a subset, a wave after another."""
        return sum(self.waves(st) * s for st, s in seconds.items())


def listed(subsets: Sequence[tuple[str, Subset]]) -> Plan:
    """Subsets given one by one, each its own round, in order (a plan as a sweep ran before
    rounds: for a caller with its own subsets)."""
    stages = [Stage(stage, "listed", (), listed=((tuple(hosts),),)) for stage, hosts in subsets]
    return Plan(tuple(stages), parallel=1)


def build(hosts: Sequence[str], *, single: bool = True, pair_mode: str = "auto", batch: int | None = None,
          partners: int = DEFAULT_PARTNERS, seed: int = DEFAULT_SEED, parallel: int | None = None) -> Plan:
    """The plan of a sweep over ``hosts``: every node alone (``single``), then pairs by
    ``pair_mode`` (auto, all, ring, random, none) or groups of ``batch``."""
    _distinct(hosts)
    h = tuple(hosts)
    if parallel is not None and parallel < 1:
        raise UsageError("--parallel must be at least 1")
    if partners < 1:
        raise UsageError("--partners must be at least 1")
    stages: list[Stage] = []
    if single and h:
        stages.append(Stage("single", "single", h))
    if batch is not None:
        if batch < 2:
            raise UsageError("--batch must be at least 2")
        stages.append(Stage("pair", "batch", h, batch=batch))
    elif pair_mode != "none" and len(h) >= 2:
        mode = pair_mode
        if mode == "auto":
            mode = "all" if len(h) <= AUTO_ALL_PAIRS_UP_TO else "random"
        if mode not in PAIR_MODES:
            raise UsageError(f"--pairs must be one of {', '.join(PAIR_MODES)}")
        if mode == "random":
            stages.append(_random_stage(h, partners, seed))
        else:
            stages.append(Stage("pair", mode, h))
    return Plan(tuple(stages), parallel)


def _random_stage(h: tuple[str, ...], partners: int, seed: int) -> Stage:
    n = len(h)
    available = circle_rounds(n)
    # an odd count leaves one node out of each round: one round more, so each meets K at least
    wanted = partners + (n % 2)
    if wanted >= available:   # K distinct partners need K+1 nodes or more: every pair, then
        return Stage("pair", "all", h, partners=partners, seed=seed)
    rng = random.Random(seed)
    order = list(h)
    rng.shuffle(order)
    chosen = tuple(sorted(rng.sample(range(available), wanted)))
    return Stage("pair", "random", h, partners=partners, seed=seed, order=tuple(order), chosen=chosen)
