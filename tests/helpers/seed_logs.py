"""The MI300X validation guide's own tool outputs (tests/data), as the validate, baseline and
qualify tests import them."""

from __future__ import annotations

SEEDS = ["transferbench/seed-mi300x-a2a.txt", "transferbench/seed-mi300x-example-cfg.txt",
         "transferbench/seed-mi300x-p2p.txt", "nccl-tests/seed-mi300x-rccl-all_reduce-8gpu.txt",
         "babelstream/seed-mi300x-hip-8gpu-mpi.txt", "rocblas-bench/seed-mi300x-gemm_strided_batched_ex-bf16.txt",
         "rocblas-bench/seed-mi300x-gemm_strided_batched_ex-int8.txt", "rocblas-bench/seed-mi300x-sgemm-4000.txt"]
