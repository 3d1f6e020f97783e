"""Never measure the wrong device: torch's build against the GPUs the node has (the CUDA wheel on
an AMD node), the preflight check that says so, and one rank per GPU under a launcher."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from clusterbench.cli import main
from clusterbench.envinfo import torchcheck
from clusterbench.envinfo.inventory import collect
from clusterbench.errors import UsageError
from clusterbench.preflight import checks as c
from clusterbench.ranks import context as ctxmod
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.env import RankEnv

DATA = Path(__file__).parent / "data" / "sysfs"
H100, MI300X, BROKEN = DATA / "h100-node", DATA / "mi300x-node", DATA / "broken-node"

CUDA = torchcheck.TorchBuild("2.6.0+cu126", cuda="12.6")
ROCM = torchcheck.TorchBuild("2.6.0+rocm6.2.4", hip="6.2.41134-65d174c3e")
CPU = torchcheck.TorchBuild("2.6.0+cpu")
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


@pytest.fixture
def no_gpu_torch(monkeypatch):
    """A torch that sees no GPU, built for CUDA (PyPI's default wheel), on an MI300X node."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(torch.version, "cuda", "12.6")
    monkeypatch.setattr(torch.version, "hip", None)
    real = torchcheck.evidence
    monkeypatch.setattr(torchcheck, "evidence", lambda root="/", use_libraries=True:
                        real(MI300X, use_libraries=False))
    monkeypatch.setattr(torchcheck, "rocm_version", lambda root="/": "6.2")
    for var in torchcheck.VISIBILITY_VARS:
        monkeypatch.delenv(var, raising=False)


def test_auto_refuses_cpu_fallback_on_amd_node(no_gpu_torch):
    with pytest.raises(UsageError) as e:
        ctxmod.resolve_device_type("auto")
    text = str(e.value)
    assert "2 AMD GPU(s) (/sys/class/drm)" in text and "a CUDA 12.6 build" in text
    assert "rocm6.2" in text and "--device cpu" in text
    with pytest.raises(UsageError, match="ROCm build"):
        ctxmod.resolve_device_type("cuda")
    assert ctxmod.resolve_device_type("cpu") == "cpu"


def test_auto_is_cpu_without_gpu_evidence(monkeypatch, no_gpu_torch):
    monkeypatch.setattr(torchcheck, "evidence", lambda root="/", use_libraries=True: [])
    assert ctxmod.resolve_device_type("auto") == "cpu"
    with pytest.raises(UsageError, match="no CUDA or ROCm GPU"):
        ctxmod.resolve_device_type("cuda")


def test_cli_exits_2_with_one_line(no_gpu_torch, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["coll", "all_reduce", "-b", "8", "-e", "8", "--np", "2", "--db", str(tmp_path / "r.db")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("clusterbench: error: this node has 2 AMD GPU(s)")
    with pytest.raises(SystemExit) as e:
        main(["stream", "-s", "1K", "-n", "2", "--db", str(tmp_path / "r.db")])
    assert e.value.code == 2


# -- preflight ------------------------------------------------------------------------------------

def _inv(root: Path, build: torchcheck.TorchBuild | None) -> dict:
    inv = collect(root, use_libraries=False)
    inv["torch"] = build.to_dict() if build else None
    return inv


def test_preflight_torch_gpus_fails_with_the_evidence():
    res = c.torch_gpus(_inv(MI300X, CUDA), environ={})
    assert res.status == c.FAIL and "ROCm build" in res.summary and "rocm6.2" in res.summary
    assert res.evidence[0] == CUDA.describe() and "2 AMD GPU(s) (/sys/class/drm)" in res.evidence
    res = c.torch_gpus(_inv(H100, ROCM), environ={})
    assert res.status == c.FAIL and "3 NVIDIA GPU(s) (PCI)" in res.summary


def test_preflight_torch_gpus_ok_na_warning():
    good = torchcheck.TorchBuild("2.6.0+rocm6.2", hip="6.2", devices=2)
    assert c.torch_gpus(_inv(MI300X, good), environ={}).status == c.OK
    partial = torchcheck.TorchBuild("2.6.0+cu126", cuda="12.6", devices=1)
    assert c.torch_gpus(_inv(H100, partial), environ={}).status == c.WARNING
    assert c.torch_gpus(_inv(H100, partial), environ={"CUDA_VISIBLE_DEVICES": "0"}).status == c.OK
    assert c.torch_gpus(_inv(H100, CUDA), environ={"CUDA_VISIBLE_DEVICES": ""}).status == c.OK
    empty = {"gpus": [], "pcie": [], "torch": CPU.to_dict()}
    assert c.torch_gpus(empty, environ={}).status == c.NA
    assert c.torch_gpus(_inv(H100, None), environ={}).status == c.NA


def test_preflight_cli_fails_on_wrong_build(monkeypatch, capsys):
    from clusterbench.envinfo import inventory

    real = inventory.collect
    monkeypatch.setattr(inventory, "collect", lambda root="/", use_libraries=None, environ=None:
                        {**real(MI300X, use_libraries=False), "torch": CUDA.to_dict()})
    for var in torchcheck.VISIBILITY_VARS:
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(SystemExit) as e:
        main(["preflight", "--json", "--kernel-log", str(DATA / "README.md")])
    assert e.value.code == 1
    out = capsys.readouterr().out
    assert '"torch_gpus"' in out and "ROCm build" in out


# -- one rank per GPU -------------------------------------------------------------------------------

def test_gpu_index_one_rank_per_gpu():
    assert [ctxmod.gpu_index(r, 8, 8, "h") for r in range(8)] == list(range(8))
    assert ctxmod.gpu_index(3, 8, 1, "h") == 0       # each rank bound to its own GPU by the launcher
    assert ctxmod.gpu_index(1, 2, 8, "h") == 1
    with pytest.raises(UsageError, match="16 ranks on h but 8 GPU"):
        ctxmod.gpu_index(3, 16, 8, "h")               # every rank refuses, not only ranks 8..15


def test_distinct_gpus_per_host():
    ctxmod.check_distinct_gpus([("a", "GPU-1"), ("a", "GPU-2"), ("b", "GPU-1")])
    with pytest.raises(UsageError, match="ranks 0 and 2 on a use the same GPU"):
        ctxmod.check_distinct_gpus([("a", "GPU-1"), ("a", "GPU-2"), ("a", "GPU-1")])


def test_device_identity():
    assert ctxmod.device_identity(types.SimpleNamespace(uuid="GPU-abc"), 0) == "GPU-abc"
    props = types.SimpleNamespace(uuid="", pci_domain_id=0, pci_bus_id=0x3b, pci_device_id=0)
    assert ctxmod.device_identity(props, 0) == "0000:3b:00"
    assert ctxmod.device_identity(types.SimpleNamespace(), 2) == "index 2"


def test_setup_binds_the_process_group_to_the_rank_gpu(monkeypatch):
    """Under a launcher with 4 GPUs: local rank 2 uses cuda:2 and passes device_id to
    init_process_group; two ranks that report the same GPU are refused."""
    import torch
    import torch.distributed as dist

    calls = {}
    monkeypatch.setattr(ctxmod, "resolve_device_type", lambda option: "cuda")
    monkeypatch.setattr(ctxmod, "resolve_backend", lambda option, device_type: "nccl")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setattr(torch.cuda, "set_device", lambda i: calls.setdefault("set_device", i))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: types.SimpleNamespace(uuid=f"GPU-{i}"))
    monkeypatch.setattr(ctxmod, "_job_store", lambda env, timeout: None)
    monkeypatch.setattr(dist, "init_process_group", lambda **kw: calls.setdefault("init", kw))

    def gather(out, obj, peers=("GPU-0", "GPU-1", None, "GPU-3")):
        for i, p in enumerate(peers):
            out[i] = ("n1", "NVIDIA H100 80GB HBM3", p or obj[2])

    monkeypatch.setattr(dist, "all_gather_object", gather)
    env = RankEnv(rank=2, world_size=4, local_rank=2, local_world_size=4, master_addr="x",
                  master_port=1, launcher="torchrun", host="n1")
    ctx = ctxmod.setup(env, RankOptions(device="cuda"))
    assert calls["set_device"] == 2 and ctx.device == torch.device("cuda", 2)
    assert calls["init"]["device_id"] == torch.device("cuda", 2) and calls["init"]["backend"] == "nccl"
    monkeypatch.setattr(dist, "all_gather_object",
                        lambda out, obj: gather(out, obj, peers=("GPU-0", "GPU-2", None, "GPU-3")))
    with pytest.raises(UsageError, match="ranks 1 and 2 on n1 use the same GPU"):
        ctxmod.setup(env, RankOptions(device="cuda"))
