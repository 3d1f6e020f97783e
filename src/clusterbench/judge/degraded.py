"""Degraded hosts and devices: outliers among values that should be equal, found automatically.

For every row (benchmark, metric, params minus identity) the values are split by an identity:
the ``host`` or ``device`` param of the measurements (``host:device`` where the rows come from
several hosts), or the ``node`` tag of the runs. With at least three identities, the modified
z-score (judge.outliers) flags the slow ones: with two there is no majority to say which one is
off, so one or two nodes are never called degraded. Values are compared in one unit (MB/s and
GB/s convert); a row whose units do not convert into each other is not judged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from clusterbench.families import IDENTITY_PARAMS, higher_is_better, is_judged, metric_of
from clusterbench.families.base import Metric
from clusterbench.judge.compare import common_unit
from clusterbench.judge.outliers import Outlier, flag_outliers
from clusterbench.judge.params_text import ParamsText
from clusterbench.judge.select import Row, identity_of
from clusterbench.judge.stats import median

IDENTITIES = ("host", "device", "tag:node")


@dataclass(frozen=True)
class Degraded:
    benchmark: str
    metric: str
    params: dict
    unit: str
    by: str
    outlier: Outlier

    def to_dict(self) -> dict:
        o = self.outlier
        return {"benchmark": self.benchmark, "metric": self.metric, "params": self.params,
                "unit": self.unit, "by": self.by, "key": o.key, "value": o.value,
                "median": o.median, "z": o.z, "rel_dev": o.rel_dev}


@dataclass(frozen=True)
class Scan:
    """What the search for degraded hosts and devices found, and what it could look at: a row
    measured on fewer than ``MIN_IDENTITIES`` hosts or devices cannot be judged, so "none found"
    over no judged row would claim a check that never ran."""

    found: list[Degraded]
    judged: int        # rows (benchmark, metric, params) ranked, once per identity (host, device) ranked by
    most: int          # the most identities any judged-metric row had (0: none had one)

    @property
    def skipped(self) -> bool:
        return self.judged == 0

    def skip_reason(self) -> str:
        return (f"no row was measured on {MIN_IDENTITIES} or more hosts or devices (at most {self.most} "
                "here): with fewer there is no majority to tell which one is off")


MIN_IDENTITIES = 3


def find_degraded(rows: list[Row], threshold: float = 3.5, min_rel_dev: float = 0.05) -> list[Degraded]:
    return scan_degraded(rows, threshold, min_rel_dev).found


def scan_degraded(rows: list[Row], threshold: float = 3.5, min_rel_dev: float = 0.05) -> Scan:
    """``find_degraded`` with what it could judge (``Scan``)."""
    groups: dict[tuple, list[Row]] = {}
    text = ParamsText(IDENTITY_PARAMS)   # compare.group_key's grouping, without writing each row's JSON
    # a fleet's night is 400,000 rows of a few dozen (benchmark, metric): their metric looked up once
    metrics: dict[tuple[str, str], tuple[bool, Metric | None]] = {}
    key = text.key
    for r in rows:
        m = r.m
        bm = (m.benchmark, m.metric)
        known = metrics.get(bm)
        if known is None:
            known = metrics[bm] = (is_judged(*bm), metric_of(*bm))
        if known[0] and not (known[1] is not None and known[1].describes_spread(m.params)):
            groups.setdefault((m.benchmark, m.metric, key(m.params)), []).append(r)
    found = []
    judged = most = 0
    for (bench, metric, _), grp in groups.items():
        # one unit for all hosts (a host imported in MB/s is not 1000x faster); units that do not
        # convert into each other cannot be ranked at all
        converted = common_unit(grp)
        if converted is None:
            continue
        unit, converted_values = converted
        hosts = _hosts(grp)
        hib = higher_is_better(bench, metric, unit)
        ranked: list[tuple[list[str | None], list[Outlier]]] = []   # identities ranked already
        for by in IDENTITIES:
            ids = _identities(grp, by, hosts)
            # a node tag naming each row's host splits the rows as the host does: the same values
            # give the same outliers
            flagged = next((f for seen, f in ranked if seen == ids), None)
            if flagged is None:
                values = _by_identity(ids, converted_values)
                most = max(most, len(values))
                if len(values) < MIN_IDENTITIES:
                    continue
                flagged = flag_outliers(values, threshold=threshold, higher_is_better=hib, min_rel_dev=min_rel_dev)
                ranked.append((ids, flagged))
            judged += 1
            if flagged:
                params = json.loads(text(grp[0].m.params))   # the group's params as their text reads
                found += [Degraded(bench, metric, dict(params), unit, by, o) for o in flagged]
    found.sort(key=lambda d: -abs(d.outlier.z))
    return Scan(found, judged, most)


def _hosts(grp: list[Row]) -> list[str | None]:
    """``r.key("host")`` of each row, written out: it is asked of every row of a fleet's night."""
    hosts = [v if v is None or type(v) is str else str(v) for v in [r.m.params.get("host") for r in grp]]
    if None not in hosts:
        return hosts
    return [h if h is not None else r.run.hosts[0] if len(r.run.hosts) == 1 else None for h, r in zip(hosts, grp)]


def _by_identity(ids: list[str | None], values: list[float]) -> dict[str, float]:
    """Each identity's value (the median of its values where it has several), in first-seen
    order; rows without one left out."""
    one = dict(zip(ids, values))
    if len(one) == len(ids):   # each identity once, the usual case: no list per identity
        one.pop(None, None)
        return one   # type: ignore[return-value]
    per: dict[str, list[float]] = {}
    for k, value in zip(ids, values, strict=True):
        if k is not None:
            per.setdefault(k, []).append(value)
    return {k: v[0] if len(v) == 1 else median(v) for k, v in per.items()}


def _identities(grp: list[Row], by: str, hosts: list[str | None]) -> list[str | None]:
    """``identity_of(grp, by)`` of each row, ``hosts`` their ``_hosts``: a list at a time."""
    if by == "host":
        return hosts
    if by == "device":
        devices = [v if v is None or type(v) is str else str(v) for v in [r.m.params.get("device") for r in grp]]
        if len(set(hosts) - {None}) < 2:
            return devices
        return [f"{h}:{d}" if d is not None and h else d for h, d in zip(hosts, devices)]
    if by.startswith("tag:"):
        tag = by[4:]
        return [r.run.tags.get(tag) for r in grp]
    identity = identity_of(grp, by)
    return [identity(r) for r in grp]
