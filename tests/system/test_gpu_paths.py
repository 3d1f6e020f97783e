"""GPU paths that had no GPU test: inventory and preflight through NVML, telemetry sampled during a
run, every GEMM dtype on a GPU that has them, host<->device copies both ways from pinned and
pageable memory, and the collectives with NCCL on one rank through the CLI. Each skips without
a GPU; on one, each fails if the path breaks."""

from __future__ import annotations

import json

import pytest
import torch
from work_helpers import cli

from clusterbench.families.collectives.spec import OPS
from clusterbench.families.gemm import spec as gemm_spec
from clusterbench.store import Store

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU")]


def _records(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _nvidia() -> bool:
    return not getattr(torch.version, "hip", None)


def test_env_lists_every_gpu_with_its_memory(capsys):
    code, out, err = cli(capsys, "env", "--json")
    assert code == 0, err
    (inv,) = [r for r in _records(out) if r.get("kind") == "inventory"]
    assert len(inv["gpus"]) == torch.cuda.device_count(), inv["gpus"]
    assert all(g["name"] and g["memory_bytes"] > 0 for g in inv["gpus"])
    assert inv["torch"]["devices"] == torch.cuda.device_count()
    if _nvidia():
        pytest.importorskip("pynvml", reason="nvidia-ml-py not installed")
        assert inv["gpu_source"] == "nvml", inv.get("gpu_library_errors")
        # NVML's name and torch's agree on the model (torch prints it without "NVIDIA " sometimes)
        assert torch.cuda.get_device_name(0).split()[-1] in inv["gpus"][0]["name"]


def test_preflight_passes_the_gpu_checks(capsys):
    code, out, err = cli(capsys, "preflight", "--json")
    checks = {r["check"]: r for r in _records(out) if r.get("kind") == "check"}
    assert checks["torch_gpus"]["status"] == "ok", checks["torch_gpus"]
    assert checks["gpu_count"]["status"] == "ok", checks["gpu_count"]
    failed = {k: c["summary"] for k, c in checks.items() if c["status"] == "fail"}
    assert code == (1 if failed else 0), (code, failed, err)
    assert not {k for k in failed if k.startswith(("gpu_", "torch_"))}, failed


def test_a_gpu_run_stores_gpu_telemetry(capsys, db):
    code, out, err = cli(capsys, "stream", "-s", "64M", "-n", "40", "--devices", "0", "--telemetry-interval", "0.1",
                         "--json", "--db", db)
    assert code == 0, err
    with Store.open(db) as store:
        (run,) = store.list_runs()
        samples = store.telemetry(run.id)
    metrics = {s.metric for s in samples if s.device not in (None, "", "host")}
    if _nvidia():
        pytest.importorskip("pynvml", reason="nvidia-ml-py not installed")
    assert {"gpu_power", "gpu_temperature", "gpu_sm_clock"} <= metrics, sorted(metrics)
    power = [s.value for s in samples if s.metric == "gpu_power"]
    assert power and all(0 < p < 2000 for p in power), power


def test_every_gemm_dtype_the_gpu_has_runs_and_checks(capsys, db):
    code, out, err = cli(capsys, "gemm", "-m", "512", "-n", "512", "-k", "512", "--dtype", "all", "--devices", "0",
                         "--json", "--db", db)
    assert code == 0, err
    rows = [r for r in _records(out) if r.get("kind") == "measurement" and r["metric"] == "tflops"]
    ran = {r["params"]["dtype"] for r in rows}
    cc = torch.cuda.get_device_capability(0)
    hip = bool(getattr(torch.version, "hip", None))
    arch = getattr(torch.cuda.get_device_properties(0), "gcnArchName", None) if hip else None
    expected = {d for d in gemm_spec.DTYPES
                if gemm_spec.unsupported_on(d, hip, arch, cc, torch.__version__) is None}
    assert expected <= ran, (sorted(expected - ran), err)
    assert all(r["value"] > 0 for r in rows)


def test_host_device_copies_both_ways_pinned_and_pageable(capsys, db):
    code, out, err = cli(capsys, "transfer", "--matrix", "h2d,d2h", "--bytes", "64M", "--iterations", "3",
                         "--json", "--db", db)
    assert code == 0, err
    rows = [r for r in _records(out) if r.get("kind") == "measurement" and r["metric"] == "bandwidth"]
    for test in ("h2d", "d2h"):
        mem = {r["params"]["host_memory"] for r in rows if r["params"]["test"] == test}
        assert mem == {"pinned", "pageable"}, (test, mem)
    # a PCIe/C2C link moves far more than 1 GB/s from pinned memory; a CPU fallback would not
    pinned = [r["value"] for r in rows if r["params"]["host_memory"] == "pinned" and "*" not in
              (r["params"]["src"], r["params"]["dst"])]
    assert pinned and min(pinned) > 1.0, pinned


def test_every_collective_with_nccl_on_one_rank(capsys, db):
    code, out, err = cli(capsys, "coll", "all", "-b", "8", "-e", "4M", "-f", "8", "-n", "5", "-w", "1", "--np", "1",
                         "--device", "cuda", "--backend", "nccl", "--json", "--db", db)
    assert code == 0, err
    recs = _records(out)
    run = next(r for r in recs if r.get("kind") == "run")
    assert run["status"] == "complete" and run["ranks"] == 1
    rows = [r for r in recs if r.get("kind") == "measurement"]
    ops = {r["benchmark"] for r in rows if r["metric"] == "time_us"}
    assert set(OPS) - {"sendrecv"} <= ops, ops
    # sendrecv to itself: NCCL runs it; where a backend cannot, the skip says why
    assert "sendrecv" in ops or "sendrecv" in out + err, (out, err)
    assert all(r["value"] == 0 for r in rows if r["metric"] == "wrong")
