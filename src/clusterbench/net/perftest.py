"""perftest's ``ib_write_bw`` between hosts, where RDMA devices exist (``/sys/class/infiniband``).

The destination of each pair runs the server, the source the client with the server's address
(``-a -F --report_gbits -q N``, optionally ``--bidirectional`` and a GPU memory flag such as
``--use_cuda=0`` or ``--use_rocm=0``); the client's report is parsed into ``ib_write_bw``
records (``bw_peak``, ``bw_avg`` in GB/s, ``msg_rate`` in Mpps). Without devices the test is
skipped with the reason.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from clusterbench.records import Measurement

SYSFS_IB = "/sys/class/infiniband"


def rdma_devices(root: str = SYSFS_IB) -> list[str]:
    try:
        return sorted(p.name for p in Path(root).iterdir())
    except OSError:
        return []


def skip_reason(root: str = SYSFS_IB) -> str | None:
    if not rdma_devices(root):
        return f"no RDMA devices in {root}: ib_write_bw skipped"
    if shutil.which("ib_write_bw") is None:
        return "perftest's ib_write_bw is not on PATH: ib_write_bw skipped"
    return None


def perftest_argv(device: str, qps: int = 1, bidirectional: bool = False, gpu: str | None = None,
                  server: str | None = None, port: int = 18515) -> list[str]:
    argv = ["ib_write_bw", "-d", device, "-a", "-F", "--report_gbits", "-q", str(qps), "-p", str(port)]
    if bidirectional:
        argv.append("--bidirectional")
    if gpu:
        argv.append(gpu)
    if server:
        argv.append(server)
    return argv


def parse_report(text: str, base: dict[str, Any]) -> list[Measurement]:
    """The client's report through the shared perftest importer, with the pair's params added."""
    from clusterbench.ingest import perftest as importer

    return [Measurement(m.benchmark, m.metric, m.value, m.unit, {**m.params, **base})
            for run in importer.parse(text) for m in run.measurements]


def run_pairs(ctx: Any, cfg: Any, ranks: list[int], table: list[Any], names: list[str]) -> None:
    import torch.distributed as dist

    from clusterbench.net.matrix import ordered_pairs

    reasons: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(reasons, skip_reason())
    missing = [f"{names[r]}: {reasons[r]}" for r in ranks if reasons[r]]
    if missing:
        ctx.emit("note", "rdma: " + "; ".join(missing))
        return
    device = cfg.rdma_device or rdma_devices()[0]
    timeout = max(ctx.options.timeout, 60.0)
    for i, j in ordered_pairs(len(ranks), cfg.pairs):
        src, dst = ranks[i], ranks[j]
        result: Any = None
        server = None
        if ctx.rank == dst:
            server = subprocess.Popen(perftest_argv(device, cfg.rdma_qps, cfg.rdma_bidirectional,
                                                    cfg.rdma_gpu),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dist.barrier()
        if ctx.rank == src:
            time.sleep(1.0)  # the server needs a moment to listen
            try:
                r = subprocess.run(perftest_argv(device, cfg.rdma_qps, cfg.rdma_bidirectional,
                                                 cfg.rdma_gpu, server=table[dst][0]),
                                   capture_output=True, text=True, timeout=timeout)
                result = r.stdout if r.returncode == 0 else f"exit {r.returncode}: {r.stderr.strip()[:200]}"
            except subprocess.TimeoutExpired:
                result = f"no report within {timeout:g} s"
        got: list[Any] = [None] * ctx.world_size
        dist.all_gather_object(got, result)
        if server is not None:
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(5)
        ctx.progress()
        base = {"src_host": names[src], "dst_host": names[dst], "device": device,
                "qps": cfg.rdma_qps, "bidirectional": cfg.rdma_bidirectional}
        text = got[src]
        if text is None or not isinstance(text, str) or "#bytes" not in text:
            ctx.emit("fail", f"ib_write_bw {names[src]} -> {names[dst]}: {text}")
            continue
        ctx.emit("measurements", parse_report(text, base))
