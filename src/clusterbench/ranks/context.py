"""What a benchmark sees on each rank: its rank, device, process group, and a way to report.

Vendor neutrality comes from PyTorch: ``torch.cuda`` is CUDA on NVIDIA and HIP on AMD, and the
``nccl`` backend is RCCL on ROCm builds. Only device selection and synchronisation differ by
device type, and they live here.
"""

from __future__ import annotations

import math
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from clusterbench.envinfo import torchcheck
from clusterbench.envinfo.software import cpu_model
from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.printable import printable
from clusterbench.ranks.env import RankEnv
from clusterbench.ranks.plan import Plan
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


def require_torch() -> None:
    """Benchmarks need PyTorch; an analysis-only install (no torch) says how to add it."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise UsageError(torchcheck.TORCH_MISSING) from None


def resolve_device_type(option: str) -> str:
    """``auto`` is the GPUs torch can use, else the CPU, but never the CPU when the node has
    GPUs that this torch build cannot use (the CUDA wheel on an AMD node): that is exit 2 with
    the build installed and the build needed. ``cpu`` benchmarks the CPU on purpose."""
    if option not in ("auto", "cuda", "cpu"):
        raise UsageError(f"unknown device {option!r}: expected auto, cuda or cpu")
    require_torch()
    if option == "cpu":
        return "cpu"
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        return "cuda"
    wrong = torchcheck.device_problem()
    if wrong:
        raise UsageError(f"{wrong}; --device cpu benchmarks the CPU on purpose")
    if option == "cuda":
        raise UsageError("--device cuda: no CUDA or ROCm GPU is visible to PyTorch")
    return "cpu"


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
    store: Any = None  # the rendezvous store the process group was made from (shared ids: --engine nccl)
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
        for m in rows:
            # inf cannot be stored as JSON nor printed as a number; like NaN it is no measurement
            if isinstance(m.value, float) and not math.isfinite(m.value):
                raise ValueError(f"{m.benchmark}/{m.metric}: {m.value} is not a measurement ({m.params})")
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

    def plan(self, benchmark: str, what: str, works: Sequence[float]) -> Plan:
        """The steps this benchmark will take, ``works`` the work of each (any unit its time is
        proportional to); ``Plan.step()`` after each, as well as ``progress()``. Only rank 0's
        reach the command."""
        return Plan(self.emit, benchmark, what, works)

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

    global _groups, _join_started
    wait_s = timeout.total_seconds()
    _join_started = time.monotonic()
    deadline = _join_started + wait_s
    key = (env.master_addr, env.master_port)
    if key not in _stores:
        _check_resolves(env.master_addr, 0.8 * wait_s)   # before the watchdog's --timeout
        # torchrun's agent hosts the store itself and tells its workers to connect as clients
        hosted = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        master = env.rank == 0 and not hosted
        if not master:
            _wait_for_store(env, "torchrun's agent store" if hosted else "rank 0", deadline, wait_s)
        _stores[key] = dist.TCPStore(env.master_addr, env.master_port, env.world_size,
                                     is_master=master, timeout=timeout, wait_for_workers=False)
    _groups += 1
    store = dist.PrefixStore(f"clusterbench/{_groups}", _stores[key])
    _wait_for_peers(store, env, deadline, wait_s)
    return store


# A rank still waiting for its peers after this long says so, once, on standard error, and waits
# on up to --timeout: rank 0 may only be slow to start (importing PyTorch from a busy file system).
JOIN_NOTICE_S = 15.0

_joining: str | None = None
_join_started: float | None = None


def join_started() -> float | None:
    """When this process last began to gather a group (its --timeout for the join counts from
    then); None before its first: until then the rank is starting (importing PyTorch), alone."""
    return _join_started


def joining() -> str | None:
    """While this process waits for its group to gather: what it waits for, worded as the reason
    it gives up when --timeout ends that wait (the launcher watchdog's last line); else None."""
    return _joining


def _notice_at(wait_s: float) -> float:
    return time.monotonic() + min(JOIN_NOTICE_S, wait_s / 2)


def _say(env: RankEnv, text: str) -> None:
    print(f"clusterbench: warning: rank {env.rank} on {env.host}: {printable(text)}", file=sys.stderr, flush=True)


def _gave_up(reason: str, wait_s: float) -> ClusterbenchError:
    return ClusterbenchError(f"{reason} within {wait_s:g} s (--timeout)")


def _wait_for_store(env: RankEnv, who: str, deadline: float, wait_s: float) -> None:
    """Until something listens at MASTER_ADDR:MASTER_PORT. PyTorch's store client would retry
    there in C++ until --timeout, silent, then print pages of C++ frames; this wait says early,
    in one line, what it waits for, and at the end that rank 0 never came. A probe that connects
    and closes is ignored by the store."""
    where = f"{env.master_addr}:{env.master_port}"
    reason = f"{who} never came: nothing listened at {where} (MASTER_ADDR:MASTER_PORT)"

    def listening() -> str | None:
        left = deadline - time.monotonic()
        try:
            with socket.create_connection((env.master_addr, env.master_port), timeout=max(0.05, min(1.0, left))):
                return None
        except OSError:
            return reason

    # local ranks start together: rank 0 listens within moments, hence the short first pause
    _wait_until(env, deadline, wait_s, 0.01, listening,
                lambda: f"waiting for {who} at {where} (MASTER_ADDR:MASTER_PORT): nothing listens there yet; "
                        f"{env.world_size} ranks expected, giving up after {wait_s:g} s (--timeout)")


def _wait_for_peers(store: Any, env: RankEnv, deadline: float, wait_s: float) -> None:
    """Until every rank of the group has reached the store (a count under the group's prefix),
    so that a missing rank is waited for here, in Python, with a count to show, rather than in
    the backend's C++ join."""
    where = f"{env.master_addr}:{env.master_port}"
    joined = [int(store.add("joined", 1))]

    def missing() -> str | None:
        n = env.world_size - joined[0]
        if n <= 0:
            return None
        return f"{n} rank{'s' if n > 1 else ''} never joined at {where} ({joined[0]} of {env.world_size} ranks joined)"

    def recount() -> str | None:
        joined[0] = int(store.add("joined", 0))
        return missing()

    if missing() is not None:
        _wait_until(env, deadline, wait_s, 0.005, recount,
                    lambda: f"waiting for the other ranks at {where} ({joined[0]} of {env.world_size} ranks "
                            f"joined); giving up after {wait_s:g} s (--timeout)", first=missing())


def _wait_until(env: RankEnv, deadline: float, wait_s: float, pause: float, step: Callable[[], str | None],
                waiting: Callable[[], str], first: str | None = None) -> None:
    """Call ``step`` until it returns None; until then it returns the reason the wait ends with
    at ``deadline`` (what ``joining`` says meanwhile). ``waiting()`` is said once, after
    min(JOIN_NOTICE_S, wait_s / 2); the pause between calls doubles up to 0.5 s. ``first``: the
    reason already known, without a first call."""
    global _joining
    notice: float | None = _notice_at(wait_s)
    try:
        reason = first if first is not None else step()
        while reason is not None:
            _joining = reason
            now = time.monotonic()
            if now >= deadline:
                raise _gave_up(reason, wait_s)
            if notice is not None and now >= notice:
                notice = None
                _say(env, waiting())
            time.sleep(min(pause, max(0.0, deadline - now)))
            pause = min(2 * pause, 0.5)
            reason = step()
    finally:   # a signal or an error ends the wait too: never left for a later hang's last line
        _joining = None


# The answers of a name lookup that say the name does not exist (yet: a Kubernetes pod's name
# appears once the pod runs); a temporary failure (EAI_AGAIN) is left to the store's retries.
_NO_SUCH_NAME = tuple(getattr(socket, n) for n in ("EAI_NONAME", "EAI_NODATA", "EAI_FAIL") if hasattr(socket, n))


def _check_resolves(addr: str, wait_s: float) -> None:
    """A MASTER_ADDR no lookup finds within most of --timeout: one line, instead of the store
    retrying it until the watchdog ends the rank, with a page of C++ warnings."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            socket.getaddrinfo(addr, None, type=socket.SOCK_STREAM)
            return
        except UnicodeError:
            raise UsageError(f"MASTER_ADDR {addr!r} is not a host name or address") from None
        except socket.gaierror as e:
            if e.errno not in _NO_SUCH_NAME:
                return
            if time.monotonic() >= deadline:
                raise UsageError(f"MASTER_ADDR {addr!r}: no such host ({e.strerror}); set it to the "
                                 f"address of rank 0's host") from None
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


def gpu_index(local_rank: int, local_world_size: int, visible: int, host: str) -> int:
    """The GPU a rank uses: the one of its local rank. A launcher that gives each rank its own
    single GPU (``srun --gpus-per-task=1``, a per-rank CUDA_VISIBLE_DEVICES) shows one GPU to
    every rank: index 0, and ``check_distinct_gpus`` proves after the join that no two ranks of a
    host got the same one. More ranks on a node than GPUs would put two ranks on one GPU: refused."""
    if visible < 1:
        raise UsageError(f"no GPU visible to rank {local_rank} on {host}")
    if visible == 1 or local_world_size <= visible:
        return 0 if visible == 1 else local_rank
    raise UsageError(f"{local_world_size} ranks on {host} but {visible} GPU(s) visible to each rank: two "
                     f"ranks would share a GPU; start at most {visible} ranks per node, or give each rank "
                     f"its own GPU (CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES)")


def check_distinct_gpus(ranks: list[tuple[str, str]]) -> None:
    """``ranks[i]`` = (host, device identity) of rank i: refuse two ranks on one GPU of one host."""
    seen: dict[tuple[str, str], int] = {}
    for rank, key in enumerate(ranks):
        if key in seen:
            host = key[0]
            raise UsageError(f"ranks {seen[key]} and {rank} on {host} use the same GPU ({key[1]}): "
                             f"start at most one rank per GPU, or give each rank its own GPU "
                             f"(CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES)")
        seen[key] = rank


def device_identity(props: Any, index: int) -> str:
    """What tells two GPUs apart across processes that number them differently: the UUID (MIG
    instances and GPU partitions have their own), else the PCI address, else the index."""
    uuid = str(getattr(props, "uuid", "") or "")
    if uuid:
        return uuid
    if hasattr(props, "pci_bus_id"):
        return (f"{getattr(props, 'pci_domain_id', 0):04x}:{props.pci_bus_id:02x}:"
                f"{getattr(props, 'pci_device_id', 0):02x}")
    return f"index {index}"


# PyTorch's store and process group keep their timeouts in milliseconds on a 64-bit clock: 1e10 s
# made the store's first connect time out at once, 1e300 s overflowed a C int. About three years
# is as good as forever to a benchmark, and the command's own --timeout still applies.
MAX_TORCH_TIMEOUT_S = 1e8


def setup(env: RankEnv, options: RankOptions) -> RankContext:
    """Pick this rank's device and join the process group."""
    import torch
    import torch.distributed as dist

    device_type = resolve_device_type(options.device)
    backend = resolve_backend(options.backend, device_type)
    host = env.host or socket.gethostname()
    ident = "cpu"
    if device_type == "cuda":
        index = gpu_index(env.local_rank, env.local_world_size, torch.cuda.device_count(), host)
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
        name = torch.cuda.get_device_name(index)
        ident = device_identity(torch.cuda.get_device_properties(index), index)
    else:
        device = torch.device("cpu")
        name = cpu_model()
    timeout = timedelta(seconds=min(max(options.timeout, 1.0), MAX_TORCH_TIMEOUT_S))
    # device_id binds the communicator to this rank's GPU at once (NCCL/RCCL create it eagerly)
    bound = {"device_id": device} if backend == "nccl" else {}
    store = _job_store(env, timeout)
    dist.init_process_group(backend=backend, store=store, rank=env.rank,
                            world_size=env.world_size, timeout=timeout, **bound)
    ctx = RankContext(env=env, device=device, backend=backend, options=options, store=store)
    gathered: list[Any] = [None] * env.world_size
    dist.all_gather_object(gathered, (host, name, ident))
    if device_type == "cuda":
        check_distinct_gpus([(g[0], g[2]) for g in gathered])
    ctx.hosts = [g[0] for g in gathered]
    ctx.device_names = [g[1] for g in gathered]
    return ctx


def teardown() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
