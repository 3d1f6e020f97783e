"""End-to-end workloads: training (``train``), DDP gradient sync (``ddp_comm``), tensor-parallel
inference (``infer_tp``), and the scaling tables judged from stored training runs."""

from __future__ import annotations

from clusterbench.families.base import Metric

TRAIN, DDP_COMM, INFER_TP = "train", "ddp_comm", "infer_tp"

LOSS = Metric("loss", "", higher_is_better=False, judged=False, about="mean training loss over ranks")
STEP_TIME = Metric("step_time_ms", "ms", higher_is_better=False, about="wall time of one step")
SAMPLES_PER_S = Metric("samples_per_s", "samples/s", about="samples (sequences) per second")
TOKENS_PER_S = Metric("tokens_per_s", "tokens/s", headline=True, about="tokens per second, all ranks")
COMM_SHARE = Metric("comm_share", "", higher_is_better=False, about="share of a step spent communicating")
PEAK_MEMORY = Metric("peak_memory_bytes", "bytes", higher_is_better=False, about="largest on any rank")
MFU = Metric("mfu", "", about="model FLOPs per second / the device's dense peak")
ALGBW = Metric("algbw", "GB/s", headline=True, link_bound=True, about="gradient bytes / step time")
LATENCY = Metric("latency_ms", "ms", higher_is_better=False, about="time of one forward pass")
INFER_SAMPLES_PER_S = Metric("samples_per_s", "samples/s", headline=True, about="batch / latency")
EFFICIENCY = Metric("efficiency", "", about="algbw / the optimum over --link-speed (stored by runs made "
                    "before 0.2; judged at read time since)")
SPEEDUP = Metric("speedup", "", about="throughput at n nodes / at the baseline count")
SCALING_EFFICIENCY = Metric("scaling_efficiency", "", about="speedup / (n / n0)")

TRAIN_METRICS = (LOSS, STEP_TIME, SAMPLES_PER_S, TOKENS_PER_S, COMM_SHARE, PEAK_MEMORY, MFU, SPEEDUP,
                 SCALING_EFFICIENCY)
DDP_COMM_METRICS = (STEP_TIME, ALGBW, EFFICIENCY, SPEEDUP, SCALING_EFFICIENCY)
INFER_TP_METRICS = (LATENCY, INFER_SAMPLES_PER_S)
