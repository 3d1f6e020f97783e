"""judge.scaling.stored_scaling: the scaling table of stored training runs, read from the
database (groups by selector, an optional baseline selection)."""

import math

import pytest
from synthetic_runs import _fill

from clusterbench.errors import UsageError
from clusterbench.judge.scaling import (
    Point,
    ScalingRow,
    format_table,
    load_points,
    overall_value,
    scaling_table,
    stored_scaling,
)
from clusterbench.judge.select import load_runs
from clusterbench.records import FAILED, Measurement, Run
from clusterbench.store import Store


def _train(db, nodes, throughput, net, status="complete"):
    hosts = [f"n{i}" for i in range(nodes)]
    ms = [Measurement("train", "samples_per_s", throughput, "samples/s", {"stat": "avg"})]
    with Store.open(db) as s:
        return s.save_run(Run("train", hosts=hosts, ranks=nodes, status=status, tags={"network": net}), ms)


@pytest.fixture
def runs(db):
    _train(db, 1, 100.0, "pod")
    _train(db, 2, 180.0, "pod")
    _train(db, 2, 150.0, "vnic")
    _train(db, 4, 1.0, "vnic", status=FAILED)   # only complete runs count
    return db


def test_each_selector_is_a_group_against_its_smallest_count(runs):
    rows = stored_scaling(runs, ["network=pod", "network=pod"], None, "train", "samples_per_s", "nodes")
    assert [(r.group, r.nodes, r.runs) for r in rows] == [("network=pod", 1, 1), ("network=pod", 2, 1)]
    assert rows[1].speedup == pytest.approx(1.8) and rows[1].efficiency == pytest.approx(0.9)


def test_a_baseline_selection_is_shared_by_every_group(runs):
    rows = stored_scaling(runs, ["network=vnic"], "1", "train", "samples_per_s", "nodes")
    [row] = rows
    assert (row.nodes, row.baseline_nodes, row.baseline_throughput) == (2, 1, 100.0)
    assert row.speedup == pytest.approx(1.5)


def test_a_group_without_a_complete_run_is_a_usage_error(runs):
    with pytest.raises(UsageError, match="matches no complete train run"):
        stored_scaling(runs, ["4"], None, "train", "samples_per_s", "nodes")


def test_scaling_past_the_float_range_keeps_its_columns():
    rows = [ScalingRow("g", 1, 1, 1, 5e-324, 1, 5e-324), ScalingRow("g", 2, 2, 1, 1.7e308, 1, 5e-324)]
    first, _, one, two = format_table(rows, "samples/s")
    assert "inf" not in two and two.split()[-2:] == ["3.4e+631", "1.72e+631"]
    assert len(two) == len(one) == len(first)


def test_scaling_single_point_and_unordered_counts() -> None:
    (only,) = scaling_table([Point("g", 4, 4, 300.0)])
    assert only.speedup == 1.0 and only.efficiency == 1.0
    rows = scaling_table([Point("g", 4, 32, 300.0), Point("g", 1, 8, 100.0), Point("g", 2, 16, 150.0)])
    assert [(r.nodes, r.ranks) for r in rows] == [(1, 8), (2, 16), (4, 32)]
    assert [r.efficiency for r in rows] == pytest.approx([1.0, 0.75, 0.75])


def test_scaling_refuses_a_throughput_that_is_not_positive() -> None:
    from clusterbench.errors import UsageError

    with pytest.raises(UsageError, match="throughput"):
        scaling_table([Point("g", 1, 1, 100.0), Point("g", 2, 2, -5.0)])
    with pytest.raises(UsageError, match="throughput"):
        scaling_table([Point("g", 1, 1, 0.0)])
    assert math.isfinite(scaling_table([Point("g", 1, 1, 100.0), Point("g", 2, 2, 0.0)])[1].efficiency)


def test_scaling_means_near_the_largest_float_stay_finite() -> None:
    rows = scaling_table([Point("g", 1, 1, 1.7e308), Point("g", 1, 1, 1.7e308), Point("g", 2, 2, 1.7e308)])
    assert [r.throughput for r in rows] == [1.7e308, 1.7e308]
    assert rows[1].speedup == 1.0 and rows[1].efficiency == 0.5


def test_batched_reads_equal_per_run_reads(tmp_path, monkeypatch, statements):
    db = str(tmp_path / "runs.db")
    _fill(db, 7)
    monkeypatch.setattr(Store, "_CHUNK", 4)   # several chunks out of few runs
    with Store.open(db) as s:
        ids = [int(r.id or 0) for r in s.select("1-21")]
        statements.clear()
        by_run = s.measurements_by_run(ids)
        assert sum("FROM measurement_packs" in q for q in statements) == 6   # ceil(21 / 4)
        assert by_run == {rid: s.measurements(rid) for rid in ids}
        # a run asked for twice or not stored: as measurements() gives it
        assert s.measurements_by_run([3, 3, 999]) == {3: s.measurements(3), 999: []}
        assert s.telemetry_by_run(ids) == {rid: s.telemetry(rid) for rid in ids}
        assert s.measurement_counts(ids[:9]) == {rid: n for rid, n in s.measurement_counts().items()
                                                 if rid in ids[:9]}
        assert load_runs(s, ["grp=a", "kind=stream"]) == [(r, s.measurements(int(r.id or 0)))
                                                          for r in s.select_all(["grp=a", "kind=stream"])]
        points = load_points(s, ["kind=train"], "train", "samples_per_s", "nodes")
        assert [(p.run, p.throughput) for p in points] == [
            (int(r.id or 0), s.measurements(int(r.id or 0), "train")[0].value) for r in s.select("kind=train")]


def test_groups_without_baseline_use_their_smallest_count_and_average_repeats():
    pts = [Point("a", 2, 2, 10.0), Point("a", 2, 2, 12.0), Point("a", 4, 4, 33.0)]
    rows = scaling_table(pts)
    assert [(r.nodes, r.runs, r.throughput) for r in rows] == [(2, 2, 11.0), (4, 1, 33.0)]
    assert rows[1].efficiency == pytest.approx(33.0 / (2 * 11.0))
    assert rows[1].speedup == pytest.approx(3.0)
    with pytest.raises(UsageError):
        scaling_table([])
    sweep = [Measurement("infer_tp", "samples_per_s", v, "samples/s", {"batch": b, "stat": "avg"})
             for b, v in ((128, 1.0), (256, 2.0))]
    with pytest.raises(UsageError, match="a sweep"):
        overall_value(sweep, "samples_per_s")
    assert overall_value(sweep[:1], "samples_per_s") == 1.0 and overall_value(sweep, "loss") is None
