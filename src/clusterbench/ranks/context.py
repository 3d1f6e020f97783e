"""What a benchmark sees on each rank: its rank, device, process group, and a way to report.

Vendor neutrality comes from PyTorch: ``torch.cuda`` is CUDA on NVIDIA and HIP on AMD, and the
``nccl`` backend is RCCL on ROCm builds. Only device selection and synchronisation differ by
device type, and they live here.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from clusterbench.envinfo.software import cpu_model
from clusterbench.errors import UsageError
from clusterbench.ranks.env import RankEnv
from clusterbench.records import (
    Event,
    Failure,
    Measurement,
    Meta,
    Note,
    Rows,
    Telemetry,
    TelemetrySample,
)


@dataclass(frozen=True)
class RankOptions:
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


@dataclass
class RankContext:
    env: RankEnv
    device: Any  # torch.device
    backend: str
    options: RankOptions
    emit_fn: Callable[[Event], None] | None = None
    progress_fn: Callable[[int], None] | None = None
    hosts: list[str] = field(default_factory=list)
    device_names: list[str] = field(default_factory=list)
    _steps: int = 0
    _benchmark: str | None = None  # of the last rows sent: where a note without one belongs

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

    def emit(self, event: Event) -> None:
        """Send an event to the run's sink. Only rank 0's events are kept."""
        if self.is_root and self.emit_fn is not None:
            self.emit_fn(event)

    def record(self, measurements: Iterable[Measurement]) -> None:
        """Finished rows: sent at once, so they survive a later crash of any rank."""
        rows = tuple(measurements)
        if rows:
            self._benchmark = rows[-1].benchmark
        self.emit(Rows(rows))

    def note(self, text: str, benchmark: str | None = None) -> None:
        """A line for the reader (a skipped row and why), printed inside ``benchmark``'s table
        after its header; by default the table of the rows sent last."""
        self.emit(Note(text, benchmark or self._benchmark))

    def fail(self, reason: str) -> None:
        """The measurement is wrong (a correctness check failed): the run ends ``failed``."""
        self.emit(Failure(reason))

    def meta(self, data: dict[str, Any]) -> None:
        """Metadata merged into the stored run (table headers, device names, inventories)."""
        self.emit(Meta(dict(data)))

    def telemetry(self, samples: Iterable[TelemetrySample]) -> None:
        self.emit(Telemetry(tuple(samples)))

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


# One rendezvous store per process, kept across the process groups it joins (``--repeat`` under a
# launcher runs several in one process), each group under a key prefix of its own: a rank that
# starts the next group early must not read the addresses a peer published for the previous one.
_stores: dict[tuple[str, int], Any] = {}
_groups = 0


def _job_store(env: RankEnv, timeout: timedelta) -> Any:
    import torch.distributed as dist

    global _groups
    key = (env.master_addr, env.master_port)
    if key not in _stores:
        # torchrun's agent hosts the store itself and tells its workers to connect as clients
        hosted = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        _stores[key] = dist.TCPStore(env.master_addr, env.master_port, env.world_size,
                                     is_master=env.rank == 0 and not hosted, timeout=timeout,
                                     wait_for_workers=False)
    _groups += 1
    return dist.PrefixStore(f"clusterbench/{_groups}", _stores[key])


def setup(env: RankEnv, options: RankOptions) -> RankContext:
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
    timeout = timedelta(seconds=max(options.timeout, 1.0))
    dist.init_process_group(backend=backend, store=_job_store(env, timeout), rank=env.rank,
                            world_size=env.world_size, timeout=timeout)
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
