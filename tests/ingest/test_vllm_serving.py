"""Tests of clusterbench.ingest.vllm_serving: vLLM serving benchmark results (``vllm bench serve`` / ``benchmark_serving.py``)."""

import json

import pytest
from paths import TESTS
from tool_log_texts import DATA_ingest_common, records, values, warnings

from clusterbench.ingest import detect_tool, parse_text
from clusterbench.records import INCOMPLETE

DATA = TESTS / "data" / "vllm-serving"


def load(name):
    (r,) = parse_text((DATA / name).read_text(), name=name)
    assert {m.benchmark for m in r.measurements} == {"serving"}
    return r


def value(r, metric, **params):
    found = [m for m in r.measurements if m.metric == metric and all(m.params.get(k) == v for k, v in params.items())]
    assert len(found) == 1, (metric, params)
    return found[0]


def text(tool: str, name: str) -> str:
    return (DATA_ingest_common / tool / name).read_text()


def test_every_file_is_detected():
    for path in DATA.iterdir():
        if path.name != "README.md":
            assert detect_tool(path.read_text()) == "vllm-serving", path.name


def test_save_result_json():
    r = load("ascend-qwen2.5-vl-3b-bench-serve-save-result.json")
    assert r.run.status == "complete"
    rt = value(r, "request_throughput")
    assert rt.value == pytest.approx(0.9733236714351853) and rt.unit == "req/s"
    assert rt.params == {"request_rate": 1.0, "model": "./Qwen2.5-VL-3B-Instruct", "backend": "openai",
                         "num_prompts": 200, "burstiness": 1.0}
    assert value(r, "output_token_throughput").value == pytest.approx(124.58542994370372)
    assert value(r, "total_token_throughput").unit == "tok/s"
    assert value(r, "ttft_ms", stat="p99").value == pytest.approx(113.88637554366143)
    assert value(r, "tpot_ms", stat="median").value == pytest.approx(34.45028747967261)
    assert value(r, "itl_ms", stat="mean").value == pytest.approx(34.434617229796345)
    assert value(r, "failed").value == 1 and value(r, "completed").value == 199
    assert not [m for m in r.measurements if m.metric == "request_goodput"]  # null


def test_printed_block_cut_short_is_incomplete():
    r = load("vllm-pr7062-serving-result-text-truncated.txt")
    assert r.run.status == "incomplete"
    assert value(r, "request_throughput").value == 7.79
    assert value(r, "ttft_ms", stat="p90").value == 332.99
    assert value(r, "tpot_ms", stat="median").value == 223.08
    assert not [m for m in r.measurements if m.metric == "tpot_ms" and m.params["stat"] == "p90"]  # "P90 TPO"


def test_request_rate_printed_before_the_block():
    r = load("kvcached-issue136-serving-result-text-truncated.txt")
    assert value(r, "request_throughput").params["request_rate"] == 15.0
    assert value(r, "total_token_throughput").value == 18734.08
    assert value(r, "request_goodput").value == 3.75
    assert value(r, "ttft_ms", stat="p50").value == 136.7


def test_sglang_variant_with_e2e_latency():
    r = load("sglang-issue8285-bench-serving-text-truncated.txt")
    params = value(r, "request_throughput").params
    assert params["request_rate"] == 330.0 and params["backend"] == "sglang" and params["max_concurrency"] == "330"
    assert value(r, "e2el_ms", stat="median").value == 26001.41
    assert value(r, "itl_ms", stat="mean").value == 23.46


def test_vllm_json_duration_below_zero_is_dropped_the_rest_kept():
    doc = json.loads(text("vllm-serving", "ascend-qwen2.5-vl-3b-bench-serve-save-result.json"))
    (plain,) = parse_text(json.dumps(doc))
    doc["duration"] = -1.5
    (run,) = parse_text(json.dumps(doc))
    assert records([run]) == [r for r in records([plain]) if r[1] != "duration_s"]
    assert any("duration_s -1.5 s not stored" in w for w in warnings(run))


def test_vllm_text_behind_mpirun_tag_output_is_read_as_text_not_json():
    log = text("vllm-serving", "vllm-pr7062-serving-result-text-truncated.txt")
    tagged = "".join(f"[1,0]<stdout>:{ln}\n" for ln in log.split("\n"))
    (run,) = parse_text(tagged)
    assert values([run], "request_throughput") == [7.79]


def test_vllm_text_log_with_one_block_per_request_rate_gives_one_run_each():
    one = text("vllm-serving", "vllm-pr7062-serving-result-text-truncated.txt").rstrip("\n")
    closed = one + "\n" + "=" * 50 + "\n"
    sweep = "Traffic request rate: 4.0\n" + closed + "Traffic request rate: 8.0\n" + closed
    runs = parse_text(sweep)
    assert [r.measurements[0].params["request_rate"] for r in runs] == [4.0, 8.0]
    assert values(runs, "request_throughput") == [7.79, 7.79]
    assert all(r.run.status != INCOMPLETE for r in runs)
