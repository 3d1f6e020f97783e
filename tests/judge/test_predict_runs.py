"""Tests of clusterbench.judge.predict_runs: predictions from a store's runs, checked against
measured steps."""

from __future__ import annotations

import pytest
from predict_store import TINY, seed_predict

from clusterbench.errors import UsageError
from clusterbench.judge.predict_runs import stored_prediction
from clusterbench.judge.workload import AUTO, DDP_COMM, TRAIN, Workload, make_layout

DDP = Workload(DDP_COMM, make_layout("ddp", 2, 1), "fp32", bucket_cap_mb=1.0, layers=4, size_bytes=4 << 20)


def _tiny(ranks: int = 2) -> Workload:
    return Workload(TRAIN, make_layout("full", ranks, 1), AUTO, TINY, "tiny", batch=2)


def test_a_workload_on_the_fabric_its_what_ifs_and_a_link(db):
    seed_predict(db)
    report = stored_prediction(db, ["env=slow"], workload=_tiny(), vs=["env=fast"], links=["1Gbps"])
    measured, fast, link = report.predictions
    assert measured.workload.dtype == "fp32"        # auto on CPU nodes
    assert measured.fabric.link_text == "100Mbps" and fast.fabric.what_if == "vs"
    assert link.fabric.label == "--link 1Gbps"
    assert measured.comm_s > link.comm_s > 0 and measured.comm_s > fast.comm_s
    assert measured.compute_s == fast.compute_s     # env=fast has no node runs: env=slow's rates
    assert measured.bound == "network"


def test_check_predicts_a_stored_run_with_its_own_model_and_layout(db):
    ids = seed_predict(db)
    report = stored_prediction(db, ["env=slow"], check=["env=measured"])
    by_kind = {c.prediction.workload.kind: c for c in report.checks}
    train, ddp = by_kind[TRAIN], by_kind[DDP_COMM]
    assert (train.run.id, ddp.run.id) == (ids["train"], ids["ddp"])
    assert train.prediction.workload.layout.world == 2 and train.prediction.workload.shape == TINY
    assert train.measured.step_s == pytest.approx(0.040) and train.measured.bound == "network"
    assert train.error == pytest.approx(train.prediction.step_s / 0.040 - 1)
    assert ddp.prediction.workload.layers == 4 and ddp.measured.comm_share is None
    assert ddp.bound_right is None


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"selectors": ["env=none"], "workload": _tiny()}, "selector 'env=none' matches no run"),
    ({"selectors": ["env=slow"], "check": ["env=slow"]}, "selects no complete train or ddp-comm run"),
    ({"selectors": ["env=fast"], "workload": _tiny()}, "no complete gemm runs"),
    ({"selectors": ["env=fast"], "workload": DDP, "links": ["1Gbps"]}, "link rate of env=fast is not known"),
    ({"selectors": ["bench:gemm"], "workload": _tiny()}, "no complete collective runs"),
])
def test_what_cannot_be_predicted_is_a_usage_error(db, kwargs, message):
    seed_predict(db)
    with pytest.raises(UsageError, match=message):
        stored_prediction(db, **kwargs)
