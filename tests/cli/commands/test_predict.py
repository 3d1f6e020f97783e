"""Tests of clusterbench.cli.commands.predict: ``clusterbench predict`` in-process."""

from __future__ import annotations

import pytest
from json_schema import check_lines
from judge_helpers import cli
from predict_store import seed_predict


def _json(out: str) -> list[dict]:
    return check_lines(out)


def test_predict_prints_the_plan_the_compute_and_a_row_per_fabric(db, capsys):
    seed_predict(db)
    code, out, err = cli(capsys, "predict", "--preset", "tiny", "--np", "2", "env=slow", "--vs", "env=fast",
                         "--link", "1Gbps", "--db", db)
    assert code == 0, err
    assert "# predict model tiny:" in out and "FSDP full shard, 2 ranks (2 node(s) x 1)" in out
    assert "# communication per step on env=slow:" in out
    assert "# compute (GEMM rate):" in out
    table = out.splitlines()
    header = next(i for i, line in enumerate(table) if line.startswith("# fabric"))
    rows = [line.split() for line in table[header + 1:header + 4]]
    assert [r[0] for r in rows] == ["env=slow", "env=fast", "--link"]
    assert rows[0][-1] == "network"


def test_predict_json_lines_follow_the_schema(db, capsys):
    seed_predict(db)
    code, out, err = cli(capsys, "predict", "--preset", "tiny", "--np", "2", "--batch", "4", "env=slow",
                         "--link", "10Gbps", "--json", "--db", db)
    assert code == 0, err
    lines = _json(out)
    preds = [x for x in lines if x["kind"] == "prediction"]
    assert [p["what_if"] for p in preds] == [None, "link"]
    assert preds[0]["workload"]["batch"] == 4 and preds[0]["link"] == "100Mbps"
    assert preds[0]["step_ms"] == pytest.approx(preds[0]["compute_ms"] + preds[0]["comm_ms"])
    colls = [x for x in lines if x["kind"] == "predicted_collective" and x["fabric"] == "env=slow"]
    assert sum(c["count"] for c in colls) == preds[0]["collectives"] == 8   # tiny: 5 gathers, 3 scatters
    assert sum(c["total_ms"] for c in colls) == pytest.approx(preds[0]["comm_ms"])


def test_check_gives_the_error_against_the_measured_step(db, capsys):
    ids = seed_predict(db)
    code, out, err = cli(capsys, "predict", "env=slow", "--check", str(ids["train"]), "--db", db)
    assert code == 0, err
    assert "# check:" in out
    code, out, err = cli(capsys, "predict", "env=slow", "--check", "env=measured", "--json", "--db", db)
    assert code == 0, err
    checks = {x["run"]: x for x in _json(out) if x["kind"] == "prediction_check"}
    assert set(checks) == set(ids.values())
    train = checks[ids["train"]]
    assert train["measured_step_ms"] == pytest.approx(40.0) and train["measured_bound"] == "network"
    assert train["error"] == pytest.approx(train["predicted_step_ms"] / 40.0 - 1)


@pytest.mark.parametrize(("argv", "message"), [
    (["--check", "1", "--preset", "tiny"], "--check takes the model and layout from the run: drop --preset"),
    (["--bucket-cap-mb", "4"], "--bucket-cap-mb is for --strategy ddp"),
    (["--np", "3", "--nodes", "2"], "--np 3 ranks do not split over --nodes 2"),
    (["--np", "4", "--batch", "6"], "--batch 6 is not divisible by the 4 ranks"),
    (["--strategy", "ddp", "--shard-size", "2"], "--shard-size is for --strategy hybrid"),
    (["--np", "3", "--batch", "3"], "no all_gather curve on 3 ranks"),
])
def test_bad_input_is_one_line_and_exit_2(db, capsys, argv, message):
    seed_predict(db)
    code, out, err = cli(capsys, "predict", "env=slow", *argv, "--db", db)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("clusterbench: error:")
