"""Which device a node-benchmark rank works on, and how it times device work.

Node benchmarks run one rank per selected device (``--devices``), so every device works at the
same time; the process group only carries results to rank 0. CPU is one device that uses every
core this process may run on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from clusterbench.envinfo import sysfs
from clusterbench.envinfo.software import usable_cores
from clusterbench.errors import UsageError
from clusterbench.ranks.context import RankContext, local_device_count, resolve_device_type

# An index longer than this is no device any host has; int() would refuse past 4,300 digits.
_MAX_INDEX_DIGITS = 9


def _shown(text: str) -> str:
    # a refused list may be a megabyte long: the error line quotes its start
    return repr(text if len(text) <= 60 else text[:60] + "...")


def device_indices(text: str | None) -> list[int] | None:
    """The form of ``--devices``, judged without any device: ``all`` (or none given) -> None,
    ``0,2`` -> ``[0, 2]``. Whether the indices exist is the host's to judge (``parse_devices``),
    so a command line checked before it runs elsewhere refuses only what every host would."""
    if text is None or text.strip().lower() in ("", "all"):
        return None
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        # ASCII digits only: str.isdigit() also takes '²' (which int() refuses) and other scripts' digits
        if not (part.isascii() and part.isdigit()):
            raise UsageError(f"invalid --devices {_shown(text)}: expected 'all' or indices like 0,1")
        if len(part.lstrip("0")) > _MAX_INDEX_DIGITS:
            raise UsageError(f"invalid --devices {_shown(text)}: index {_shown(part)} is larger than "
                             "any host's device count")
        idx = int(part)
        if idx in out:   # one rank per device: a device named twice is a typo, not two ranks
            raise UsageError(f"invalid --devices {_shown(text)}: device {idx} is listed twice")
        out.append(idx)
    return out


def parse_devices(text: str | None, device_type: str, count: int) -> list[int]:
    """``all`` / ``None`` -> every device; ``0,2`` -> those indices (checked against ``count``)."""
    indices = device_indices(text)
    if indices is None:
        return list(range(count))
    for idx in indices:
        if idx >= count:
            what = "GPU(s)" if device_type == "cuda" else "CPU device (all cores are one device)"
            raise UsageError(f"--devices {idx}: out of range, this host has {count} {what}")
    return indices


def check_devices(device: str, devices: str | None) -> None:
    """``--device`` and ``--devices`` checked as far as no host's hardware is needed: the list's
    form, and on ``--device cpu`` its range too (the CPU is one device on every host)."""
    if device == "cpu":
        parse_devices(devices, "cpu", 1)
    else:
        device_indices(devices)


def resolve(device: str, devices: str | None) -> tuple[str, list[int]]:
    """``--device`` and ``--devices`` of a node benchmark: the device type and the indices to use."""
    device_type = resolve_device_type(device)
    return device_type, parse_devices(devices, device_type, local_device_count(device_type))


def rank_device(device_type: str, indices: list[int], rank: int, own: Any = None) -> Any:
    """This rank's device: ``indices[rank]``, or the rank's own device when no list is given
    (inside ``clusterbench run``, where the job already holds one rank per device)."""
    import torch

    if device_type == "cuda":
        dev = torch.device("cuda", indices[rank]) if indices else own
        torch.cuda.set_device(dev)
        return dev
    return torch.device("cpu")


def measures(ctx: RankContext, dev: Any) -> bool:
    """Whether this rank measures: every GPU rank; on CPU only rank 0, because the host is one
    device whose cores rank 0 already uses (a job may hold more CPU ranks, e.g. the suite's)."""
    return dev.type == "cuda" or ctx.rank == 0


def cpu_threads() -> int:
    """Use every core the process may run on (affinity), unless OMP_NUM_THREADS says otherwise."""
    import torch

    if os.environ.get("OMP_NUM_THREADS", "").isdigit():
        n = int(os.environ["OMP_NUM_THREADS"])
    else:
        n = usable_cores()
    torch.set_num_threads(max(1, n))
    return torch.get_num_threads()


def device_label(dev: Any) -> str:
    return f"cuda:{dev.index}" if dev.type == "cuda" else "cpu"


def device_name(dev: Any) -> str:
    if dev.type == "cuda":
        import torch

        return torch.cuda.get_device_name(dev)
    from clusterbench.envinfo.software import cpu_model

    return cpu_model()


def free_memory(dev: Any) -> int:
    """Bytes that can still be allocated on ``dev`` (host: available RAM)."""
    if dev.type == "cuda":
        import torch

        return int(torch.cuda.mem_get_info(dev)[0])
    import psutil

    return int(psutil.virtual_memory().available)


def last_level_cache(dev: Any) -> int | None:
    """Bytes of the last-level cache in front of ``dev``'s memory: on a GPU its L2 as the driver
    reports it (torch's device properties; AMD's Infinity Cache is not among them), on the CPU the
    highest-level cache of the cores this process may run on (sysfs), summed over its instances.
    None where neither says."""
    if dev.type == "cuda":
        import torch

        size = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", None)
        return int(size) if isinstance(size, int) and size > 0 else None
    try:
        cpus: set[int] | None = set(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # not Linux
        cpus = None
    return sysfs.last_level_cache("/", cpus)


def release_cache(dev: Any) -> None:
    """Give cached blocks back, so the next size's free-memory check sees them as free."""
    if dev.type == "cuda":
        import torch

        torch.cuda.empty_cache()


# GPU clock cycles of the spin queued ahead of a timed call (about 0.1-2 ms, by the clock the
# device counts): long enough for the host to queue the start event, the call's kernels and the
# end event behind it, so the events time the kernels, not torch's launch cost.
LAUNCH_COVER_CYCLES = 200_000


def timer(dev: Any) -> Callable[[Callable[[], Any]], float]:
    """Seconds one call takes on ``dev``: CUDA/HIP events on a GPU, a host clock on CPU.

    On a GPU the device first spins (``torch.cuda._sleep``) while the host queues the start
    event, the call and the end event; the events then bracket only device work, so a small
    kernel is not timed at the speed of Python's dispatch."""
    if dev.type == "cuda":
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        spin = getattr(torch.cuda, "_sleep", None)

        def gpu_time(fn: Callable[[], Any]) -> float:
            if spin is not None:
                spin(LAUNCH_COVER_CYCLES)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3

        return gpu_time

    def cpu_time(fn: Callable[[], Any]) -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    return cpu_time


def gather_to_root(ctx: RankContext, obj: Any) -> list[Any] | None:
    """Every rank's ``obj`` on rank 0 (in rank order); None on the other ranks."""
    import torch.distributed as dist

    if ctx.world_size == 1:
        return [obj]
    out: list[Any] | None = [None] * ctx.world_size if ctx.is_root else None
    if ctx.device.type == "cuda":
        import torch

        # The process group belongs to the rank's own device, which may differ from the one
        # this rank benchmarks (--devices 2,3).
        with torch.cuda.device(ctx.device):
            dist.gather_object(obj, out, dst=0)
    else:
        dist.gather_object(obj, out, dst=0)
    return out


def all_gather(ctx: RankContext, obj: Any) -> list[Any]:
    """Every rank's ``obj`` on every rank, in rank order."""
    import torch.distributed as dist

    if ctx.world_size == 1:
        return [obj]
    out: list[Any] = [None] * ctx.world_size
    if ctx.device.type == "cuda":
        import torch

        with torch.cuda.device(ctx.device):   # as gather_to_root: the group's own device
            dist.all_gather_object(out, obj)
    else:
        dist.all_gather_object(out, obj)
    return out


def join(ctx: RankContext, device_type: str, indices: list[int], note: str = "",
         benchmark: str | None = None, **meta: Any) -> tuple[Any, str, bool]:
    """This rank's device, its label and whether it measures; the CPU thread count is noted,
    and rank 0 records every device's name (plus ``meta``) in the run."""
    dev = rank_device(device_type, indices, ctx.rank, ctx.device)
    label = device_label(dev)
    active = measures(ctx, dev)
    if dev.type == "cpu" and active:
        threads = cpu_threads()
        ctx.meta({"threads": threads})
        ctx.note(f"CPU: {threads} thread(s){note}", benchmark)
    names = gather_to_root(ctx, (label, device_name(dev)))
    if ctx.is_root and names:
        ctx.meta({"device_names": dict(names), **meta})
    return dev, label, active
