"""Workloads: ``train``, ``ddp_comm`` and ``infer_tp``, one family each (their headline
figures differ), sharing metric definitions and tables."""

from __future__ import annotations

from clusterbench.families.base import Family, HeadlineRows
from clusterbench.families.workloads import spec
from clusterbench.families.workloads.table import DdpCommTable, InferTpTable, TrainTable

TRAIN_FAMILY = Family(
    name="train", title="Training", benchmarks=(spec.TRAIN,), metrics=spec.TRAIN_METRICS,
    row_params=("step", "stat", "model", "strategy", "batch", "ranks"),
    renderer=lambda _benchmark: TrainTable(), commands=("train",),
    headline_rows=HeadlineRows(without=("step",)),   # the run's average, not each step's figure
)
DDP_COMM_FAMILY = Family(
    name="ddp_comm", title="DDP gradient sync", benchmarks=(spec.DDP_COMM,), metrics=spec.DDP_COMM_METRICS,
    row_params=("step", "stat", "layers", "bytes", "bucket_cap_mb", "ranks"),
    renderer=lambda _benchmark: DdpCommTable(), commands=("ddp-comm",),
    link_op="all_reduce",   # DDP's gradient sync is an all_reduce of the gradient bytes
    headline_rows=HeadlineRows(without=("step",), prefer=(("stat", ("avg",)),)),
)
INFER_TP_FAMILY = Family(
    name="infer_tp", title="Tensor-parallel inference", benchmarks=(spec.INFER_TP,),
    metrics=spec.INFER_TP_METRICS, row_params=("batch", "stat", "mode", "layers", "hidden", "dtype"),
    renderer=lambda _benchmark: InferTpTable(), commands=("infer-tp",),
)
