"""Execute transfer tests: allocate, run every transfer of a test at once, time, validate.

One process drives every device (as TransferBench and nvbandwidth do): a peer copy needs both
buffers in one address space. GPU transfers each get a private stream on *every* GPU they touch:
PyTorch issues a peer copy on the source GPU's current stream and makes the destination's
current stream wait for it, so with the default stream on the destination, copies into one GPU
would serialise (and an all-to-all would read low). They are timed with events on the issuing
stream; CPU-executed transfers each run in their own thread and are timed with a host clock.
The test's wall time (host clock, all transfers) gives its aggregate bandwidth.

Host memory lives on the NUMA node it names: a thread bound to the node's CPUs first-touches the
pages and, when a GPU takes part, pins them in place (cudaHostRegister/hipHostRegister), so the
pinned buffer stays where it was placed (``pin_memory()`` would copy it into a new buffer
allocated by the calling thread). The h2d/d2h matrices use each GPU's own NUMA node.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterbench.bench.transfer.lang import Mem, Test, Transfer
from clusterbench.errors import UsageError

KERNEL_COLS = 1024   # a kernel-driven copy moves (rows, 1024) floats through padded rows
KERNEL_PAD = 64      # padding makes the views non-contiguous, which steers PyTorch's copy_
                     # from the copy engine (memcpy) to its copy kernel
FILL_VALUE = 7.0


@dataclass(frozen=True)
class Topology:
    gpus: int
    numa_nodes: tuple[int, ...]
    numa_cpus: dict[int, tuple[int, ...]] = field(default_factory=dict)
    gpu_numa: dict[int, int] = field(default_factory=dict)   # GPU index -> its NUMA node

    def host_node(self, gpu: int) -> int:
        """The NUMA node host memory for ``gpu`` belongs on: the GPU's own, else the first."""
        node = self.gpu_numa.get(gpu)
        return node if node in self.numa_nodes else self.numa_nodes[0]


def gpu_numa_nodes(bdfs: dict[int, str], root: Path | str = "/") -> dict[int, int]:
    """GPU index -> NUMA node from ``/sys/bus/pci/devices/<bdf>/numa_node`` (-1, unreadable or
    unknown PCI address: left out)."""
    from clusterbench.envinfo.sysfs import read_int

    out = {}
    for gpu, bdf in bdfs.items():
        node = read_int(Path(root) / "sys/bus/pci/devices" / bdf / "numa_node")
        if node is not None and node >= 0:
            out[gpu] = node
    return out


def _gpu_bdfs(gpus: int) -> dict[int, str]:
    import torch

    out = {}
    for i in range(gpus):
        p = torch.cuda.get_device_properties(i)
        if hasattr(p, "pci_bus_id"):
            out[i] = f"{getattr(p, 'pci_domain_id', 0):04x}:{p.pci_bus_id:02x}:{getattr(p, 'pci_device_id', 0):02x}.0"
    return out


def _cpulist(text: str) -> tuple[int, ...]:
    cpus: list[int] = []
    for part in text.strip().split(","):
        if "-" in part:
            a, b = part.split("-")
            cpus += range(int(a), int(b) + 1)
        elif part:
            cpus.append(int(part))
    return tuple(cpus)


def topology() -> Topology:
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    nodes: dict[int, tuple[int, ...]] = {}
    for path in glob.glob("/sys/devices/system/node/node[0-9]*/cpulist"):
        m = re.search(r"node(\d+)", path)
        try:
            with open(path) as f:
                cpus = _cpulist(f.read())
        except OSError:
            continue
        if m and cpus:
            nodes[int(m.group(1))] = cpus
    if not nodes:
        nodes = {0: tuple(range(os.cpu_count() or 1))}
    return Topology(gpus, tuple(sorted(nodes)), nodes, gpu_numa_nodes(_gpu_bdfs(gpus)) if gpus else {})


def validate(test: Test, topo: Topology) -> None:
    """Indices that do not exist are usage errors (exit 2) before anything is allocated."""
    for t in test.transfers:
        for m in t.srcs + t.dsts:
            if m.kind == "G" and m.index >= topo.gpus:
                raise UsageError(f"{test.name}: {t}: GPU {m.index} does not exist "
                                 f"(this host has {topo.gpus} GPU(s))")
            if m.is_host and m.index not in topo.numa_nodes:
                raise UsageError(f"{test.name}: {t}: NUMA node {m.index} does not exist "
                                 f"(this host has {len(topo.numa_nodes)})")
        if t.exe.kind in "GD" and t.exe.index >= topo.gpus:
            raise UsageError(f"{test.name}: {t}: executor {t.exe} needs GPU {t.exe.index}, "
                             f"this host has {topo.gpus} GPU(s)")
        if t.exe.kind == "C" and t.exe.index not in topo.numa_nodes:
            raise UsageError(f"{test.name}: {t}: executor {t.exe}: NUMA node {t.exe.index} does not exist")


def issuing_gpu(t: Transfer) -> int | None:
    """The GPU whose stream PyTorch runs this transfer on: a peer copy (memcpy or kernel) is issued
    on the source GPU, a host<->GPU copy on its GPU, a memset on the destination, a read on the source."""
    gpus = [m.index for m in (t.srcs or t.dsts) if m.kind == "G"]
    if not gpus:
        gpus = [m.index for m in t.dsts if m.kind == "G"]
    return gpus[0] if gpus else None


def unsupported(t: Transfer) -> str | None:
    """Why PyTorch cannot run this transfer as written, or None."""
    mems = t.srcs + t.dsts
    if t.exe.sub is not None:
        return (f"executor {t.exe} names sub-executor {t.exe.sub} of {t.exe.kind}{t.exe.index}, which "
                f"PyTorch cannot choose (it picks its own engine or threads): write {t.exe.kind}{t.exe.index}")
    issuer = issuing_gpu(t)
    if t.exe.kind in "GD" and issuer is not None and t.exe.index != issuer:
        return (f"PyTorch issues this transfer on GPU {issuer}; executor {t.exe} (a remote "
                f"{'read' if t.srcs and t.srcs[0].kind == 'G' else 'write'}) cannot be chosen")
    gpu_mem = any(m.kind == "G" for m in mems)
    if t.exe.kind == "C" and gpu_mem:
        return "a CPU executor cannot address GPU memory through PyTorch (use D<i> or G<i>)"
    if t.exe.kind == "G" and any(m.is_host for m in mems):
        return "a GPU kernel cannot read or write host memory through PyTorch (use D<i>)"
    if t.exe.kind == "D" and not gpu_mem:
        return "a copy engine (D) moves data to or from a GPU; host-to-host copies use C<i>"
    if t.exe.kind == "D" and (not t.srcs or not t.dsts):
        return "copy engines only copy: memset (N source) and read-only (N destination) need G<i> or C<i>"
    if t.exe.kind == "G" and t.srcs and t.dsts and (t.bytes % (4 * KERNEL_COLS) or t.bytes < 8 * KERNEL_COLS):
        return f"a kernel-driven copy moves whole rows of {4 * KERNEL_COLS} bytes: use a multiple of it (>= 8K)"
    return None


def _device(m: Mem) -> Any:
    import torch

    return torch.device("cuda", m.index) if m.kind == "G" else torch.device("cpu")


def _pattern(n: int, device: Any, scale: float = 1.0) -> Any:
    import torch

    # Small integers: exact in float32, and different from neighbours and from FILL_VALUE.
    return ((torch.arange(n, device=device, dtype=torch.int64) * 517 % 383) + 31).float() * scale


def _host_register(buf: Any) -> bool:
    """Pin ``buf``'s pages where they are (cudaHostRegister; hipHostRegister on ROCm, which
    PyTorch's ``cudart()`` binds under the same name). False when the runtime refuses."""
    import torch

    err = torch.cuda.cudart().cudaHostRegister(buf.data_ptr(), buf.numel() * buf.element_size(), 0)
    return int(getattr(err, "value", err)) == 0


def _host_unregister(buf: Any) -> None:
    import torch

    torch.cuda.cudart().cudaHostUnregister(buf.data_ptr())


def _host_pages(elems: int) -> Any:
    """``elems`` float32 of anonymous memory, advised ``MADV_HUGEPAGE``. Registered in place in
    4 KiB pages, 1 GiB host->device copies ran at 46.8 GB/s on an H100 VM, against 51.6 from
    ``cudaHostAlloc`` memory and 55.2 from registered huge pages (BENCHMARKS.md): the copy
    engine walks the pinned pages, and fewer, larger pages cost it less. Where huge pages are
    off or madvise is missing, ordinary pages."""
    import mmap

    import numpy as np

    nbytes = max(elems * 4, 1)
    mm = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0x20))
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if advice is not None and hasattr(mm, "madvise"):
        try:
            mm.madvise(advice)
        except OSError:
            pass
    return np.frombuffer(mm, dtype=np.float32, count=elems)


def _host_buffer(m: Mem, elems: int, pinned: bool, cpus: tuple[int, ...]) -> tuple[Any, bool]:
    """Host memory on NUMA node m.index: a thread bound to the node's CPUs writes every page
    first (the kernel places a page on the node of the CPU that first touches it) and, for
    pinned memory, registers it with the GPU runtime in place. Returns (buffer, registered)."""
    import torch

    box: list[Any] = []
    failure: list[BaseException] = []

    def touch() -> None:
        try:
            if hasattr(os, "sched_setaffinity") and cpus:
                try:
                    os.sched_setaffinity(0, cpus)
                except OSError:
                    pass
            arr = _host_pages(elems)
            arr.fill(0.0)                                # the first touch, from this node's CPUs
            buf = torch.from_numpy(arr)
            box.append((buf, _host_register(buf) if pinned else False))
        except BaseException as e:  # noqa: BLE001 - re-raised in the calling thread
            failure.append(e)

    th = threading.Thread(target=touch, name=f"clusterbench-numa{m.index}")
    th.start()
    th.join()
    if failure:
        raise failure[0]
    buf, registered = box[0]
    if pinned and not registered:  # a runtime that refuses to register: a pinned copy, placed by this thread
        return buf.pin_memory(), False
    return buf, registered


def stream_devices(t: Transfer) -> list[int]:
    """The GPUs a transfer touches, each to get a private stream; the issuing GPU last, so that
    entering its stream leaves it the current device."""
    issuer = t.exe.index if t.exe.kind in "GD" else issuing_gpu(t)
    gpus = {m.index for m in t.srcs + t.dsts if m.kind == "G"}
    if t.exe.kind in "GD":
        gpus.add(t.exe.index)
    return sorted(g for g in gpus if g != issuer) + ([issuer] if issuer in gpus else [])


class Buffers:
    """Source and destination storage of one transfer, with the views the copy uses."""

    def __init__(self, t: Transfer, topo: Topology, gpu_involved: bool) -> None:
        import torch

        self.t = t
        elems = t.bytes // 4
        kernel = t.exe.kind == "G" and t.srcs and t.dsts
        self.rows = elems // KERNEL_COLS if kernel else 0
        self.registered: list[Any] = []   # host buffers pinned in place, unregistered by release()

        def alloc(m: Mem) -> Any:
            if kernel:
                full = torch.empty((self.rows, KERNEL_COLS + KERNEL_PAD), dtype=torch.float32,
                                   device=_device(m))
                return full[:, :KERNEL_COLS]
            if m.is_host:
                buf, registered = _host_buffer(m, elems, pinned=gpu_involved and m.kind == "C",
                                               cpus=topo.numa_cpus.get(m.index, ()))
                if registered:
                    self.registered.append(buf)
                return buf
            return torch.empty(elems, dtype=torch.float32, device=_device(m))

        self.srcs = [alloc(m) for m in t.srcs]
        self.dsts = [alloc(m) for m in t.dsts]
        for s in self.srcs:
            s.copy_(_pattern(elems, s.device).view(s.shape))
        self._sum: Any = None

    def run(self) -> None:
        """One pass of the transfer (asynchronous on a GPU stream)."""
        if not self.srcs:
            for d in self.dsts:
                d.fill_(FILL_VALUE)
        elif not self.dsts:
            self._sum = self.srcs[0].sum()
        else:
            nb = self.t.exe.kind == "D"
            for d in self.dsts:
                d.copy_(self.srcs[0], non_blocking=nb)

    def release(self) -> None:
        """Unpin host memory registered in place (before its pages are freed)."""
        for buf in self.registered:
            _host_unregister(buf)
        self.registered.clear()

    def check(self) -> str | None:
        import torch

        elems = self.t.bytes // 4
        if not self.dsts:
            expected = float(_pattern(elems, "cpu").double().sum())
            got = float(self._sum)
            return None if abs(got - expected) <= 1e-4 * expected else \
                f"read-only sum {got:.9g}, expected {expected:.9g}"
        for d, m in zip(self.dsts, self.t.dsts):
            want = (torch.full((elems,), FILL_VALUE, device=d.device) if not self.srcs
                    else _pattern(elems, d.device)).view(d.shape)
            if not torch.equal(d, want):
                bad = int((d != want).sum().item())
                return f"{bad} of {elems} elements differ in the destination {m}"
        return None


@dataclass
class TestResult:
    seconds: list[list[float]]      # per transfer, per timed iteration
    wall: list[float]               # per timed iteration, the whole test (host clock)
    errors: list[str]
    skipped: str | None = None


def run_test(test: Test, topo: Topology, iterations: int, warmups: int, check: bool = True) -> TestResult:

    reasons = [r for r in (unsupported(t) for t in test.transfers) if r]
    if reasons:
        return TestResult([], [], [], skipped=reasons[0])
    gpu = any(m.kind == "G" for t in test.transfers for m in t.srcs + t.dsts)
    bufs: list[Buffers] = []
    try:
        for t in test.transfers:
            bufs.append(Buffers(t, topo, gpu))
        return _time_test(test, bufs, iterations, warmups, check)
    finally:
        for b in bufs:
            b.release()


def _time_test(test: Test, bufs: list[Buffers], iterations: int, warmups: int, check: bool) -> TestResult:
    import torch

    # one private stream per GPU each transfer touches: no transfer waits on another's default stream
    streams = [{g: torch.cuda.Stream(device=torch.device("cuda", g)) for g in stream_devices(t)}
               if t.exe.kind in "GD" else None for t in test.transfers]
    gpu_ids = sorted({t.exe.index for t in test.transfers if t.exe.kind in "GD"} |
                     {m.index for t in test.transfers for m in t.srcs + t.dsts if m.kind == "G"})

    def sync_all() -> None:
        for i in gpu_ids:
            torch.cuda.synchronize(i)

    def one_iteration() -> tuple[list[float], float]:
        sync_all()
        times = [0.0] * len(bufs)
        events: list[Any] = [None] * len(bufs)
        threads = []
        t0 = time.perf_counter()
        for i, (b, private) in enumerate(zip(bufs, streams)):
            if private is not None:
                issuing = private[b.t.exe.index]
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                with contextlib.ExitStack() as current:
                    for st in private.values():   # the issuing GPU's stream is entered last
                        current.enter_context(torch.cuda.stream(st))
                    start.record(issuing)
                    b.run()
                    end.record(issuing)
                events[i] = (start, end)
            else:
                def work(i: int = i, b: Buffers = b) -> None:
                    c0 = time.perf_counter()
                    b.run()
                    times[i] = time.perf_counter() - c0
                threads.append(threading.Thread(target=work))
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        sync_all()
        wall = time.perf_counter() - t0
        for i, ev in enumerate(events):
            if ev is not None:
                times[i] = ev[0].elapsed_time(ev[1]) / 1e3
        return times, wall

    for _ in range(warmups):
        one_iteration()
    per: list[list[float]] = [[] for _ in bufs]
    walls = []
    for _ in range(iterations):
        times, wall = one_iteration()
        walls.append(wall)
        for i, t in enumerate(times):
            per[i].append(t)
    errors = []
    if check:
        for b in bufs:
            e = b.check()
            if e:
                errors.append(f"{b.t}: {e}")
    return TestResult(per, walls, errors)
