"""judge.scaling.stored_scaling: the scaling table of stored training runs, read from the
database (groups by selector, an optional baseline selection)."""

import pytest

from clusterbench.errors import UsageError
from clusterbench.judge.scaling import stored_scaling
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
