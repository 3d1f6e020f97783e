"""vLLM serving benchmark results (``vllm bench serve`` / ``benchmark_serving.py``): the
``--save-result`` JSON and the printed ``Serving Benchmark Result`` block -> ``serving`` records.

Metrics: request_throughput (req/s), output_token_throughput and total_token_throughput (tok/s),
ttft_ms / tpot_ms / itl_ms / e2el_ms with stat mean, median, std, p50, p90, p95, p99; completed and
failed request counts; param request_rate (``inf`` when unlimited). SGLang's bench_serving prints
the same block and is read the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from clusterbench.families import serving
from clusterbench.ingest.common import (
    ImportedRun,
    clean_lines,
    json_behind_prefixes,
    json_documents,
    json_gap_end,
    new_run,
    refuse_not_utf8,
    text_lines,
    to_float,
)
from clusterbench.ingest.registry import Importer, whole_text
from clusterbench.records import INCOMPLETE, Measurement

_LATENCY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
# vLLM's result keys -> the serving family's metrics
_METRICS = {"request_throughput": serving.REQUEST_THROUGHPUT, "request_goodput": serving.REQUEST_GOODPUT,
            "output_throughput": serving.OUTPUT_TOKEN_THROUGHPUT,
            "total_token_throughput": serving.TOTAL_TOKEN_THROUGHPUT,
            "input_throughput": serving.INPUT_TOKEN_THROUGHPUT, "completed": serving.COMPLETED,
            "failed": serving.FAILED, "duration": serving.DURATION}
_TEXT_LAT = re.compile(r"^(Mean|Median|Std|P\d+(?:\.\d+)?)\s+(TTFT|TPOT|ITL|E2E Latency|E2EL)\s*\(ms\):\s*(\S+)")
_TEXT_KEYS = {"request throughput (req/s)": "request_throughput", "request goodput (req/s)": "request_goodput",
              "output token throughput (tok/s)": "output_throughput",
              "total token throughput (tok/s)": "total_token_throughput",
              "input token throughput (tok/s)": "input_throughput", "successful requests": "completed",
              "failed requests": "failed", "benchmark duration (s)": "duration",
              "traffic request rate": "request_rate", "max request concurrency": "max_concurrency",
              "maximum request concurrency": "max_concurrency", "backend": "backend"}


def _rate(value: Any) -> Any:
    v = to_float(str(value).split()[0]) if value not in (None, "") else None
    if v is None:
        return str(value).split()[0] if value not in (None, "") else None
    return v


def _records(values: dict[str, Any], params: dict[str, Any]) -> list[Measurement]:
    ms = []
    for key, raw in values.items():
        value = to_float(str(raw)) if raw is not None else None
        if value is None:
            continue
        m = _LATENCY.match(key)
        if m:
            ms.append(serving.LATENCIES[m.group(2)](serving.BENCHMARK, value, {**params, "stat": m.group(1)}))
        elif key in _METRICS:
            ms.append(_METRICS[key](serving.BENCHMARK, value, params))
    return ms


def _params(values: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if values.get("request_rate") is not None:
        params["request_rate"] = _rate(values["request_rate"])
    for key in ("model_id", "backend", "max_concurrency", "num_prompts", "burstiness"):
        if values.get(key) not in (None, "", "not set"):
            params["model" if key == "model_id" else key] = values[key]
    return params


def parse_json(text: str, name: str = "") -> list[ImportedRun]:
    # several documents: results appended to one file, one a line
    found = json_documents(text, "a vLLM result JSON")
    refuse_not_utf8(found, text, "vLLM result JSON")
    docs = [d for doc in found for d in (doc if isinstance(doc, list) else [doc])]
    out = []
    for d in docs:
        if not isinstance(d, dict):
            continue
        run = new_run("vllm-serving", name)
        run.source = "vllm-serving"
        if d.get("date"):
            run.meta["log_started_at"] = d["date"]
        ms = _records(d, _params(d))
        if ms:
            out.append(ImportedRun(run, ms))
    return out


def parse_text(text: str, name: str = "") -> list[ImportedRun]:
    """One run per ``Serving Benchmark Result`` block: a script sweeping request rates or
    concurrencies writes one block per setting into one log."""
    out: list[ImportedRun] = []
    values: dict[str, Any] = {}
    in_block = False
    pre_rate = None
    for line in clean_lines(text_lines(text)):
        s = line.strip()
        if "Serving Benchmark Result" in s:
            if in_block:   # the block before was cut short where this one starts
                out += _text_run(values, pre_rate, name, closed=False)
                pre_rate = None
            in_block, values = True, {}
            continue
        if not in_block:
            m = re.match(r"Traffic request rate:\s*(\S+)", s)
            if m:
                pre_rate = m.group(1)
            continue
        if s and set(s) == {"="}:
            out += _text_run(values, pre_rate, name, closed=True)
            in_block, values, pre_rate = False, {}, None
            continue
        m = _TEXT_LAT.match(s)
        if m:
            kind = {"E2E Latency": "e2el"}.get(m.group(2), m.group(2).lower())
            values[f"{m.group(1).lower()}_{kind}_ms"] = m.group(3)
            continue
        label, sep, value = s.partition(":")
        key = _TEXT_KEYS.get(label.strip().lower())
        if sep and key and value.strip():
            values[key] = value.strip()
    if in_block:
        out += _text_run(values, pre_rate, name, closed=False)
    return out


def _text_run(values: dict[str, Any], pre_rate: str | None, name: str, closed: bool) -> list[ImportedRun]:
    if not values:
        return []
    if "request_rate" not in values and pre_rate is not None:
        values["request_rate"] = pre_rate
    run = new_run("vllm-serving", name)
    run.source = "vllm-serving"
    ms = _records(values, _params(values))
    if not closed:
        run.status = INCOMPLETE
        run.meta["truncated"] = "the result block has no closing ===== line"
    return [ImportedRun(run, ms)] if ms else []


# A JSON document or a list of them; not a launcher's '[1,0]<stdout>:' tag before a text block
_JSON_START = re.compile(r"\{|\[\s*[\[\]{]")


def _parse(lines: Iterable[str], name: str, head: str) -> Iterator[ImportedRun]:
    # JSON saved from a launcher's output (srun -l, mpirun --tag-output, pdsh) carries its prefixes
    text = json_behind_prefixes(whole_text(lines), "a vLLM result JSON")
    yield from (parse_json(text, name) if _JSON_START.match(text, json_gap_end(text)) else parse_text(text, name))


IMPORTERS = (
    Importer("vllm-serving", re.compile(r'"request_throughput"|Serving Benchmark Result|"mean_ttft_ms"'),
             _parse, order=10, starts=re.compile(r"^=*\s*Serving Benchmark Result", re.M)),
)
