"""A workload's step time predicted from measured curves: compute from the nodes' GEMM rate and
memory bandwidth, communication from the fabric's collective curves, and how the two overlap
as the library schedules them (docs/workloads.md, "Predicting a step").

* compute = the step's matrix products at the GEMM rate measured at the nearest shape, plus its
  memory-bound work (elementwise ops, the optimizer, FSDP's and DDP's copies) at the stream
  bandwidth;
* communication = the sum over the step's collectives of the curve's time at each size;
* the bounds: no overlap (compute + communication) and full overlap (the larger of the two);
* the prediction: on CPU ranks (gloo) no overlap: FSDP2 issues every collective synchronously
  from the training thread (its streams are no-ops on CPU), and DDP's asynchronous all_reduces
  run on gloo's threads on the same cores as the backward pass. On GPUs a timeline of FSDP2's
  prefetching (the next unit's all_gather issued as a unit's compute starts, each
  reduce_scatter as a unit's backward ends) or DDP's buckets (each all_reduce once its last
  gradient is ready), on one network shared in issue order.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from clusterbench import peaks
from clusterbench.errors import UsageError
from clusterbench.judge.fabric import ABOVE, BELOW, Curve, GemmPoint, NodeRates, choose_curve
from clusterbench.judge.workload import DDP_COMM, Collective, Workload, model_flops
from clusterbench.units import format_size

NETWORK, COMPUTE = "network", "compute"
NO_OVERLAP = "none (CPU ranks: gloo's collectives run synchronously or on the compute's cores)"
FSDP_PREFETCH = "FSDP2 prefetch timeline"
DDP_BUCKETS = "DDP bucket timeline"
FORWARD_SHARE = 1 / 3      # of a unit's compute: forward 2 FLOPs per weight, backward 4


@dataclass(frozen=True)
class Fabric:
    """The collective curves of one fabric: measured, or a measured one over another link."""

    label: str
    curves: list[Curve]
    link_bps: float | None = None      # the measured link's rate, bytes/s
    link_text: str = ""
    runs: tuple[int, ...] = ()
    what_if: str = ""                  # "" (measured), "vs" (another selection), "link" (theory)

    def at_link(self, text: str, rate_bps: float) -> Fabric:
        """This fabric over links of ``rate_bps``, with its measured efficiency."""
        if not self.link_bps:
            raise UsageError(f"--link {text}: the link rate of {self.label} is not known: tag its collective runs "
                             "(`clusterbench results tag RUN link_speed=1Gbps`) or give --link-speed")
        factor = self.link_bps / rate_bps
        return Fabric(f"--link {text}", [c.at_link(factor) for c in self.curves], rate_bps, text, self.runs, "link")


@dataclass(frozen=True)
class Timed:
    collective: Collective
    seconds: float
    where: str
    curve: Curve


@dataclass
class Prediction:
    fabric: Fabric
    workload: Workload
    collectives: list[Timed]
    compute: Compute
    step_s: float
    overlap: str
    mfu: float | None = None
    bandwidth_gbs: float | None = None                                 # stream Triad used
    bandwidth_where: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def compute_s(self) -> float:
        return self.compute.seconds

    @property
    def comm_s(self) -> float:
        return sum(t.seconds for t in self.collectives)

    @property
    def no_overlap_s(self) -> float:
        return self.compute_s + self.comm_s

    @property
    def full_overlap_s(self) -> float:
        return max(self.compute_s, self.comm_s)

    @property
    def comm_share(self) -> float:
        """Share of the step with a collective in flight, as ``train`` measures ``comm_share``."""
        return min(1.0, self.comm_s / self.step_s) if self.step_s > 0 else 0.0

    @property
    def bound(self) -> str:
        return NETWORK if self.comm_s > self.compute_s else COMPUTE

    @property
    def tokens_per_s(self) -> float | None:
        return self.workload.tokens / self.step_s if self.workload.tokens and self.step_s > 0 else None

    @property
    def samples_per_s(self) -> float | None:
        return self.workload.batch / self.step_s if self.workload.batch and self.step_s > 0 else None

    @property
    def algbw_gbs(self) -> float | None:
        """ddp-comm's figure: gradient bytes / step time."""
        if self.workload.kind != DDP_COMM or self.step_s <= 0:
            return None
        return self.workload.size_bytes // (4 * self.workload.layers) * 4 * self.workload.layers / self.step_s / 1e9


def time_collectives(plan: list[Collective], fabric: Fabric) -> tuple[list[Timed], list[str]]:
    """Each collective's time on the fabric's curves, and what the lookups had to assume."""
    out, caveats, outside = [], [], {}
    for c in plan:
        choice = choose_curve(fabric.curves, c.op, c.ranks, c.nodes, c.placement, c.dtype)
        if choice is None:
            have = sorted({f"{k.op} on {k.ranks} ranks" for k in fabric.curves}) or ["no collective curves"]
            raise UsageError(f"{fabric.label}: no {c.op} curve on {c.ranks} ranks to time the step's {c.op} "
                             f"(measured: {', '.join(have)}): run `clusterbench coll {c.op}` on {c.ranks} ranks")
        look = choice.curve.at(c.bytes)
        out.append(Timed(c, look.seconds, look.where, choice.curve))
        caveats += [x for x in choice.caveats if x not in caveats]
        if look.where in (BELOW, ABOVE):
            outside.setdefault((c.op, c.bytes, look.where, choice.curve), 0)
            outside[(c.op, c.bytes, look.where, choice.curve)] += 1
    for (op, size, where, curve), n in outside.items():
        how = "the smallest size's time" if where == BELOW else "the largest size's bandwidth"
        caveats.append(f"{op} of {format_size(size)} ({n} per step) is {where} the measured sizes "
                       f"{curve.span} (run {', '.join(map(str, curve.runs))}): timed with {how}")
    return out, caveats


@dataclass
class Compute:
    """One rank's compute per step: the seconds used, where they come from, by part; and the
    estimate from the GEMM rate alone, also where a one-rank step was used instead."""

    seconds: float
    source: str
    parts: tuple[tuple[str, float], ...]
    from_gemm_s: float | None = None
    gemm_used: dict[GemmPoint, float] = field(default_factory=dict)   # point -> FLOPs run at its rate
    step_runs: tuple[int, ...] = ()


def _gemm_compute(workload: Workload, node: NodeRates) -> tuple[float, dict[GemmPoint, float]]:
    used: dict[GemmPoint, float] = {}
    matmul_s = 0.0
    for mm in workload.matmuls():
        point = node.gemm_for(mm.m, mm.n, mm.k, workload.dtype)
        if point is None:
            have = sorted({p.dtype for p in node.gemm}) or ["none"]
            raise UsageError(f"no {workload.dtype} gemm run (nor a one-rank train run of this model and per-rank "
                             f"batch) to time the step's compute (gemm dtypes measured: {', '.join(have)}): run "
                             f"`clusterbench gemm --dtype {workload.dtype}` on the nodes")
        used[point] = used.get(point, 0.0) + mm.flops
        matmul_s += mm.flops / (point.tflops * 1e12)
    return matmul_s, used


def compute_times(workload: Workload, node: NodeRates) -> tuple[Compute, list[str]]:
    """The step's compute: a one-rank ``train`` run of the same model and per-rank batch where
    the selection has one (measured, with what sharding changes added at the stream bandwidth:
    the optimizer's share of the parameters, FSDP's or DDP's copies), else the matrix products
    at the GEMM rate of the nearest measured shape plus the memory-bound work at the stream
    bandwidth."""
    notes: list[str] = []
    traffic = workload.memory()
    per_byte = 1 / (node.bandwidth_gbs * 1e9) if node.bandwidth_gbs else 0.0
    if not node.bandwidth_gbs and traffic.total:
        notes.append(f"no stream run: the step's memory-bound work ({traffic.total / 1e6:.4g} MB per rank) is not "
                     "counted (run `clusterbench stream` on the nodes)")
    step = None
    if workload.shape is not None:
        step = node.step_for(workload.shape.to_dict(), workload.local_batch, workload.dtype)
    gemm_s, used = None, {}
    if workload.matmuls() and (node.gemm or step is None):
        matmul_s, used = _gemm_compute(workload, node)
        gemm_s = matmul_s + traffic.total * per_byte
    if step is not None:
        assert workload.shape is not None
        one_rank = replace(workload.layout, strategy="full", nodes=1, ranks_per_node=1, shard_size=1)
        alone = Workload(workload.kind, one_rank, workload.dtype, workload.shape, batch=workload.local_batch)
        delta = (traffic.total - alone.memory().total) * per_byte
        parts = ((f"one-rank step (run {', '.join(map(str, step.runs))}, {step.where})", step.seconds),
                 ("sharding's difference (optimizer, copies)", delta))
        return Compute(step.seconds + delta, "one-rank step", parts, gemm_s, used, step.runs), notes
    if gemm_s is None:      # ddp-comm: no products, its gradients' memory work only
        memory_s = traffic.total * per_byte
        return Compute(memory_s, "memory bandwidth", (("memory-bound", memory_s),)), notes
    matmul_s = gemm_s - traffic.total * per_byte
    return Compute(gemm_s, "GEMM rate", (("matrix products", matmul_s), ("memory-bound", gemm_s - matmul_s)),
                   gemm_s, used), notes


class _Network:
    """One network, collectives sent in issue order."""

    def __init__(self) -> None:
        self.free = 0.0

    def send(self, issue: float, seconds: float) -> float:
        """When a collective issued at ``issue`` ends."""
        self.free = max(issue, self.free) + seconds
        return self.free


def fsdp_timeline(timed: list[Timed], compute_s: float, optimizer_s: float, units: list[str]) -> float:
    """FSDP2's step with its prefetching: a unit's all_gather must end before its compute,
    the next unit's all_gather is issued as a unit's compute starts, a unit's reduce_scatter
    (and hybrid's all_reduce) as its backward ends; one network, in issue order."""
    per_unit = (compute_s - optimizer_s) / len(units)
    gathers: dict[tuple[str, str], float] = {}
    reduces: dict[str, float] = {}
    for t in timed:
        c = t.collective
        if c.op == "all_gather":
            gathers[(c.phase, c.unit)] = t.seconds
        else:
            reduces[c.unit] = reduces.get(c.unit, 0.0) + t.seconds
    net = _Network()
    send = net.send
    clock = 0.0
    for phase, order, share in (("forward", units, FORWARD_SHARE), ("backward", units[:0:-1], 1 - FORWARD_SHARE)):
        ready = {order[0]: send(clock, gathers.get((phase, order[0]), 0.0))}
        for i, unit in enumerate(order):
            start = max(clock, ready[unit])
            if i + 1 < len(order):
                ready[order[i + 1]] = send(start, gathers.get((phase, order[i + 1]), 0.0))
            clock = start + per_unit * share
            if phase == "backward":
                send(clock, reduces.get(unit, 0.0))
    clock += per_unit * (1 - FORWARD_SHARE)     # the root's backward (head, embedding)
    send(clock, reduces.get(units[0], 0.0))
    return max(clock, net.free) + optimizer_s


def ddp_timeline(timed: list[Timed], compute_s: float, optimizer_s: float) -> float:
    """DDP's step: forward, then backward with each bucket's all_reduce issued once its last
    gradient is ready (ready at the share of the gradients' bytes computed), one network."""
    work = compute_s - optimizer_s
    clock = work * FORWARD_SHARE
    total = sum(t.collective.bytes for t in timed) or 1
    net = _Network()
    done = 0
    for t in timed:
        done += t.collective.bytes
        net.send(clock + work * (1 - FORWARD_SHARE) * done / total, t.seconds)
    return max(work, net.free) + optimizer_s


def predict(workload: Workload, fabric: Fabric, node: NodeRates) -> Prediction:
    """The step of ``workload`` over ``fabric`` on nodes of ``node``'s rates."""
    timed, notes = time_collectives(workload.plan(), fabric)
    compute, compute_notes = compute_times(workload, node)
    pred = Prediction(fabric, workload, timed, compute, 0.0, NO_OVERLAP, bandwidth_gbs=node.bandwidth_gbs,
                      bandwidth_where=node.bandwidth_where, notes=notes + compute_notes)
    if node.cpu:
        pred.step_s = pred.no_overlap_s
    else:
        traffic = dict(workload.memory().parts)
        optimizer_s = traffic.get("optimizer", 0.0) / (node.bandwidth_gbs * 1e9) if node.bandwidth_gbs else 0.0
        if workload.kind == DDP_COMM or workload.layout.strategy == "ddp":
            pred.step_s, pred.overlap = ddp_timeline(timed, pred.compute_s, optimizer_s), DDP_BUCKETS
        else:
            units = ["root"] + [f"blocks.{i}" for i in range(workload.shape.layers if workload.shape else 0)]
            pred.step_s, pred.overlap = fsdp_timeline(timed, pred.compute_s, optimizer_s, units), FSDP_PREFETCH
    if workload.shape is not None and pred.step_s > 0:
        peak = peaks.dense_tflops(node.device_name, workload.dtype) if not node.cpu else None
        if peak:
            pred.mfu = model_flops(workload.shape, workload.tokens) / workload.layout.world / pred.step_s / 1e12 / peak
    return pred
