"""What a benchmark sees on each rank: its rank, device, process group, and a way to report.

Vendor neutrality comes from PyTorch: ``torch.cuda`` is CUDA on NVIDIA and HIP on AMD, and the
``nccl`` backend is RCCL on ROCm builds. Only device selection and synchronisation differ by
device type, and they live here.
"""

from __future__ import annotations

import os
import platform
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from clusterbench import __version__
from clusterbench.dist.rankenv import RankEnv
from clusterbench.errors import UsageError

ENV_PREFIXES = ("NCCL_", "RCCL_", "UCX_", "HIP_", "HSA_", "GLOO_", "TORCH_NCCL_", "FI_")
ENV_KEYS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "OMP_NUM_THREADS")


@dataclass(frozen=True)
class DistOptions:
    device: str = "auto"   # auto | cuda | cpu
    backend: str = "auto"  # auto | nccl | gloo
    timeout: float = 300.0  # seconds without progress before the run is ended
    telemetry_interval: float = 1.0  # seconds between telemetry samples per host; 0 disables


def resolve_device_type(option: str) -> str:
    import torch

    if option not in ("auto", "cuda", "cpu"):
        raise UsageError(f"unknown device {option!r}: expected auto, cuda or cpu")
    has_gpu = torch.cuda.is_available() and torch.cuda.device_count() > 0
    if option == "cuda" and not has_gpu:
        raise UsageError("--device cuda: no CUDA or ROCm GPU is visible to PyTorch")
    if option == "auto":
        return "cuda" if has_gpu else "cpu"
    return option


def resolve_backend(option: str, device_type: str) -> str:
    import torch.distributed as dist

    if option not in ("auto", "nccl", "gloo"):
        raise UsageError(f"unknown backend {option!r}: expected auto, nccl or gloo")
    backend = ("nccl" if device_type == "cuda" else "gloo") if option == "auto" else option
    if backend == "nccl" and device_type != "cuda":
        raise UsageError("the nccl backend needs --device cuda")
    if backend == "nccl" and not dist.is_nccl_available():
        raise UsageError("this PyTorch build has no NCCL/RCCL backend")
    return backend


def local_device_count(device_type: str) -> int:
    import torch

    return torch.cuda.device_count() if device_type == "cuda" else 1


def comm_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The communication-relevant environment variables in force (NCCL_*, RCCL_*, UCX_*, ...)."""
    environ = dict(os.environ) if environ is None else environ
    return {k: v for k, v in sorted(environ.items()) if k.startswith(ENV_PREFIXES) or k in ENV_KEYS}


def software_versions() -> dict[str, str]:
    import torch

    v = {"clusterbench": __version__, "torch": torch.__version__, "python": platform.python_version()}
    if torch.version.cuda:
        v["cuda"] = str(torch.version.cuda)
    if getattr(torch.version, "hip", None):
        v["rocm"] = str(torch.version.hip)
    try:
        if torch.cuda.is_available():
            nccl = torch.cuda.nccl.version()
            v["rccl" if getattr(torch.version, "hip", None) else "nccl"] = ".".join(map(str, nccl)) \
                if isinstance(nccl, tuple) else str(nccl)
    except Exception:  # noqa: BLE001 - a missing NCCL is reported by its absence
        pass
    return v


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


@dataclass
class RankContext:
    env: RankEnv
    device: Any  # torch.device
    backend: str
    options: DistOptions
    emit_fn: Callable[[str, Any], None] | None = None
    progress_fn: Callable[[int], None] | None = None
    hosts: list[str] = field(default_factory=list)
    device_names: list[str] = field(default_factory=list)
    _steps: int = 0

    @property
    def rank(self) -> int:
        return self.env.rank

    @property
    def world_size(self) -> int:
        return self.env.world_size

    @property
    def is_root(self) -> bool:
        return self.env.rank == 0

    @property
    def device_type(self) -> str:
        return self.device.type

    def emit(self, kind: str, data: Any) -> None:
        """Send an event to the run's sink. Only rank 0's events are kept."""
        if self.is_root and self.emit_fn is not None:
            self.emit_fn(kind, data)

    def progress(self) -> None:
        """Heartbeat: call after each step so a hung or dead rank is noticed within --timeout."""
        self._steps += 1
        if self.progress_fn is not None:
            self.progress_fn(self._steps)

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            import torch

            torch.cuda.synchronize(self.device)

    def barrier(self) -> None:
        import torch.distributed as dist

        if self.device.type == "cuda":
            dist.barrier(device_ids=[self.device.index])
        else:
            dist.barrier()

    def now(self) -> float:
        """Host wall clock after the device has finished queued work."""
        self.synchronize()
        return time.perf_counter()


def setup(env: RankEnv, options: DistOptions) -> RankContext:
    """Pick this rank's device and join the process group."""
    import torch
    import torch.distributed as dist

    device_type = resolve_device_type(options.device)
    backend = resolve_backend(options.backend, device_type)
    if device_type == "cuda":
        index = env.local_rank % torch.cuda.device_count()
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
        name = torch.cuda.get_device_name(index)
    else:
        device = torch.device("cpu")
        name = cpu_model()
    addr = env.master_addr
    if ":" in addr and not addr.startswith("["):
        addr = f"[{addr}]"
    dist.init_process_group(
        backend=backend,
        init_method=f"tcp://{addr}:{env.master_port}",
        rank=env.rank,
        world_size=env.world_size,
        timeout=timedelta(seconds=max(options.timeout, 1.0)),
    )
    ctx = RankContext(env=env, device=device, backend=backend, options=options)
    gathered: list[Any] = [None] * env.world_size
    dist.all_gather_object(gathered, (env.host or socket.gethostname(), name))
    ctx.hosts = [g[0] for g in gathered]
    ctx.device_names = [g[1] for g in gathered]
    return ctx


def teardown() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
