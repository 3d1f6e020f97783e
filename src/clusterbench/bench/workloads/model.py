"""A synthetic decoder-only transformer for training benchmarks, sized by presets or by shape.

The architecture is the common one (pre-norm blocks, causal self-attention, SwiGLU MLP, untied
output head), so its parameter count and FLOPs match real models of the same shape. Data is
synthetic and generated on the device: every sequence follows a fixed, learnable rule (each
token is the previous one plus a per-model stride, modulo the vocabulary), so the loss really
falls as the model learns it, and no data set is downloaded.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from clusterbench.errors import UsageError


@dataclass(frozen=True)
class ModelShape:
    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    ffn: int
    kv_heads: int = 0  # grouped-query attention: key/value heads (0: same as heads)

    @property
    def kv(self) -> int:
        return self.kv_heads or self.heads

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


# Presets: "tiny" trains in seconds on a CPU; "1b" and "8b" follow the shapes of the common
# 1B and 8B open decoder models (Llama 3.2 1B / Llama 3.1 8B: layers, hidden, heads, FFN, vocab).
PRESETS: dict[str, ModelShape] = {
    "tiny": ModelShape(layers=2, hidden=64, heads=4, seq=32, vocab=128, ffn=128),
    "1b": ModelShape(layers=16, hidden=2048, heads=32, seq=2048, vocab=128256, ffn=8192, kv_heads=8),
    "8b": ModelShape(layers=32, hidden=4096, heads=32, seq=2048, vocab=128256, ffn=14336, kv_heads=8),
}


def resolve_shape(preset: str | None, *, layers: int | None = None, hidden: int | None = None,
                  heads: int | None = None, seq: int | None = None, vocab: int | None = None,
                  ffn: int | None = None, kv_heads: int | None = None) -> ModelShape:
    """A preset (default ``tiny``) with any of its dimensions overridden; validated."""
    name = preset or "tiny"
    if name not in PRESETS:
        raise UsageError(f"unknown model preset {name!r}: expected one of {', '.join(PRESETS)}")
    base = PRESETS[name]
    shape = ModelShape(
        layers=base.layers if layers is None else layers,
        hidden=base.hidden if hidden is None else hidden,
        heads=base.heads if heads is None else heads,
        seq=base.seq if seq is None else seq,
        vocab=base.vocab if vocab is None else vocab,
        ffn=(base.ffn if hidden is None else 4 * hidden) if ffn is None else ffn,
        kv_heads=(base.kv_heads if heads is None else 0) if kv_heads is None else kv_heads,
    )
    for field_name in ("layers", "hidden", "heads", "seq", "vocab", "ffn"):
        value = getattr(shape, field_name)
        if value < 1:
            raise UsageError(f"--{field_name} must be at least 1, got {value}")
        check_dimension(value, f"--{field_name}")
    if shape.hidden % shape.heads:
        raise UsageError(f"--hidden {shape.hidden} is not divisible by --heads {shape.heads}")
    if shape.kv_heads < 0:
        raise UsageError(f"--kv-heads must be at least 0 (0: as many as --heads), got {shape.kv_heads}")
    if shape.heads % shape.kv:
        raise UsageError(f"--kv-heads {shape.kv_heads} does not divide --heads {shape.heads}")
    if shape.kv_heads == shape.heads:
        # As many key/value heads as query heads is plain multi-head attention, which the shape
        # writes as 0: else `--kv-heads 4` on tiny was a "custom" model, unpaired with tiny runs.
        shape = replace(shape, kv_heads=0)
    if shape.vocab < 2:
        raise UsageError(f"--vocab must be at least 2, got {shape.vocab}")
    return shape


# A tensor dimension or a batch past this is no workload any device holds; past 2**63 torch
# cannot even take it (the rank failed with an overflow, stored as a failed run)
MAX_DIMENSION = 2**31 - 1


def check_dimension(value: int, option: str) -> None:
    if value > MAX_DIMENSION:
        raise UsageError(f"{option} {value} is past any tensor a device holds (at most {MAX_DIMENSION})")


def param_count(shape: ModelShape) -> int:
    """Exact number of parameters of ``build_model(shape)`` (tested against the module)."""
    h, f = shape.hidden, shape.ffn
    kv_dim = shape.kv * (h // shape.heads)
    per_layer = 2 * h * h + 2 * h * kv_dim + 3 * h * f + 2 * h  # q,o + k,v + gate,up,down + 2 norms
    return shape.vocab * h + shape.layers * per_layer + h + h * shape.vocab  # embed, final norm, head


def parameter_shapes(shape: ModelShape) -> list[tuple[str, tuple[int, ...]]]:
    """Every parameter of ``build_model(shape)`` by name and size, in registration order: the
    order FSDP shards them in and DDP buckets them from (tested against the module)."""
    h, f = shape.hidden, shape.ffn
    kv_dim = shape.kv * (h // shape.heads)
    out: list[tuple[str, tuple[int, ...]]] = [("embed.weight", (shape.vocab, h))]
    for i in range(shape.layers):
        p = f"blocks.{i}."
        out += [(p + "attn_norm.weight", (h,)), (p + "qkv.weight", (h + 2 * kv_dim, h)),
                (p + "out.weight", (h, h)), (p + "mlp_norm.weight", (h,)),
                (p + "gate_up.weight", (2 * f, h)), (p + "down.weight", (h, f))]
    return out + [("norm.weight", (h,)), ("head.weight", (shape.vocab, h))]


# How attention's score FLOPs are counted in MFU: the whole T x T matrix, as PaLM's definition
# (Chowdhery et al. 2022, appendix B) and Megatron/torchtitan count it, although this model is
# causal and flash-attention kernels skip the masked half; published MFU figures compare with it.
ATTENTION_COUNT = "full"


def attention_flops_per_token(shape: ModelShape) -> float:
    """Attention-score FLOPs per trained token: Q.K^T and A.V cost 2 x seq x hidden each per
    layer forward (query heads x head dim = hidden, also with grouped-query attention), x3 for
    forward and backward: 12 x layers x hidden x seq (not halved for the causal mask)."""
    return 12.0 * shape.layers * shape.hidden * shape.seq


def train_flops_per_token(shape: ModelShape) -> float:
    """Model FLOPs per trained token, as published MFU definitions count them:
    6 x (parameters - embedding table) + attention FLOPs.

    6 per weight (2 forward, 4 backward) for every weight used in a matmul; the embedding table
    (vocab x hidden) is a lookup, not a matmul, so it is left out (the untied output head stays).
    """
    return 6.0 * (param_count(shape) - shape.vocab * shape.hidden) + attention_flops_per_token(shape)


def training_state_bytes(shape: ModelShape, shard_ranks: int) -> int:
    """Bytes of fp32 parameters, gradients and AdamW state (two moments) held by one rank
    when sharded over ``shard_ranks`` ranks; activations and buffers come on top."""
    return math.ceil(16 * param_count(shape) / max(1, shard_ranks))


def activation_bytes(shape: ModelShape, local_batch: int, dtype_bytes: int) -> int:
    """A lower bound of the activations one rank keeps for the backward pass: every block's input
    (the residual stream, in the compute dtype) and the fp32 log-probabilities of the logits.
    Attention, MLP and norm intermediates come on top, so a model refused by it cannot fit."""
    return local_batch * shape.seq * (shape.layers * shape.hidden * dtype_bytes + 4 * shape.vocab)


def rms_norm(x: Any, weight: Any, eps: float) -> Any:
    """RMSNorm over the last dimension: ``F.rms_norm`` (torch >= 2.4, fused where the backend has
    a kernel), else the same formula in plain ops."""
    import torch
    from torch.nn import functional as F

    fused = getattr(F, "rms_norm", None)
    if fused is not None:
        return fused(x, (x.shape[-1],), weight, eps)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def build_model(shape: ModelShape) -> Any:
    """The decoder as an ``nn.Module`` (on the CPU; the caller moves or shards it)."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    class RMSNorm(nn.Module):
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return rms_norm(x, self.weight, 1e-6)

    class Block(nn.Module):
        def __init__(self, s: ModelShape) -> None:
            super().__init__()
            self.heads, self.kv, self.head_dim = s.heads, s.kv, s.hidden // s.heads
            self.attn_norm = RMSNorm(s.hidden)
            self.qkv = nn.Linear(s.hidden, s.hidden + 2 * s.kv * self.head_dim, bias=False)
            self.out = nn.Linear(s.hidden, s.hidden, bias=False)
            self.mlp_norm = RMSNorm(s.hidden)
            self.gate_up = nn.Linear(s.hidden, 2 * s.ffn, bias=False)
            self.down = nn.Linear(s.ffn, s.hidden, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, h = x.shape
            kv_dim = self.kv * self.head_dim
            q, k, v = self.qkv(self.attn_norm(x)).split([h, kv_dim, kv_dim], dim=-1)
            q = q.view(b, t, self.heads, self.head_dim).transpose(1, 2)
            k = k.view(b, t, self.kv, self.head_dim).transpose(1, 2)
            v = v.view(b, t, self.kv, self.head_dim).transpose(1, 2)
            if self.kv != self.heads:  # each key/value head serves heads/kv query heads
                k = k.repeat_interleave(self.heads // self.kv, dim=1)
                v = v.repeat_interleave(self.heads // self.kv, dim=1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.out(a.transpose(1, 2).reshape(b, t, h))
            gate, up = self.gate_up(self.mlp_norm(x)).chunk(2, dim=-1)
            return x + self.down(F.silu(gate) * up)

    class Decoder(nn.Module):
        def __init__(self, s: ModelShape) -> None:
            super().__init__()
            self.embed = nn.Embedding(s.vocab, s.hidden)
            self.blocks = nn.ModuleList(Block(s) for _ in range(s.layers))
            self.norm = RMSNorm(s.hidden)
            self.head = nn.Linear(s.hidden, s.vocab, bias=False)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            x = self.embed(tokens)
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x))

    torch.manual_seed(0)  # every rank starts from the same weights
    model = Decoder(shape)
    for name, p in model.named_parameters():
        if p.dim() == 2:
            nn.init.normal_(p, std=0.02 if "embed" in name else 1.0 / math.sqrt(p.shape[1]))
    return model


def stride_for(shape: ModelShape) -> int:
    """The rule's stride: odd and not 1, so every step of a sequence changes the token."""
    return 7 % shape.vocab or 1


def synthetic_batch(shape: ModelShape, batch: int, step: int, rank: int, device: Any) -> tuple[Any, Any]:
    """Inputs and next-token targets for one step, made on the device.

    Sequences start at random tokens (different per rank and step) and advance by a fixed
    stride, so the next token is a learnable function of the current one.
    """
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(1_000_003 * (rank + 1) + step)
    start = torch.randint(0, shape.vocab, (batch, 1), generator=gen, device=device)
    pos = torch.arange(shape.seq + 1, device=device).unsqueeze(0)
    seq = (start + stride_for(shape) * pos) % shape.vocab
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()
