"""Tests of clusterbench.bench.stream.kernels: the PyTorch implementation of the stream kernels (one backend."""

from __future__ import annotations

import pytest

from clusterbench.bench.stream.kernels import TorchStream
from clusterbench.families.stream import spec


def test_nstream_counts_what_runs():
    """Count the tensor reads and writes Nstream issues: a = a + b, then a = a + s*c."""
    import torch


    impl = TorchStream(1000, "double", torch.device("cpu"))
    impl.init_arrays()
    seen = []

    class Count(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    with Count():
        impl.nstream()
    # two in-place adds, each reading two arrays and writing one: 6 arrays
    assert seen == ["add_", "add_"]
    assert spec.bytes_moved("Nstream", 1000, 8) == 6 * 8 * 1000


def test_dot_and_check_work_in_chunks(monkeypatch):
    """Arrays longer than one chunk: torch.dot per chunk (cuBLAS takes at most 2^31 - 1), and the
    check's float64 temporaries stay one chunk long."""
    import torch

    from clusterbench.bench.stream import kernels

    impl = kernels.TorchStream(10_007, "float", torch.device("cpu"))
    impl.init_arrays()
    impl.b.copy_(torch.linspace(0, 1, 10_007))
    whole = float(torch.dot(impl.a.double(), impl.b.double()))
    calls = []
    real_dot = torch.dot
    monkeypatch.setattr(kernels, "DOT_CHUNK", 1000)
    monkeypatch.setattr(kernels, "CHECK_CHUNK", 999)
    monkeypatch.setattr(kernels.torch, "dot", lambda x, y: calls.append(x.numel()) or real_dot(x, y))
    assert float(impl.dot()) == pytest.approx(whole, rel=1e-6)
    assert max(calls) == 1000 and sum(calls) == 10_007
    errs = impl.mean_abs_errors(spec.START_A, 0.5, spec.START_C)
    assert errs[0] == pytest.approx(abs(float(impl.a[0]) - spec.START_A), abs=1e-12)
    assert errs[1] == pytest.approx(float((impl.b.double() - 0.5).abs().mean()), rel=1e-9)
