"""What this process runs with: software versions, the communication environment variables in
force, the CPU's model name and the cores it may use. Read by every rank for the run header and
by the inventory."""

from __future__ import annotations

import os
import platform

from clusterbench import __version__
from clusterbench.envinfo import sysfs

ENV_PREFIXES = ("NCCL_", "RCCL_", "UCX_", "HIP_", "HSA_", "GLOO_", "TORCH_NCCL_", "FI_")
ENV_KEYS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "OMP_NUM_THREADS")


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
    # platform.machine(), not processor(): that one runs `uname -p`, and says "unknown" on Arm
    return sysfs.cpu_model_name("/") or platform.machine() or "cpu"


def usable_cores() -> int:
    """The cores this process may run on (its affinity: a container's or a job's share), else
    the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # not Linux
        return os.cpu_count() or 1
