"""Tests of clusterbench.envinfo.torchcheck."""

from __future__ import annotations

import pytest
from host_doubles import BROKEN, CPU, CUDA, H100, MI300X, ROCM

from clusterbench.envinfo import torchcheck

NONE = torchcheck.TorchBuild(None)


AMD8 = [torchcheck.GpuEvidence("AMD", 8, "AMD SMI")]


NV8 = [torchcheck.GpuEvidence("NVIDIA", 8, "NVML")]


def test_evidence_from_fake_nodes():
    amd = torchcheck.evidence(MI300X, use_libraries=False)
    assert amd == [torchcheck.GpuEvidence("AMD", 2, "/sys/class/drm")]
    assert torchcheck.evidence(H100, use_libraries=False) == [torchcheck.GpuEvidence("NVIDIA", 3, "PCI")]
    assert torchcheck.evidence(BROKEN, use_libraries=False) == [torchcheck.GpuEvidence("NVIDIA", 1, "PCI")]
    assert torchcheck.rocm_version(MI300X) == "6.2" and torchcheck.rocm_version(H100) is None


def test_evidence_ignores_apu_and_radeon_display_class():
    pci = [{"vendor_id": "0x1002", "class": "0x030000"}, {"vendor_id": "0x1002", "class": "0x038000"},
           {"vendor_id": "0x8086", "class": "0x030000"}, {"vendor_id": "0x10de", "class": "0x030000"}]
    assert torchcheck._pci_gpus(pci) == {"AMD": 1, "NVIDIA": 1}


@pytest.mark.parametrize("build,found,needs", [
    (CUDA, AMD8, "ROCm build of torch: pip install torch --index-url https://download.pytorch.org/whl/rocm6.2"),
    (CPU, AMD8, "ROCm build"),
    (ROCM, NV8, "CUDA build of torch: pip install torch"),
    (CPU, NV8, "CUDA build"),
    (NONE, AMD8, "torch is not installed"),
])
def test_wrong_build_names_both_builds(build, found, needs):
    text = torchcheck.problem(build, found, rocm="6.2", environ={})
    assert text is not None and needs in text and "\n" not in text
    assert found[0].describe() in text
    if build.version:
        assert build.describe() in text


def test_describe_builds():
    assert CUDA.describe() == "torch 2.6.0+cu126 (a CUDA 12.6 build)"
    assert ROCM.describe() == "torch 2.6.0+rocm6.2.4 (a ROCm 6.2 build)"
    assert CPU.describe() == "torch 2.6.0+cpu (a CPU-only build)"


def test_right_build_that_sees_nothing_gives_torch_reason():
    broken = torchcheck.TorchBuild("2.6.0+cu126", cuda="12.6", reason="The NVIDIA driver on your system is too old")
    text = torchcheck.problem(broken, NV8, environ={})
    assert "sees none" in text and "too old" in text


def test_no_problem_when_fine_hidden_or_no_gpu():
    seeing = torchcheck.TorchBuild("2.6.0+rocm6.2", hip="6.2", devices=8)
    assert torchcheck.problem(seeing, AMD8, environ={}) is None
    assert torchcheck.problem(CUDA, [], environ={}) is None
    assert torchcheck.problem(CUDA, AMD8, environ={"HIP_VISIBLE_DEVICES": ""}) is None
    assert torchcheck.problem(CUDA, NV8, environ={"CUDA_VISIBLE_DEVICES": "-1"}) is None
    assert torchcheck.problem(CUDA, NV8, environ={"CUDA_VISIBLE_DEVICES": "0,1"}) is not None


def test_torch_build_of_this_process():
    build = torchcheck.torch_build()
    assert build.version and build.kind in ("cuda", "rocm", "cpu")
    assert torchcheck.TorchBuild.from_dict(build.to_dict()) == build


def test_a_torch_that_fails_to_load_is_not_called_missing():
    from clusterbench.envinfo.torchcheck import torch_unusable

    loading = ImportError("libtorch_cpu.so: failed to map segment from shared object")
    assert torch_unusable(loading).startswith("PyTorch is installed but failed to load (ImportError: libtorch_cpu.so")
    assert torch_unusable(OSError("libcudart.so.12: cannot open shared object file")).startswith(
        "PyTorch is installed but failed to load (OSError:")
    # a dependency of torch that is missing is a torch that fails to load, not a missing torch
    assert "failed to load" in torch_unusable(ModuleNotFoundError("No module named 'sympy'", name="sympy"))
    assert len(torch_unusable(ImportError("x" * 5000))) < 500


def test_a_missing_torch_is_called_missing(monkeypatch):
    import importlib.util

    from clusterbench.envinfo.torchcheck import TORCH_MISSING, torch_unusable

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert torch_unusable(ModuleNotFoundError("No module named 'torch'", name="torch")) == TORCH_MISSING
