"""Tests of clusterbench.judge.degraded: degraded hosts and devices."""

from __future__ import annotations

import pytest
from judged_rows import PARAMS

from clusterbench.judge.degraded import find_degraded
from clusterbench.judge.select import Row
from clusterbench.records import Measurement, Run


def test_degraded_converts_units_per_host() -> None:
    """One host that records MB/s is not 1000 times faster or slower than the rest."""
    rows = [Row(Run("coll", id=i + 1, hosts=[h]), Measurement("all_reduce", "busbw", v, u, {**PARAMS, "host": h}))
            for i, (h, v, u) in enumerate([("a", 100.0, "GB/s"), ("b", 101.0, "GB/s"),
                                           ("c", 99.0, "GB/s"), ("d", 100_500.0, "MB/s")])]
    assert find_degraded(rows) == []
    rows[3] = Row(rows[3].run, Measurement("all_reduce", "busbw", 50_000.0, "MB/s", {**PARAMS, "host": "d"}))
    (d,) = find_degraded(rows)
    assert d.outlier.key == "d" and d.outlier.value == pytest.approx(50.0) and d.unit == "GB/s"


@pytest.mark.parametrize("values", [{"a": 100.0}, {"a": 100.0, "b": 50.0}, {"a": 80.0, "b": 80.0, "c": 80.0}])
def test_degraded_needs_a_majority(values: dict[str, float]) -> None:
    """With two nodes there is no majority to say which is slow; equal nodes are never degraded."""
    rows = [Row(Run("coll", id=i + 1, hosts=[h]), Measurement("all_reduce", "busbw", v, "GB/s", {**PARAMS, "host": h}))
            for i, (h, v) in enumerate(values.items())]
    assert find_degraded(rows) == []


def test_degraded_latency_flags_the_slow_host_only() -> None:
    def row(i: int, h: str, v: float) -> Row:
        return Row(Run("coll", id=i, hosts=[h]), Measurement("all_reduce", "time_us", v, "us", {**PARAMS, "host": h}))
    rows = [row(1, "a", 10.0), row(2, "b", 10.1), row(3, "c", 9.9), row(4, "d", 20.0), row(5, "e", 5.0)]
    assert [d.outlier.key for d in find_degraded(rows)] == ["d"]


def test_the_scan_says_when_it_could_judge_nothing() -> None:
    """Fewer than three hosts: the search is skipped, and says so, never "none found"."""
    from clusterbench.judge.degraded import MIN_IDENTITIES, scan_degraded

    def rows(values: dict[str, float]) -> list[Row]:
        return [Row(Run("coll", id=i + 1, hosts=[h]), Measurement("all_reduce", "busbw", v, "GB/s", {**PARAMS, "host": h}))
                for i, (h, v) in enumerate(values.items())]
    two = scan_degraded(rows({"a": 100.0, "b": 50.0}))
    assert two.skipped and two.found == [] and two.most == 2
    assert f"{MIN_IDENTITIES} or more hosts or devices (at most 2 here)" in two.skip_reason()
    three = scan_degraded(rows({"a": 100.0, "b": 101.0, "c": 99.0}))
    assert not three.skipped and three.judged == 1 and three.found == []


def _reference_scan(rows: list[Row], threshold: float = 3.5, min_rel_dev: float = 0.05) -> list[tuple]:
    """The scan written out row by row, as its docstring says it works: rows grouped by
    (benchmark, metric, params less identity as JSON), each identity's values (their median where
    it has several) ranked by the modified z-score."""
    import json

    from clusterbench.families import IDENTITY_PARAMS, higher_is_better, is_judged, metric_of
    from clusterbench.judge.compare import common_unit
    from clusterbench.judge.degraded import IDENTITIES, MIN_IDENTITIES
    from clusterbench.judge.outliers import flag_outliers
    from clusterbench.judge.select import identity_of
    from clusterbench.judge.stats import median

    groups: dict[tuple, list[Row]] = {}
    for r in rows:
        m = r.m
        known = metric_of(m.benchmark, m.metric)
        if is_judged(m.benchmark, m.metric) and not (known is not None and known.describes_spread(m.params)):
            kept = {k: v for k, v in m.params.items() if k not in IDENTITY_PARAMS}
            groups.setdefault((m.benchmark, m.metric, json.dumps(kept, sort_keys=True, default=str)), []).append(r)
    found = []
    for (bench, metric, _), grp in groups.items():
        converted = common_unit(grp)
        if converted is None:
            continue
        unit, values = converted
        for by in IDENTITIES:
            identity = identity_of(grp, by)
            per: dict[str, list[float]] = {}
            for r, v in zip(grp, values):
                if (k := identity(r)) is not None:
                    per.setdefault(k, []).append(v)
            if len(per) < MIN_IDENTITIES:
                continue
            for o in flag_outliers({k: median(v) for k, v in per.items()}, threshold=threshold,
                                   higher_is_better=higher_is_better(bench, metric, unit), min_rel_dev=min_rel_dev):
                found.append((bench, metric, by, o.key, o.value, o.median, o.z))
    return sorted(found)


@pytest.mark.parametrize("seed", range(40))
def test_the_scan_finds_what_a_row_by_row_reading_finds(seed: int) -> None:
    """Hosts given as params, as ints, or only by their run; several runs of one host (medians);
    devices on several hosts; node tags naming the host, another name, or none: the scan's
    shortcuts (an identity's values built at once, a tag that splits the rows as the host does
    ranked once) find what the plain reading finds, and count what it judged."""
    import random

    from clusterbench.judge.degraded import scan_degraded

    rng = random.Random(seed)
    hosts = [f"h{i}" for i in range(rng.randint(2, 9))]
    slow = set(rng.sample(hosts, rng.randint(0, 2)))
    tags = rng.choice(["host", "other", "none", "mixed"])
    rows = []
    for rid in range(rng.randint(len(hosts), 3 * len(hosts))):
        h = hosts[rid % len(hosts)]
        run_tags = {"host": {"node": h}, "other": {"node": f"n{rid % 4}"}, "none": {},
                    "mixed": {"node": h} if rid % 3 else {}}[tags]
        run = Run("coll", id=rid + 1, hosts=[h] if rng.random() < 0.9 else [h, "x"], tags=run_tags)
        for dev in range(rng.randint(1, 3)):
            for size in (1024, 2048):
                value = rng.gauss(100.0, 1.0) * (0.6 if h in slow and dev == 0 else 1.0)
                params: dict = {"bytes": size, "dtype": "float", "device": dev}
                where = rng.random()
                if where < 0.6:
                    params["host"] = h
                elif where < 0.7:
                    params["host"] = int(h[1:])
                unit = "GB/s" if rng.random() < 0.9 else "MB/s"
                rows.append(Row(run, Measurement("all_reduce", "busbw", value * (1000 if unit == "MB/s" else 1),
                                                 unit, params)))
    scan = scan_degraded(rows)
    got = sorted((d.benchmark, d.metric, d.by, d.outlier.key, d.outlier.value, d.outlier.median, d.outlier.z)
                 for d in scan.found)
    assert got == _reference_scan(rows)
