"""Tests of clusterbench.report.predict_text: predict's text and JSON lines."""

from __future__ import annotations

from json_schema import check_lines
from predict_store import seed_predict

from clusterbench.judge.predict_runs import stored_prediction
from clusterbench.report.jsonl import dumps
from clusterbench.report.predict_text import grouped, report_lines, report_objects


def test_identical_collectives_are_one_row_with_their_count(db):
    seed_predict(db)
    report = stored_prediction(db, ["env=slow"], check=["bench:train"])
    [p] = report.predictions
    rows = grouped(p)
    assert sum(r.count for r in rows) == len(p.collectives)
    # tiny's two blocks are the same size: each is gathered twice forward and backward together
    blocks = [r for r in rows if r.op == "all_gather" and r.phase == "forward" and r.count == 2]
    assert len(blocks) == 1


def test_text_and_json_say_the_same_step(db):
    ids = seed_predict(db)
    report = stored_prediction(db, ["env=slow"], check=[str(ids["train"])], links=["1Gbps"])
    text = report_lines(report)
    objs = check_lines("\n".join(dumps(o) for o in report_objects(report)))
    preds = [o for o in objs if o["kind"] == "prediction"]
    [check] = [o for o in objs if o["kind"] == "prediction_check"]
    assert len(preds) == 2 and check["run"] == ids["train"]
    header = next(i for i, line in enumerate(text) if line.startswith("# fabric"))
    for line, pred in zip(text[header + 1:header + 3], preds, strict=True):
        assert f"{pred['step_ms']:.1f}" in line and line.split()[-1] == pred["bound"]
    [row] = [line for line in text if line.lstrip().startswith(str(ids["train"]))]
    assert f"{100 * check['error']:+.1f}%" in row
    assert "(right)" in row or "(wrong)" in row
