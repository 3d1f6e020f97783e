"""Serving results: a real ``vllm bench serve --save-result`` JSON, imported per setup and compared
(the dstack study's 1 GPU vs 8 partitions chart is this compare). The importer is
``clusterbench.ingest.vllm_serving``; its real samples live in tests/data/vllm-serving/."""

import json
from pathlib import Path

import pytest
from work_helpers import cli, stored

pytest.importorskip("clusterbench.ingest.vllm_serving")

RESULT = Path(__file__).parent / "data" / "vllm-serving" / "ascend-qwen2.5-vl-3b-bench-serve-save-result.json"


def test_imported_setups_pair_up_in_compare(capsys, db):
    if not RESULT.exists():
        pytest.skip(f"{RESULT.name} is not in tests/data/vllm-serving")
    # the same content with the same tags is one import (a second is skipped): repetitions differ by tag
    for rep, setup in enumerate(("1gpu", "1gpu", "8-partitions")):
        code, _, err = cli(capsys, "import", str(RESULT), "--tool", "vllm-serving", "--tag", f"setup={setup}",
                           "--tag", f"rep={rep}", "--db", db)
        assert code == 0, err
    runs = stored(db)
    assert len(runs) == 3
    for _run, ms in runs:
        by = {(m.metric, m.params.get("stat")): m for m in ms}
        assert by[("request_throughput", None)].value == pytest.approx(0.9733236714351853)
        assert by[("ttft_ms", "mean")].value == pytest.approx(97.50969301155726)
        assert {m.params["request_rate"] for m in ms} == {1.0}
    code, out, err = cli(capsys, "compare", "setup=1gpu", "setup=8-partitions", "--benchmark", "serving",
                         "--json", "--db", db)
    assert code == 0, err
    rows = {(d["metric"], d["params"].get("stat")): d for d in map(json.loads, out.splitlines())
            if d["kind"] == "comparison"}
    tput = rows[("request_throughput", None)]
    assert (tput["n_a"], tput["n_b"]) == (2, 1)
    assert tput["mean_a"] == pytest.approx(tput["mean_b"]) and tput["delta_pct"] == pytest.approx(0.0)
    assert ("tpot_ms", "p99") in rows and ("output_token_throughput", None) in rows
