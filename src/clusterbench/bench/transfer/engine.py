"""Execute transfer tests: allocate, run every transfer of a test at once, time, validate.

One process drives every device (as TransferBench and nvbandwidth do): a peer copy needs both
buffers in one address space. GPU transfers each get their own stream and are timed with
events; CPU-executed transfers each run in their own thread and are timed with a host clock.
The test's wall time (host clock, all transfers) gives its aggregate bandwidth.
"""

from __future__ import annotations

import glob
import os
import re
import threading
import time
from dataclasses import dataclass, field
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
    return Topology(gpus, tuple(sorted(nodes)), nodes)


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


def _host_buffer(m: Mem, elems: int, pinned: bool, cpus: tuple[int, ...]) -> Any:
    """Host memory on NUMA node m.index: pages are first touched by a thread bound to the node."""
    import numpy as np
    import torch

    box: list[Any] = []

    def touch() -> None:
        if hasattr(os, "sched_setaffinity") and cpus:
            try:
                os.sched_setaffinity(0, cpus)
            except OSError:
                pass
        arr = np.zeros(elems, dtype=np.float32)   # single-threaded first touch, on this node
        box.append(torch.from_numpy(arr))

    th = threading.Thread(target=touch)
    th.start()
    th.join()
    buf = box[0]
    return buf.pin_memory() if pinned else buf


class Buffers:
    """Source and destination storage of one transfer, with the views the copy uses."""

    def __init__(self, t: Transfer, topo: Topology, gpu_involved: bool) -> None:
        import torch

        self.t = t
        elems = t.bytes // 4
        kernel = t.exe.kind == "G" and t.srcs and t.dsts
        self.rows = elems // KERNEL_COLS if kernel else 0

        def alloc(m: Mem) -> Any:
            if kernel:
                full = torch.empty((self.rows, KERNEL_COLS + KERNEL_PAD), dtype=torch.float32,
                                   device=_device(m))
                return full[:, :KERNEL_COLS]
            if m.is_host:
                return _host_buffer(m, elems, pinned=gpu_involved and m.kind == "C",
                                    cpus=topo.numa_cpus.get(m.index, ()))
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
    import torch

    reasons = [r for r in (unsupported(t) for t in test.transfers) if r]
    if reasons:
        return TestResult([], [], [], skipped=reasons[0])
    gpu = any(m.kind == "G" for t in test.transfers for m in t.srcs + t.dsts)
    bufs = [Buffers(t, topo, gpu) for t in test.transfers]
    streams = [torch.cuda.Stream(device=torch.device("cuda", t.exe.index)) if t.exe.kind in "GD"
               else None for t in test.transfers]
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
        for i, (b, s) in enumerate(zip(bufs, streams)):
            if s is not None:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                with torch.cuda.stream(s):
                    start.record(s)
                    b.run()
                    end.record(s)
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
