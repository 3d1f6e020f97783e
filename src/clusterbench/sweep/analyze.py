"""From per-node and per-pair results to suspects: pure functions, no processes.

A node's pair score is the median of the pairs it took part in. A degraded link makes every
pair of its node slow, while a healthy node has at most one slow pair per bad neighbour, so
the median separates the two; a single noisy pair drags two nodes equally and flags neither.
Outliers among node scores come from ``clusterbench.judge.outliers`` (modified z-score).
A subset that failed to run at all (a node that never joined, died, or cannot be reached) is
evidence by itself: its hosts named in the failure are suspects. A failure that names nobody (a
crash, an exit code) is laid on those of its hosts that failed most often, as a share of their
runs: a dead node fails every pair it is in, and its partners, which worked everywhere else, are
not drained beside it; where nothing tells its hosts apart, all of them are named.
A switch is judged by its nodes' pair scores and named only when most of its nodes are slow: one
degraded node drags the median of a two-node switch halfway, and its healthy neighbour with it.
Where the test's records name who sent and who received (``net``: ``src_host``, ``dst_host``),
a node is also scored as a sender and as a receiver, each judged against the other nodes' scores
of that direction: a NIC slow one way only is slow in half of its pair's value, which the pair
score dilutes below ``min_rel_dev``, and in all of its scores of that direction. A record names its
ends as each node names itself (its hostname, or ``CLUSTERBENCH_HOSTNAME``); a name that is no
``--hosts`` entry, or could be more than one, leaves the directions out, and the analysis says
which names did (``Analysis.warnings``), once.
Where a metric's rows carry a ``stat`` (``net``'s ``latency_us``: min, avg, p50, max) the typical
one is taken (``TYPICAL_STATS``), never the mean of all of them; a time or latency of 0 or less is
no measurement (``no_measurement``).
"""

from __future__ import annotations

import ipaddress
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from clusterbench.errors import UsageError
from clusterbench.hostlist import MAX_HOSTS, expand_hostlist
from clusterbench.ingest.common import finite
from clusterbench.judge.outliers import Outlier, flag_outliers
from clusterbench.judge.stats import median

K = TypeVar("K")

# The stat a sweep ranks by where a metric's rows carry one, the first of these present: the
# typical value (net's latency_us p50, the median round trip, which one slow round trip does not
# move; perftest's typical). Averaging min, avg, p50 and max gave a figure no tool reports.
TYPICAL_STATS = ("p50", "median", "typical", "avg", "mean")


@dataclass
class SubsetResult:
    hosts: tuple[str, ...]
    stage: str                       # "single" or "pair"
    value: float | None = None       # the chosen metric; None when the subset failed
    unit: str = ""
    error: str | None = None
    # (sender, receiver) -> value, for a test whose records name both ends (net); empty otherwise
    directions: dict[tuple[str, str], float] = field(default_factory=dict)
    # the host names the records gave that are no host of the subset (or more than one)
    unmatched: tuple[str, ...] = ()
    # hosts the agent could not reach (exit 255): another round cannot reach them either
    unreachable: tuple[str, ...] = ()


@dataclass
class Suspect:
    host: str
    reason: str
    evidence: list[str] = field(default_factory=list)


@dataclass
class Analysis:
    single_scores: dict[str, float]
    pair_scores: dict[str, float]
    suspects: list[Suspect]
    switch_scores: dict[str, float] = field(default_factory=dict)
    send_scores: dict[str, float] = field(default_factory=dict)
    receive_scores: dict[str, float] = field(default_factory=dict)
    # what the verdict could not use, each said once (a one-line text)
    warnings: list[str] = field(default_factory=list)


@dataclass
class Directions:
    values: dict[tuple[str, str], float]
    unmatched: tuple[str, ...] = ()   # record host names no --hosts entry is, or several are


def metric_rows(records: Sequence[Mapping], metric: str) -> list[Mapping]:
    """The rows of ``metric``, of one ``stat`` where they carry one: the first of ``TYPICAL_STATS``
    present, else the first stat of the records. A row whose value is no finite number (NaN, a
    word from a broken agent) is no row: scored, it was a traceback or a NaN score."""
    rows = [r for r in records if r.get("metric") == metric and finite(r.get("value")) is not None]
    stats = [s for s in (_params(r).get("stat") for r in rows) if s is not None]
    if not stats:
        return rows
    chosen = next((s for s in TYPICAL_STATS if s in stats), stats[0])
    return [r for r in rows if _params(r).get("stat") == chosen]


def no_measurement(records: Sequence[Mapping], metric: str, hosts: Sequence[str],
                   higher_is_better: bool) -> str | None:
    """Why the rows of ``metric`` are no measurement, naming the host that took it: a time or a
    latency (lower is better) of 0 or less, or not a number, would rank its node the best of all.
    Every row counts, of every ``stat``: a round trip of 0 is a broken clock whichever it is.
    The host is the sender of a row that names one (who timed it), else a one-node subset's."""
    if higher_is_better:
        return None
    for r in records:
        if r.get("metric") != metric:
            continue
        v = finite(r.get("value"))
        if v is not None and v > 0:
            continue
        src, dst = _params(r).get("src_host"), _params(r).get("dst_host")
        who = _match_host(src, hosts) if isinstance(src, str) else []
        host = who[0] if len(who) == 1 else hosts[0] if len(hosts) == 1 else None
        what = f"{metric} {r.get('value')} {r.get('unit', '')}".rstrip()
        to = f" to {dst}" if isinstance(dst, str) and dst else ""
        why = "no measurement (a time or latency is above 0)"
        return f"host {host} measured {what}{to}, {why}" if host else f"{what}{to} is {why}"
    return None


def pick_value(records: Sequence[Mapping], metric: str) -> tuple[float, str] | None:
    """Mean of ``metric`` over the rows at the largest ``bytes`` (all rows when none has bytes).
    Rows that name their sender and receiver (net) are taken per direction, each at its own
    largest ``bytes``, and the directions averaged: there ``bytes`` is what a test moved, and the
    largest of it was the faster direction alone, which hid a node slow one way however slow."""
    rows = metric_rows(records, metric)
    if not rows:
        return None
    by_direction = _by_direction(rows)
    if by_direction is None:
        return _row_mean(_top_rows(rows)), str(rows[0].get("unit", ""))
    return _mean([_row_mean(_top_rows(group)) for group in by_direction.values()]), str(rows[0].get("unit", ""))


def pick_directions(records: Sequence[Mapping], metric: str, hosts: Sequence[str]) -> dict[tuple[str, str], float]:
    """(sender, receiver) -> value of ``metric`` between ``hosts`` (``read_directions``)."""
    return read_directions(records, metric, hosts).values


def read_directions(records: Sequence[Mapping], metric: str, hosts: Sequence[str]) -> Directions:
    """(sender, receiver) -> value of ``metric`` between ``hosts``, as ``pick_value`` takes each
    direction; none where a direction cannot be told: rows without both ends, a bidirectional test
    (both ends send at once), a pair measured one way only (a round-trip latency), which would score
    one of its nodes as a sender and the other not at all, or an end that is none of ``hosts``
    (``_match_host``), or two ends that are the same host: those names are ``unmatched``."""
    rows = metric_rows(records, metric)
    if any(_params(r).get("bidirectional") for r in rows):
        return Directions({})
    by_direction = _by_direction(rows)
    if not by_direction:
        return Directions({})
    if any((d, s) not in by_direction for s, d in by_direction):
        return Directions({})
    labels = list(dict.fromkeys(label for key in by_direction for label in key))
    found = {label: _match_host(label, hosts) for label in labels}
    names = {label: m[0] for label, m in found.items() if len(m) == 1}
    taken: dict[str, list[str]] = {}
    for label, h in names.items():
        taken.setdefault(h, []).append(label)
    unmatched = [f"{label} (could be {' or '.join(m)})" if len(m) > 1 else label
                 for label, m in found.items() if len(m) != 1]
    unmatched += [f"{label} (as is {', '.join(x for x in same if x != label)})"
                  for same in taken.values() if len(same) > 1 for label in same]
    if unmatched:
        return Directions({}, tuple(unmatched))
    return Directions({(names[s], names[d]): _row_mean(_top_rows(group))
                       for (s, d), group in by_direction.items()})


def _params(r: Mapping) -> Mapping:
    p = r.get("params")
    return p if isinstance(p, Mapping) else {}


def _by_direction(rows: Sequence[Mapping]) -> dict[tuple[str, str], list[Mapping]] | None:
    """The rows by (src_host, dst_host); None unless every row names two different ends."""
    out: dict[tuple[str, str], list[Mapping]] = {}
    for r in rows:
        src, dst = _params(r).get("src_host"), _params(r).get("dst_host")
        if not isinstance(src, str) or not isinstance(dst, str) or not src or src == dst:
            return None
        out.setdefault((src, dst), []).append(r)
    return out


def _match_host(label: str, hosts: Sequence[str]) -> list[str]:
    """The sweep hosts a record's host label can be: the same name; else the same name as DNS
    compares names (in any case, without a root dot); else the hosts with its short name (a node
    that calls itself gpu01.cluster where ``--hosts`` says gpu01, or the other way round). An IP
    address is only ever itself: its first number is no short name. One host is a match; more
    are ambiguous, none is no match."""
    if label in hosts:
        return [label]
    key = _dns(label)
    same = [h for h in hosts if _dns(h) == key]
    if same or _is_ip(key):
        return same
    short = key.split(".", 1)[0]
    return [h for h in hosts if not _is_ip(_dns(h)) and _dns(h).split(".", 1)[0] == short]


def _dns(name: str) -> str:
    return name.rstrip(".").lower()


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _top_rows(rows: Sequence[Mapping]) -> list[Mapping]:
    sizes = [_params(r).get("bytes") for r in rows if _params(r).get("bytes") is not None]
    if not sizes:
        return list(rows)
    top = max(sizes)
    return [r for r in rows if _params(r).get("bytes") == top]


def _row_mean(rows: Sequence[Mapping]) -> float:
    return _mean([float(r["value"]) for r in rows])


def _mean(values: Sequence[float]) -> float:
    try:
        return statistics.fmean(values)
    except OverflowError:   # the sum of values near the float limit overflows; their mean does not
        return 2 * statistics.fmean(v / 2 for v in values)


def _best(items: Iterable[tuple[K, float]], higher_is_better: bool) -> dict[K, float]:
    """Each key once, with its best value: a pair or a direction measured more than once (in
    either order, over ``--rounds``) counts once, as ``--rounds`` keeps it; counted twice it
    outweighed the node's other measurements."""
    best: dict[K, float] = {}
    for key, v in items:
        kept = best.get(key)
        if kept is None or (v > kept if higher_is_better else v < kept):
            best[key] = v
    return best


def _best_pairs(results: Sequence[SubsetResult], higher_is_better: bool) -> dict[frozenset[str], float]:
    """Each subset of the pair stage once, with its best value."""
    return _best(((frozenset(r.hosts), r.value) for r in results if r.stage == "pair" and r.value is not None),
                 higher_is_better)


def node_pair_scores(results: Sequence[SubsetResult], higher_is_better: bool = True) -> dict[str, float]:
    """Each node's median pair value, each pair counted once with its best value."""
    best = _best_pairs(results, higher_is_better)
    per: dict[str, list[float]] = {}
    for hosts, value in best.items():
        for h in hosts:
            per.setdefault(h, []).append(value)
    # stats.median: statistics.median gives inf for two scores near the float limit, which the
    # store refuses to keep
    return {h: median(v) for h, v in per.items()}


def _best_directions(results: Sequence[SubsetResult], higher_is_better: bool) -> dict[tuple[str, str], float]:
    """Each (sender, receiver) of the pair stage once, with its best value."""
    return _best(((key, v) for r in results if r.stage == "pair" and r.value is not None
                  for key, v in r.directions.items()), higher_is_better)


def _direction_scores(best: Mapping[tuple[str, str], float]) -> tuple[dict[str, float], dict[str, float]]:
    """Each node's median value as a sender and as a receiver over ``best`` (``_best_directions``)."""
    sends: dict[str, list[float]] = {}
    receives: dict[str, list[float]] = {}
    for (src, dst), v in best.items():
        sends.setdefault(src, []).append(v)
        receives.setdefault(dst, []).append(v)
    return {h: median(v) for h, v in sends.items()}, {h: median(v) for h, v in receives.items()}


def named_hosts(r: SubsetResult) -> list[str]:
    """The hosts a launch failure names ('X, Y never joined', 'host X ...'); none when it names none."""
    text = r.error or ""
    m = re.search(r": ((?:[^\s,:]+(?:, )?)+) never joined", text)
    if m:
        return [h for h in m.group(1).split(", ") if h in r.hosts]
    m = re.search(r"\bhost (\S+)", text)
    if m and m.group(1) in r.hosts:
        return [m.group(1)]
    return []


def _failure_blame(results: Sequence[SubsetResult]) -> dict[int, list[str]]:
    """The hosts each failed subset (by index) is laid on: those it names, else those of its hosts
    with the highest share of failed runs (all of them on a tie)."""
    runs: dict[str, int] = {}
    failed: dict[str, int] = {}
    for r in results:
        for h in set(r.hosts):
            runs[h] = runs.get(h, 0) + 1
            if r.error is not None:
                failed[h] = failed.get(h, 0) + 1
    blame: dict[int, list[str]] = {}
    for i, r in enumerate(results):
        if r.error is None:
            continue
        named = named_hosts(r)
        if not named:
            share = {h: failed.get(h, 0) / runs[h] for h in r.hosts}
            top = max(share.values())
            named = [h for h in dict.fromkeys(r.hosts) if share[h] == top]
        blame[i] = named
    return blame


def parse_topology(text: str, name: str = "topology.conf") -> dict[str, str]:
    """Slurm topology.conf (tree): leaf ``SwitchName=s1 Nodes=gpu[01-04]`` lines -> host: switch.
    ``Nodes=`` takes the Slurm hostlist grammar of ``--hosts``; a malformed one names its line.
    As Slurm reads it: parameter names in any case, a value in double quotes, ``#`` to the end of
    a line a comment, a line ending in ``\\`` continued on the next. A node behind two leaf
    switches is refused (its pairs would be counted for the one written last), and so is a file
    naming more nodes in all than a ``--hosts`` list may."""
    out: dict[str, str] = {}
    for n, line in _logical_lines(text):
        keys: dict[str, str] = {}
        for m in _KEY_VALUE_RE.finditer(line):
            keys.setdefault(m.group(1).lower(), m.group(2) if m.group(2) is not None else m.group(3))
        sw, nodes = keys.get("switchname"), keys.get("nodes")
        if not sw or nodes is None:
            continue
        try:
            hosts = expand_hostlist(nodes, "Nodes=")
        except UsageError as e:
            raise UsageError(f"{name} line {n}: {e}") from None
        for h in hosts:
            other = out.setdefault(h, sw)
            if other != sw:
                raise UsageError(f"{name} line {n}: node {h} is already behind leaf switch {other}; "
                                 f"a node goes behind one leaf switch")
        if len(out) > MAX_HOSTS:
            raise UsageError(f"{name} line {n}: more than {MAX_HOSTS} nodes behind leaf switches")
    return out


# NAME=VALUE or NAME="VALUE WITH SPACES"; Slurm reads the names in any case
_KEY_VALUE_RE = re.compile(r'(?<![^\s])([A-Za-z]+)=(?:"([^"]*)"|(\S*))')


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each line with its comment cut and its continuations joined."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        start, head = pending if pending is not None else (n, "")
        if line.endswith("\\"):
            pending = (start, head + line[:-1] + " ")
            continue
        pending = None
        out.append((start, head + line))
    if pending is not None:
        out.append(pending)
    return out


def analyze(results: Sequence[SubsetResult], *, threshold: float = 3.5, min_rel_dev: float = 0.05,
            higher_is_better: bool = True, switches: Mapping[str, str] | None = None) -> Analysis:
    suspects: dict[str, Suspect] = {}

    def add(host: str, reason: str, evidence: list[str]) -> None:
        s = suspects.setdefault(host, Suspect(host, reason))
        if reason not in s.reason:
            s.reason += "; " + reason
        s.evidence += evidence

    for i, named in _failure_blame(results).items():
        r = results[i]
        for h in named:
            add(h, f"{r.stage} run failed", [f"{'+'.join(r.hosts)}: {r.error}"])

    singles = {r.hosts[0]: r.value for r in results if r.stage == "single" and r.value is not None}
    pairs = node_pair_scores(results, higher_is_better)
    unit = next((r.unit for r in results if r.value is not None), "")
    victims: list[str] = []
    for stage, scores in (("single", singles), ("pair", pairs)):
        flagged = flag_outliers(scores, threshold=threshold, higher_is_better=higher_is_better,
                                min_rel_dev=min_rel_dev)
        if stage == "pair":
            cleared = partners_victims([o.key for o in flagged], _best_pairs(results, higher_is_better), pairs,
                                       threshold=threshold, min_rel_dev=min_rel_dev,
                                       higher_is_better=higher_is_better)
            flagged = [o for o in flagged if o.key not in cleared]
            victims = [f"{h} (slow only with {', '.join(cleared[h])})" for h in cleared]
        for o in flagged:
            evidence = [o.describe(unit)]
            if stage == "pair":
                evidence += [f"{'+'.join(r.hosts)}: {r.value:.4g} {unit}" for r in results
                             if r.stage == "pair" and o.key in r.hosts and r.value is not None]
            add(o.key, f"{stage} score is an outlier", evidence)

    best_directions = _best_directions(results, higher_is_better)
    sends, receives = _direction_scores(best_directions)
    for way, scores, end in (("send", sends, 0), ("receive", receives, 1)):
        for o in flag_outliers(scores, threshold=threshold, higher_is_better=higher_is_better,
                               min_rel_dev=min_rel_dev):
            evidence = [f"{way} {o.describe(unit)}"]
            evidence += [f"{src} -> {dst}: {v:.4g} {unit}" for (src, dst), v in best_directions.items()
                         if (src, dst)[end] == o.key]
            add(o.key, f"{way} score is an outlier", evidence)

    switch_scores: dict[str, float] = {}
    if switches:
        groups: dict[str, list[float]] = {}
        for h, v in pairs.items():
            if h in switches:
                groups.setdefault(switches[h], []).append(v)
        switch_scores = {sw: _majority_score(v, higher_is_better) for sw, v in groups.items()}
        for o in flag_outliers(switch_scores, threshold=threshold, higher_is_better=higher_is_better,
                               min_rel_dev=min_rel_dev):
            for h in sorted(h for h, sw in switches.items() if sw == o.key and h in pairs):
                add(h, f"behind switch {o.key}, an outlier", [_describe_switch(o, unit)])
    warnings = _unmatched_warning(results)
    if victims:
        warnings.append(f"not named for their pair scores, which only their pairs with suspects made slow: "
                        f"{'; '.join(victims)}")
    return Analysis(singles, pairs, list(suspects.values()), switch_scores, sends, receives, warnings)


def partners_victims(flagged: Sequence[str], best_pairs: Mapping[frozenset[str], float],
                     scores: Mapping[str, float], *, threshold: float, min_rel_dev: float,
                     higher_is_better: bool) -> dict[str, list[str]]:
    """The flagged nodes whose pair score is an outlier only through their pairs with the other
    flagged nodes, each with those partners. A healthy node paired with two degraded ones of its
    three partners (random matchings at fleet size: about one node in 3,000 at 1% degraded) has a
    slow median like theirs; without those pairs its median is the healthy one. A degraded node
    stays slow in its pairs with anyone, so it is never cleared; one whose every pair is with
    another suspect has nothing else to be judged by, and stays named."""
    named = set(flagged)
    if len(named) < 2:
        return {}
    by_node: dict[str, list[tuple[str, float]]] = {h: [] for h in named}
    for hosts, v in best_pairs.items():
        for h in hosts & named:
            by_node[h] += [(other, v) for other in hosts if other != h]
    out: dict[str, list[str]] = {}
    for h in flagged:
        with_suspects = sorted({o for o, _ in by_node[h] if o in named})
        rest = [v for o, v in by_node[h] if o not in named]
        if not with_suspects or not rest:
            continue
        again = {**scores, h: median(rest)}
        if not any(o.key == h for o in flag_outliers(again, threshold=threshold, higher_is_better=higher_is_better,
                                                     min_rel_dev=min_rel_dev)):
            out[h] = with_suspects
    return out


def _unmatched_warning(results: Sequence[SubsetResult]) -> list[str]:
    """One line naming every record host name no ``--hosts`` entry matched, over all subsets."""
    names = list(dict.fromkeys(n for r in results if r.stage != "single" for n in r.unmatched))
    if not names:
        return []
    return [f"no send/receive scores for the pairs whose records name {', '.join(names)}: no --hosts "
            f"entry is that name (nor its short or long form); each node names itself by its hostname "
            f"or CLUSTERBENCH_HOSTNAME, which --hosts must match (pair scores are unaffected)"]


def _majority_score(values: list[float], higher_is_better: bool) -> float:
    """The median, and of an even count the better middle value: the score most of a switch's
    nodes reach, so that half of them slow (one node of two) does not make the switch slow."""
    return sorted(values, reverse=higher_is_better)[(len(values) - 1) // 2]


def _describe_switch(o: Outlier, unit: str) -> str:
    return "switch " + o.describe(unit)
