"""The synthetic decoder: shapes, parameter count, FLOPs formula, the learnable data rule."""

import pytest
import torch

from clusterbench.bench.workloads.model import (
    PRESETS,
    build_model,
    param_count,
    resolve_shape,
    stride_for,
    synthetic_batch,
    train_flops_per_token,
    training_state_bytes,
)
from clusterbench.errors import UsageError


def test_param_count_matches_the_module():
    for shape in (PRESETS["tiny"], resolve_shape("tiny", layers=3, hidden=96, heads=6, vocab=50),
                  resolve_shape("tiny", heads=4, kv_heads=2)):
        model = build_model(shape)
        assert sum(p.numel() for p in model.parameters()) == param_count(shape)


def test_presets_have_their_published_sizes():
    # Llama 3.2 1B has 1.24B parameters with tied embeddings; untied heads add 0.26B.
    assert 1.4e9 < param_count(PRESETS["1b"]) < 1.6e9
    assert 7.9e9 < param_count(PRESETS["8b"]) < 8.2e9  # Llama 3.1 8B: 8.03B
    assert train_flops_per_token(PRESETS["8b"]) == 6 * param_count(PRESETS["8b"])
    assert training_state_bytes(PRESETS["8b"], 8) == 2 * param_count(PRESETS["8b"])


def test_forward_shape_and_meta_build():
    shape = PRESETS["tiny"]
    x, y = synthetic_batch(shape, 3, 0, 0, torch.device("cpu"))
    assert build_model(shape)(x).shape == (3, shape.seq, shape.vocab)
    gqa = resolve_shape("tiny", heads=4, kv_heads=2)
    assert build_model(gqa)(x).shape == (3, shape.seq, shape.vocab)
    with torch.device("meta"):
        assert build_model(shape).head.weight.is_meta


def test_synthetic_batch_follows_its_rule_and_differs_per_rank():
    shape = PRESETS["tiny"]
    x, y = synthetic_batch(shape, 4, 5, 1, torch.device("cpu"))
    assert x.shape == y.shape == (4, shape.seq)
    assert torch.equal(y, (x + stride_for(shape)) % shape.vocab)
    assert torch.equal(x[:, 1:], y[:, :-1])
    x2, _ = synthetic_batch(shape, 4, 5, 0, torch.device("cpu"))
    assert not torch.equal(x, x2)
    assert torch.equal(x, synthetic_batch(shape, 4, 5, 1, torch.device("cpu"))[0])


@pytest.mark.parametrize("kw,match", [
    ({"layers": 0}, "--layers must be at least 1"),
    ({"hidden": 0}, "--hidden must be at least 1"),
    ({"hidden": 65, "heads": 4}, "not divisible by --heads"),
    ({"vocab": 1}, "--vocab must be at least 2"),
    ({"heads": 4, "kv_heads": 3}, "does not divide --heads"),
])
def test_bad_shapes(kw, match):
    with pytest.raises(UsageError, match=match):
        resolve_shape("tiny", **kw)


def test_unknown_preset():
    with pytest.raises(UsageError, match="unknown model preset"):
        resolve_shape("70b")
