"""Which tool wrote a log, from its content (the first ~64 KiB is enough for every tool here)."""

from __future__ import annotations

import re

# Checked in order; the first tool whose signature matches wins. Signatures are lines or keys the
# tool itself prints, chosen so that one tool's output never matches another's.
_SIGNATURES: list[tuple[str, re.Pattern[str]]] = [
    # first: clusterbench's own lines may hold any other tool's words in their params and meta
    ("clusterbench-jsonl", re.compile(r'\{"kind": "(measurement|run)", '
                                      r'|\{"run": (\d+|null), "benchmark": "[^"]*", "metric": ')),
    ("vllm-serving", re.compile(r'"request_throughput"|Serving Benchmark Result|"mean_ttft_ms"')),
    ("iperf3", re.compile(r'"intervals"\s*:|"sum_sent"\s*:|"version"\s*:\s*"iperf')),
    ("nccl-tests", re.compile(r'^\s*numCycle,|"numCycle"\s*:|"bus_bw"\s*:|"nccl_version"\s*:', re.M)),
    ("osu", re.compile(r"^\s*#\s*OSU\s+\S+.*Test", re.M)),
    ("transferbench", re.compile(r"TransferBench|SRC\\+DST|SRC\+EXE\\+DST|Aggregate bandwidth \(GPU Timed\)"
                                 r"|Bytes Per Direction|Aggregate \(CPU\)\s*[|│]")),
    ("babelstream", re.compile(r"BabelStream|GPU-STREAM|^\s*function,num_times,n_elements|STREAM version"
                               r"|Function\s+(MBytes|MiBytes)/sec", re.M)),
    ("hipblaslt-bench", re.compile(r"hipblaslt-Gflops|hipBLASLt version")),
    ("rocblas-bench", re.compile(r"rocblas-Gflops")),
    ("perftest", re.compile(r"(RDMA_Write|RDMA_Read|Send|Atomic\w*)\b[\w /]*?\b(BW|Latency)\s+Test"
                            r"|#bytes\s+#iterations\s+(BW peak|t_min)")),
    ("nccl-tests", re.compile(r"Avg bus bandwidth|out-of-place|nThread:?\s+\d+\s+nGpus|Collective test"
                              r"|rccl-tests|\balgbw\b.*\bbusbw\b|Test NCCL failure|Test CUDA failure")),
]


def detect(head: str) -> str | None:
    for tool, pattern in _SIGNATURES:
        if pattern.search(head):
            return tool
    return None
