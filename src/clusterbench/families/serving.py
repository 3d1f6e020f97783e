"""LLM serving benchmarks (vLLM's ``bench serve``, SGLang's bench_serving): ``serving`` records."""

from __future__ import annotations

from clusterbench.families.base import Family, Metric

BENCHMARK = "serving"
REQUEST_THROUGHPUT = Metric("request_throughput", "req/s", headline=True)
REQUEST_GOODPUT = Metric("request_goodput", "req/s")
OUTPUT_TOKEN_THROUGHPUT = Metric("output_token_throughput", "tok/s")
TOTAL_TOKEN_THROUGHPUT = Metric("total_token_throughput", "tok/s")
INPUT_TOKEN_THROUGHPUT = Metric("input_token_throughput", "tok/s")
COMPLETED = Metric("completed", "", judged=False)
FAILED = Metric("failed", "", higher_is_better=False, judged=False)
DURATION = Metric("duration_s", "s", higher_is_better=False, judged=False)
# latencies in ms, each with a stat param (mean, median, std, p50, p99, ...)
LATENCIES = {kind: Metric(f"{kind}_ms", "ms", higher_is_better=False)
             for kind in ("ttft", "tpot", "itl", "e2el")}

FAMILY = Family(
    name="serving", title="Serving", benchmarks=(BENCHMARK,),
    metrics=(REQUEST_THROUGHPUT, REQUEST_GOODPUT, OUTPUT_TOKEN_THROUGHPUT, TOTAL_TOKEN_THROUGHPUT,
             INPUT_TOKEN_THROUGHPUT, COMPLETED, FAILED, DURATION, *LATENCIES.values()),
    row_params=("request_rate", "model", "backend", "max_concurrency", "stat"),
)
