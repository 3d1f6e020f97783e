"""``clusterbench predict``'s reading of stored runs: a selection's collective curves and node
rates, a stored ``train`` or ``ddp-comm`` run's workload and what it measured, and the checks of
predictions against measured steps."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from clusterbench.bench.workloads.model import ModelShape
from clusterbench.errors import UsageError
from clusterbench.judge.fabric import curves_of, link_of, node_rates, run_nodes
from clusterbench.judge.predict import COMPUTE, NETWORK, Fabric, Prediction, predict
from clusterbench.judge.theory import parse_link
from clusterbench.judge.workload import AUTO, DDP_COMM, TRAIN, Layout, Workload
from clusterbench.records import COMPLETE, Measurement, Run
from clusterbench.store import Store
from clusterbench.store.runs import loaded

Loaded = list[tuple[Run, list[Measurement]]]
MEASURED_NETWORK_SHARE = 0.5   # a measured comm_share above this is a network-bound step


def fabric_of(label: str, runs: Loaded, link_speed: str | None = None, what_if: str = "") -> Fabric:
    """The collective curves of ``runs``, over the link ``link_speed`` names, else the runs'
    ``link_speed`` tag (one for all of them)."""
    curves = curves_of(runs)
    if not curves:
        raise UsageError(f"{label}: no complete collective runs (`clusterbench coll`, or an imported "
                         "nccl-tests log) to take the fabric's curves from")
    tags = link_of(runs)
    if link_speed is None and len(tags) > 1:
        raise UsageError(f"{label}: its collective runs are tagged with different link speeds "
                         f"({', '.join(sorted(tags))}): select one fabric, or give --link-speed")
    text = link_speed if link_speed is not None else next(iter(tags), None)
    ids = tuple(sorted({r for c in curves for r in c.runs}))
    return Fabric(label, curves, parse_link(text) if text else None, text or "", ids, what_if)


def _overall(ms: Iterable[Measurement], benchmark: str, metric: str) -> Measurement | None:
    return next((m for m in ms if m.benchmark == benchmark and m.metric == metric
                 and "step" not in m.params and m.params.get("stat") == "avg"), None)


def _layout(run: Run, strategy: str, shard_size: int) -> Layout:
    nodes = run_nodes(run) or 1
    if run.ranks < 1 or run.ranks % nodes:
        raise UsageError(f"run {run.id}: {run.ranks} ranks over {nodes} hosts is no layout of equal nodes")
    world = run.ranks
    if shard_size < 1 or world % shard_size:
        raise UsageError(f"run {run.id}: shard size {shard_size} does not divide its {world} ranks")
    return Layout(strategy, nodes, world // nodes, shard_size)


def is_workload_run(run: Run, ms: list[Measurement]) -> bool:
    """Whether a run is a complete ``train`` or ``ddp-comm`` run with its overall step time."""
    return run.status == COMPLETE and bool(_overall(ms, TRAIN, "step_time_ms") or _overall(ms, DDP_COMM, "step_time_ms"))


def workload_of_run(run: Run, ms: list[Measurement]) -> Workload:
    """What a stored ``train`` or ``ddp-comm`` run trained, on which layout."""
    train = run.meta.get("train")
    if isinstance(train, dict) and _overall(ms, TRAIN, "step_time_ms"):
        try:
            shape = ModelShape(**{k: int(v) for k, v in dict(train["shape"]).items()})
            strategy, dtype, batch = str(train["strategy"]), str(train["dtype"]), int(train["batch"])
            shard = int(train.get("shard_size") or run.ranks)
        except (KeyError, TypeError, ValueError) as e:
            raise UsageError(f"run {run.id}: its train metadata is incomplete ({e})") from None
        layout = _layout(run, strategy, run.ranks if strategy == "full" else shard)
        return Workload(TRAIN, layout, dtype, shape, str(train.get("model", "")), batch)
    row = _overall(ms, DDP_COMM, "step_time_ms")
    if row is not None:
        p = row.params
        try:
            layers, size, cap = int(p["layers"]), int(p["bytes"]), float(p["bucket_cap_mb"])
        except (KeyError, TypeError, ValueError) as e:
            raise UsageError(f"run {run.id}: its ddp_comm rows lack {e}") from None
        return Workload(DDP_COMM, _layout(run, "ddp", 1), "fp32", bucket_cap_mb=cap, layers=layers, size_bytes=size)
    raise UsageError(f"run {run.id} is no complete train or ddp-comm run: nothing to check")


@dataclass(frozen=True)
class Measured:
    step_s: float
    comm_share: float | None

    @property
    def bound(self) -> str | None:
        if self.comm_share is None:
            return None
        return NETWORK if self.comm_share > MEASURED_NETWORK_SHARE else COMPUTE


def measured_of_run(run: Run, ms: list[Measurement]) -> Measured:
    bench = TRAIN if isinstance(run.meta.get("train"), dict) and _overall(ms, TRAIN, "step_time_ms") else DDP_COMM
    step = _overall(ms, bench, "step_time_ms")
    assert step is not None   # workload_of_run found it
    share = _overall(ms, bench, "comm_share")
    return Measured(step.value / 1e3, share.value if share else None)


@dataclass
class Check:
    run: Run
    measured: Measured
    prediction: Prediction

    @property
    def error(self) -> float:
        """predicted / measured - 1: positive when the prediction is slower than the step."""
        return self.prediction.step_s / self.measured.step_s - 1

    @property
    def bound_right(self) -> bool | None:
        return None if self.measured.bound is None else self.measured.bound == self.prediction.bound


@dataclass
class PredictReport:
    predictions: list[Prediction] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)


def _selection(store: Store, selectors: Sequence[str], since: str | None, what: str) -> Loaded:
    runs = loaded(store, selectors, since)
    if not runs:
        raise UsageError(f"{what} selects no runs")
    return runs


def predictions_for(workload: Workload, fabrics: list[tuple[Fabric, Loaded]], base_node: Loaded,
                    links: Sequence[str]) -> list[Prediction]:
    """The workload on each fabric (a selection's own node rates where it has gemm runs, else
    the first one's), then on the first fabric over each ``links`` rate. A dtype ``auto`` is
    fp32 on CPU nodes and bf16 on GPUs, as ``train`` computes."""
    main = node_rates(base_node)
    if workload.dtype == AUTO:
        workload = replace(workload, dtype="fp32" if main.cpu else "bf16")
    if main.empty and workload.matmuls():
        raise UsageError(f"{fabrics[0][0].label}: no complete gemm runs to time the step's compute: run "
                         "`clusterbench gemm` on the nodes (at the model's shapes: `predict` lists them)")
    out = []
    for fabric, runs in fabrics:
        own = node_rates(runs)
        out.append(predict(workload, fabric, main if own.empty else own))
    for text in links:
        out.append(predict(workload, fabrics[0][0].at_link(text.strip(), parse_link(text)), main))
    return out


def stored_prediction(db: str | os.PathLike[str] | None, selectors: Sequence[str], since: str | None = None, *,
                      workload: Workload | None = None, check: Sequence[str] = (), vs: Sequence[str] = (),
                      links: Sequence[str] = (), link_speed: str | None = None) -> PredictReport:
    """``workload`` (or each run ``check`` selects) predicted from the curves and node rates of
    the runs ``selectors`` pick, of each ``vs`` selection, and over each ``links`` rate."""
    with Store.open_to_read(db) as store:
        base = _selection(store, selectors, since, " ".join(selectors))
        others = [(sel, _selection(store, [sel], since, f"--vs {sel}")) for sel in vs]
        checked = _selection(store, check, since, f"--check {' '.join(check)}") if check else []
    fabrics = [(fabric_of(" ".join(selectors), base, link_speed), base)]
    fabrics += [(fabric_of(sel, runs, None, "vs"), runs) for sel, runs in others]
    report = PredictReport()
    if workload is not None:
        report.predictions = predictions_for(workload, fabrics, base, links)
    if check:
        checked = [(run, ms) for run, ms in checked if is_workload_run(run, ms)]
        if not checked:
            raise UsageError(f"--check {' '.join(check)}: selects no complete train or ddp-comm run")
    for run, ms in checked:
        w = workload_of_run(run, ms)
        preds = predictions_for(w, fabrics, base, links)
        report.checks.append(Check(run, measured_of_run(run, ms), preds[0]))
        report.predictions += preds
    return report
