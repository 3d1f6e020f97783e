"""The workload model: what one training step issues over the fabric and computes on each rank,
from the model's shape and the parallel layout. Pure functions, no torch.

Each rule mirrors what PyTorch does for clusterbench's own workloads (``bench/workloads``), and
``tests/system/test_predict_plan.py`` records the collectives of a real 2-rank gloo step and
compares them with this plan:

* **FSDP2** (``train``: ``fully_shard`` on every block, then on the whole model): one unit per
  block and a root unit holding the rest (embedding, final norm, head). Each parameter is
  sharded on dim 0, padded up to a multiple of the shard group. Forward: one all_gather per
  unit, in place (the rank's shard is a slot of the output), of the unit's padded parameters in
  the compute dtype. Backward: every block is gathered again (the root is not resharded after
  forward), then one reduce_scatter per unit (out of place) of its padded fp32 gradients.
  Hybrid sharding reduce-scatters inside the shard group and then all_reduces the shard (1/shard
  of the unit) across the replicas; a shard group of one rank gathers and scatters nothing.
* **DDP**: gradients (fp32) go into buckets in the order they become ready (the reverse of
  registration), as the reducer rebuilds them after the first step: a bucket closes once it
  holds ``bucket_cap_mb`` MiB or more (DDP's first bucket is capped at 1 MiB when no cap is
  given), one in-place all_reduce per bucket.

Message sizes are what nccl-tests calls a row's size (max of send and receive bytes), so each
looks up on a ``coll`` curve as measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterbench.bench.workloads.ddp_comm import BYTES_PER_PARAM, layer_elements
from clusterbench.bench.workloads.model import (
    ModelShape,
    param_count,
    parameter_shapes,
    train_flops_per_token,
)
from clusterbench.bench.workloads.train import shard_ranks
from clusterbench.errors import UsageError

STRATEGIES = ("full", "hybrid", "ddp")
DTYPES = ("fp32", "bf16")
AUTO = "auto"   # a workload's dtype before the nodes are known: fp32 on CPUs, bf16 on GPUs
# nccl-tests' name of each compute dtype, as the collective curves record theirs
CURVE_DTYPE = {"fp32": "float", "bf16": "bfloat16"}
ELEMENT_BYTES = {"fp32": 4, "bf16": 2}
REDUCE_BYTES = 4            # FSDP reduces gradients in fp32 (reduce_dtype), DDP's are fp32
DDP_DEFAULT_CAP_MB = 25.0   # DistributedDataParallel's bucket_cap_mb
DDP_FIRST_BUCKET = 1 << 20  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES, used without a cap


@dataclass(frozen=True)
class Layout:
    """Ranks over nodes and how parameters are split: ``shard_size`` ranks share one copy of
    the parameters (full: all of them; hybrid: a group, replicated across the others; DDP: 1)."""

    strategy: str
    nodes: int
    ranks_per_node: int
    shard_size: int

    @property
    def world(self) -> int:
        return self.nodes * self.ranks_per_node

    @property
    def replicas(self) -> int:
        return self.world // self.shard_size

    def _nodes_of(self, ranks: list[int]) -> int:
        return len({r // self.ranks_per_node for r in ranks})

    @property
    def shard_nodes(self) -> int:
        """Nodes one shard group spans (ranks 0 .. shard_size - 1)."""
        return self._nodes_of(list(range(self.shard_size)))

    @property
    def replica_nodes(self) -> int:
        """Nodes one replicate group spans (ranks 0, shard_size, 2 shard_size, ...)."""
        return self._nodes_of([j * self.shard_size for j in range(self.replicas)])

    def describe(self) -> str:
        what = {"full": "FSDP full shard", "hybrid": f"FSDP hybrid shard (groups of {self.shard_size})",
                "ddp": "DDP"}[self.strategy]
        return f"{what}, {self.world} ranks ({self.nodes} node(s) x {self.ranks_per_node})"


def make_layout(strategy: str, nodes: int, ranks_per_node: int, shard_size: int | None = None) -> Layout:
    """A checked layout; hybrid's shard group defaults to the ranks of one node, as ``train``'s."""
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}: expected {', '.join(STRATEGIES)}")
    if nodes < 1 or ranks_per_node < 1:
        raise UsageError("a layout needs at least 1 node and 1 rank per node")
    world = nodes * ranks_per_node
    if strategy == "ddp":
        if shard_size is not None:
            raise UsageError("--shard-size is for --strategy hybrid")
        return Layout(strategy, nodes, ranks_per_node, 1)
    if strategy == "full" and shard_size is not None:
        raise UsageError("--shard-size is for --strategy hybrid; --strategy full shards over all ranks")
    return Layout(strategy, nodes, ranks_per_node, shard_ranks(strategy, world, shard_size, ranks_per_node))


@dataclass(frozen=True)
class Collective:
    """One collective a step issues: its op, size (bytes, nccl-tests' size column), group."""

    op: str
    bytes: int
    ranks: int           # ranks in the group
    nodes: int           # nodes the group spans
    phase: str           # forward / backward
    unit: str            # what it moves: an FSDP unit ("root", "blocks.3") or a DDP bucket
    placement: str       # "in" or "out", as PyTorch issues it
    dtype: str           # nccl-tests' type name of the elements


Dims = tuple[int, ...]


def padded_numel(dims: Dims, shard: int) -> int:
    """Elements of a parameter once FSDP2 pads dim 0 to a multiple of ``shard``."""
    rest = math.prod(dims[1:])
    return math.ceil(dims[0] / shard) * shard * rest


def fsdp_units(shape: ModelShape) -> list[tuple[str, list[Dims]]]:
    """The FSDP units of ``train``'s model, in forward order: the root (what no block holds),
    then each block."""
    units: dict[str, list[Dims]] = {"root": []}
    for name, dims in parameter_shapes(shape):
        unit = ".".join(name.split(".")[:2]) if name.startswith("blocks.") else "root"
        units.setdefault(unit, []).append(dims)
    return list(units.items())


def unit_numel(params: list[Dims], shard: int) -> int:
    return sum(padded_numel(d, shard) for d in params)


def fsdp_plan(shape: ModelShape, layout: Layout, dtype: str) -> list[Collective]:
    """The collectives of one FSDP2 step, in the order they are issued."""
    s, rep = layout.shard_size, layout.replicas
    elt, cdt = ELEMENT_BYTES[dtype], CURVE_DTYPE[dtype]
    units = fsdp_units(shape)

    def gather(unit: str, params: list[Dims], phase: str) -> list[Collective]:
        if s == 1:
            return []
        return [Collective("all_gather", unit_numel(params, s) * elt, s, layout.shard_nodes, phase, unit,
                           "in", cdt)]

    def reduce(unit: str, params: list[Dims]) -> list[Collective]:
        n = unit_numel(params, s)
        out = []
        if s > 1:
            out.append(Collective("reduce_scatter", n * REDUCE_BYTES, s, layout.shard_nodes, "backward", unit,
                                  "out", "float"))
        if rep > 1:
            out.append(Collective("all_reduce", n // s * REDUCE_BYTES, rep, layout.replica_nodes, "backward",
                                  unit, "in", "float"))
        return out

    plan: list[Collective] = []
    for unit, params in units:
        plan += gather(unit, params, "forward")
    for unit, params in reversed(units[1:]):       # the root stays gathered for backward
        plan += gather(unit, params, "backward")
        plan += reduce(unit, params)
    return plan + reduce(*units[0])


def ddp_buckets(sizes: list[int], cap: int, first_cap: int | None = None) -> list[int]:
    """Bucket sizes (bytes) for gradients of ``sizes`` bytes in the order they become ready, as
    the reducer assigns them: a bucket closes once it holds ``cap`` bytes or more (the first
    once it holds ``first_cap``); what is left is the last bucket."""
    buckets, current = [], 0
    limit = cap if first_cap is None else first_cap
    for size in sizes:
        current += size
        if current >= limit:
            buckets.append(current)
            current, limit = 0, cap
    return buckets + ([current] if current else [])


def bucket_caps(bucket_cap_mb: float | None) -> tuple[int, int]:
    """(cap, first bucket's cap) in bytes, as DDP derives them from ``bucket_cap_mb``."""
    if bucket_cap_mb is None:
        return int(DDP_DEFAULT_CAP_MB * 2**20), DDP_FIRST_BUCKET
    cap = int(bucket_cap_mb * 2**20)
    return cap, cap


def _all_reduces(buckets: list[int], layout: Layout) -> list[Collective]:
    if layout.world < 2:
        return []
    return [Collective("all_reduce", b, layout.world, layout.nodes, "backward", f"bucket {i}", "in", "float")
            for i, b in enumerate(buckets)]


def ddp_plan(shape: ModelShape, layout: Layout, bucket_cap_mb: float | None) -> list[Collective]:
    """The all_reduces of one DDP step of ``train``'s model (fp32 gradients)."""
    sizes = [math.prod(d) * REDUCE_BYTES for _, d in reversed(parameter_shapes(shape))]
    return _all_reduces(ddp_buckets(sizes, *bucket_caps(bucket_cap_mb)), layout)


def ddp_comm_plan(layers: int, size_bytes: int, bucket_cap_mb: float, layout: Layout) -> list[Collective]:
    """The all_reduces of one ``ddp-comm`` step: ``layers`` equal dummy layers."""
    per = layer_elements(layers, size_bytes) * BYTES_PER_PARAM
    return _all_reduces(ddp_buckets([per] * layers, *bucket_caps(bucket_cap_mb)), layout)


# -- compute ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Matmul:
    """``count`` matrix products of (m x k) by (k x n), ``batch`` at a time (2 m n k batch FLOPs each)."""

    what: str
    m: int
    n: int
    k: int
    batch: int = 1
    count: int = 1

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k * self.batch * self.count


def _linear(what: str, tokens: int, n_in: int, n_out: int, count: int) -> list[Matmul]:
    """A linear layer's forward product and its two backward ones (input and weight gradients)."""
    return [Matmul(what, tokens, n_out, n_in, count=count),
            Matmul(f"{what} dgrad", tokens, n_in, n_out, count=count),
            Matmul(f"{what} wgrad", n_out, n_in, tokens, count=count)]


def matmuls(shape: ModelShape, local_batch: int) -> list[Matmul]:
    """Every matrix product of one rank's forward and backward, at its shapes."""
    t, h, f, L = local_batch * shape.seq, shape.hidden, shape.ffn, shape.layers
    d = h // shape.heads
    kv_dim = shape.kv * d
    out = (_linear("qkv", t, h, h + 2 * kv_dim, L) + _linear("attn out", t, h, h, L)
           + _linear("gate_up", t, h, 2 * f, L) + _linear("down", t, f, h, L)
           + _linear("head", t, h, shape.vocab, 1))
    # attention scores over the full T x T matrix, as the MFU formula counts them: Q.K^T and A.V
    # forward, four products of the same size backward
    heads = local_batch * shape.heads
    return out + [Matmul("attention", shape.seq, shape.seq, d, heads, 2 * L),
                  Matmul("attention bwd", shape.seq, d, shape.seq, heads, 4 * L)]


def model_flops(shape: ModelShape, tokens: int) -> float:
    """Model FLOPs of ``tokens`` trained tokens, the MFU definition of docs/metrics.md."""
    return train_flops_per_token(shape) * tokens


# Element reads and writes of the elementwise work, counted from the model's ops (docs/workloads.md):
# per token and block, forward 12 h + 5 f (two RMSNorms 2 h each, the attention output's copy 2 h,
# two residual adds 3 h each, SiLU 2 f and its product 3 f), backward 18 h + 13 f; per token the
# loss over the vocabulary 8 V (log-softmax and its gradient) and 12 h (embedding, final norm).
BLOCK_H, BLOCK_F, VOCAB_PASSES, TOKEN_H = 30, 18, 8, 12
# AdamW as torch runs it on CPU and for DTensors (one tensor at a time): weight decay 2, lerp of
# the first moment 3, second moment 2 + 3, sqrt 2, division 2, eps 2, the update 4.
ADAMW_ACCESSES = 20
# FSDP2's copies around each collective: all_gather copy-in (shard read and written) and
# copy-out (unit); reduce_scatter copy-in and pre-divide (unit, twice), post-divide (shard)
AG_COPY_SHARD, AG_COPY_UNIT = 2, 2
RS_COPY_UNIT, RS_COPY_SHARD = 4, 2
# DDP per gradient element: accumulating into the bucket view (3) and dividing by the ranks (2)
DDP_ACCESSES = 5
# ddp-comm's dummy layers, per gradient element: the slice's backward fills a zero gradient (1),
# then accumulation (3) and division (2)
DDP_COMM_ACCESSES = 6


@dataclass(frozen=True)
class MemoryTraffic:
    """Bytes one rank's memory-bound work moves per step, by kind."""

    parts: tuple[tuple[str, float], ...]

    @property
    def total(self) -> float:
        return sum(b for _, b in self.parts)


def local_params(shape: ModelShape, layout: Layout) -> int:
    """Parameter elements one rank's optimizer updates: its padded shard of every unit."""
    if layout.strategy == "ddp":
        return sum(math.prod(d) for _, d in parameter_shapes(shape))
    return sum(unit_numel(p, layout.shard_size) for _, p in fsdp_units(shape)) // layout.shard_size


def train_memory(shape: ModelShape, layout: Layout, local_batch: int, dtype: str) -> MemoryTraffic:
    """The elementwise, optimizer and sharding traffic of one rank's step."""
    t, h, f = local_batch * shape.seq, shape.hidden, shape.ffn
    elt = ELEMENT_BYTES[dtype]
    acts = t * (shape.layers * (BLOCK_H * h + BLOCK_F * f) + VOCAB_PASSES * shape.vocab + TOKEN_H * h) * elt
    parts = [("elementwise", float(acts)), ("optimizer", float(ADAMW_ACCESSES * 4 * local_params(shape, layout)))]
    if layout.strategy == "ddp":
        parts.append(("ddp buckets", float(DDP_ACCESSES * 4 * local_params(shape, layout))))
    else:
        s = layout.shard_size
        copies = 0.0
        for unit, params in fsdp_units(shape):
            full = unit_numel(params, s)
            gathers = (1 if unit == "root" else 2) if s > 1 else 0
            copies += gathers * (AG_COPY_SHARD * full / s + AG_COPY_UNIT * full) * elt
            copies += (RS_COPY_UNIT * full + RS_COPY_SHARD * full / s) * REDUCE_BYTES if s > 1 else 0
        parts.append(("fsdp copies", copies))
    return MemoryTraffic(tuple(parts))


def ddp_comm_memory(layers: int, size_bytes: int) -> MemoryTraffic:
    elements = layer_elements(layers, size_bytes) * layers
    return MemoryTraffic((("gradients", float(DDP_COMM_ACCESSES * BYTES_PER_PARAM * elements)),))


# -- a workload -----------------------------------------------------------------------------------

TRAIN, DDP_COMM = "train", "ddp_comm"


@dataclass(frozen=True)
class Workload:
    """One step of a job: ``train``'s decoder (FSDP or DDP) or ``ddp-comm``'s dummy layers."""

    kind: str
    layout: Layout
    dtype: str = "fp32"
    shape: ModelShape | None = None
    model: str = ""                     # preset name, or custom
    batch: int = 0                      # global sequences per step (train)
    bucket_cap_mb: float | None = None  # DDP
    layers: int = 0                     # ddp-comm's dummy layers
    size_bytes: int = 0                 # and their gradient bytes

    def __post_init__(self) -> None:
        if self.dtype not in (*DTYPES, AUTO):
            raise UsageError(f"unknown dtype {self.dtype!r}: expected {', '.join((*DTYPES, AUTO))}")
        if self.kind == TRAIN and (self.batch < 1 or self.batch % self.layout.world):
            raise UsageError(f"--batch {self.batch} is not divisible by the {self.layout.world} ranks")

    @property
    def local_batch(self) -> int:
        return self.batch // self.layout.world

    @property
    def tokens(self) -> int:
        """Tokens trained per step, all ranks (0 for ddp-comm)."""
        return self.batch * self.shape.seq if self.shape else 0

    def plan(self) -> list[Collective]:
        if self.kind == DDP_COMM:
            return ddp_comm_plan(self.layers, self.size_bytes, self.bucket_cap_mb or DDP_DEFAULT_CAP_MB,
                                 self.layout)
        assert self.shape is not None
        if self.layout.strategy == "ddp":
            return ddp_plan(self.shape, self.layout, self.bucket_cap_mb)
        return fsdp_plan(self.shape, self.layout, self.dtype)

    def matmuls(self) -> list[Matmul]:
        return matmuls(self.shape, self.local_batch) if self.shape else []

    def memory(self) -> MemoryTraffic:
        if self.kind == DDP_COMM:
            return ddp_comm_memory(self.layers, self.size_bytes)
        assert self.shape is not None
        return train_memory(self.shape, self.layout, self.local_batch, self.dtype)

    def describe(self) -> str:
        if self.kind == DDP_COMM:
            return (f"ddp-comm: {self.layers} dummy layers, {self.size_bytes / 2**20:g} MiB of gradients, bucket cap "
                    f"{self.bucket_cap_mb or DDP_DEFAULT_CAP_MB:g} MiB, {self.layout.world} ranks "
                    f"({self.layout.nodes} node(s) x {self.layout.ranks_per_node})")
        assert self.shape is not None
        return (f"model {self.model or 'custom'}: {param_count(self.shape) / 1e6:.3g}M parameters, "
                f"{self.shape.layers} layers, hidden {self.shape.hidden}, {self.layout.describe()}, {self.dtype}, "
                f"global batch {self.batch} x {self.shape.seq} tokens")
