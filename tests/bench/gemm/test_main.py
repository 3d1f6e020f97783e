"""Tests of clusterbench.bench.gemm.main: the per-rank GEMM benchmark."""

from __future__ import annotations

import torch
from node_doubles import NODE_TARGETS

from clusterbench.bench.gemm import main as gemm_main
from clusterbench.bench.suite import SUITE
from clusterbench.families.gemm import spec as gemm_spec
from clusterbench.families.stream import spec as stream_spec


def _entries():
    return [e for e in SUITE if e.target in NODE_TARGETS]


def test_unsupported_reads_the_gcn_arch(monkeypatch):

    props = type("P", (), {"gcnArchName": "gfx90a:sramecc+:xnack-"})()
    monkeypatch.setattr(torch.version, "hip", "6.2.41134", raising=False)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda dev: props)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda dev: (9, 0))
    dev = torch.device("cuda", 0)
    assert gemm_main.device_arch(dev) == "gfx90a:sramecc+:xnack-"
    assert "gfx90a has no tf32" in gemm_main.unsupported("tf32", dev)
    assert "gfx90a has no fp8" in gemm_main.unsupported("fp8_e4m3", dev)
    assert gemm_main.unsupported("fp16", dev) is None


def test_tf32_on_rocm_sets_hipblaslt_switch_and_checks_it_took(monkeypatch):
    import os


    monkeypatch.setattr(torch.version, "hip", "6.3.42131", raising=False)
    monkeypatch.delenv(gemm_main.TF32_ENV, raising=False)
    dev = torch.device("cuda", 0)

    class Matmul:
        def __init__(self, honours: bool):
            self.honours, self._on = honours, False

        @property
        def allow_tf32(self):
            return self._on

        @allow_tf32.setter
        def allow_tf32(self, on):
            # ROCm's torch: the flag is ignored unless HIPBLASLT_ALLOW_TF32=1 is set
            self._on = on and self.honours and os.environ.get(gemm_main.TF32_ENV) == "1"

    monkeypatch.setattr(torch.backends.cuda, "matmul", Matmul(honours=True))
    assert gemm_main._set_tf32(dev, True) is None and os.environ[gemm_main.TF32_ENV] == "1"
    assert gemm_main._set_tf32(dev, False) is None and gemm_main.TF32_ENV not in os.environ
    monkeypatch.setattr(torch.backends.cuda, "matmul", Matmul(honours=False))   # an older torch
    assert "did not enable tf32" in gemm_main._set_tf32(dev, True)
    gemm_main._set_tf32(dev, False)
    monkeypatch.setenv(gemm_main.TF32_ENV, "0")                                   # the user's own value
    monkeypatch.setattr(torch.backends.cuda, "matmul", Matmul(honours=True))
    assert gemm_main._set_tf32(dev, True) is None and os.environ[gemm_main.TF32_ENV] == "1"
    gemm_main._set_tf32(dev, False)
    assert os.environ[gemm_main.TF32_ENV] == "0"


def test_suite_has_small_cpu_steps_and_full_gpu_steps():
    entries = {e.target: e for e in _entries()}
    assert set(entries) == set(NODE_TARGETS)
    stream = entries[NODE_TARGETS[0]]
    assert all(stream_spec.footprint(n, 8) <= 256 << 20 for n in stream.cpu.sizes)
    assert stream.gpu.device_type == "cuda" and stream.gpu.devices == ()
    gemm = entries[NODE_TARGETS[1]]
    assert gemm_spec.flops(gemm.cpu.m, gemm.cpu.n, gemm.cpu.k) <= 2 * 1024**3
    assert not gemm.cpu.strict_size and not stream.cpu.strict_size
