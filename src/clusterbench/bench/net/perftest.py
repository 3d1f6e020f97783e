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

from clusterbench.bench.net.pairs import ordered_pairs, pair_budget
from clusterbench.ranks.context import RankContext
from clusterbench.records import Measurement

SYSFS_IB = "/sys/class/infiniband"
PORT = 18515  # perftest's default out-of-band port
TOOL = "ib_write_bw"  # the perftest program run, and the benchmark its records carry


def rdma_devices(root: str = SYSFS_IB) -> list[str]:
    try:
        return sorted(p.name for p in Path(root).iterdir())
    except OSError:
        return []


def skip_reason(root: str = SYSFS_IB) -> str | None:
    if not rdma_devices(root):
        return f"no RDMA devices in {root}: ib_write_bw skipped"
    if shutil.which(TOOL) is None:
        return "perftest's ib_write_bw is not on PATH: ib_write_bw skipped"
    return None


def perftest_argv(device: str, qps: int = 1, bidirectional: bool = False, gpu: str | None = None,
                  server: str | None = None, port: int = PORT) -> list[str]:
    argv = [TOOL, "-d", device, "-a", "-F", "--report_gbits", "-q", str(qps), "-p", str(port)]
    if bidirectional:
        argv.append("--bidirectional")
    if gpu:
        argv.append(gpu)
    if server:
        argv.append(server)
    return argv


def listening(port: int, proc_net: str = "/proc/net") -> bool:
    """Whether a socket on this host listens on TCP ``port`` (IPv4 or IPv6), from the kernel's
    tables: the server side can wait for its own ib_write_bw without connecting to it (a probe
    connection would be taken for the client)."""
    want = f":{port:04X}"
    for name in ("tcp", "tcp6"):
        try:
            with open(f"{proc_net}/{name}") as f:
                next(f, None)
                for line in f:
                    cols = line.split()
                    if len(cols) > 3 and cols[1].endswith(want) and cols[3] == "0A":  # 0A: LISTEN
                        return True
        except OSError:
            continue
    return False


def wait_listening(server: subprocess.Popen, port: int, timeout: float,
                   proc_net: str = "/proc/net") -> str | None:
    """Poll until ``server`` listens on ``port``; None when it does, else why it never will."""
    deadline = time.monotonic() + timeout
    while not listening(port, proc_net):
        if server.poll() is not None:
            return f"the server exited with code {server.returncode} before listening"
        if time.monotonic() > deadline:
            return f"the server did not listen on port {port} within {timeout:g} s"
        time.sleep(0.02)
    return None


def parse_report(text: str, base: dict[str, Any]) -> list[Measurement]:
    """The client's report through the shared perftest importer, with the pair's params added."""
    from clusterbench.ingest import perftest as importer

    return [Measurement(m.benchmark, m.metric, m.value, m.unit, {**m.params, **base})
            for run in importer.parse(text) for m in run.measurements]


def run_pairs(ctx: RankContext, cfg: Any, ranks: list[int], table: list[Any], labels: list[str]) -> None:
    """Every pair's ib_write_bw; ``labels[i]`` names the endpoint ``ranks[i]`` (a host, or
    host/rank when the ranks share one host)."""
    import torch.distributed as dist

    reasons: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(reasons, skip_reason())
    missing = list(dict.fromkeys(f"{labels[i]}: {reasons[r]}" for i, r in enumerate(ranks) if reasons[r]))
    if missing:
        ctx.note("rdma: " + "; ".join(missing), TOOL)
        return
    device = cfg.rdma_device or rdma_devices()[0]
    # the other ranks wait on each pair: the client, and the server's start, fit in --timeout
    budget = pair_budget(ctx.options.timeout)
    for i, j in ordered_pairs(len(ranks), cfg.pairs):
        src, dst = ranks[i], ranks[j]
        result: Any = None
        server = None
        not_ready: str | None = None
        try:
            if ctx.rank == dst:
                started = _start_server(device, cfg, budget / 4)
                if isinstance(started, str):
                    not_ready = started
                else:
                    server = started
            ready: list[Any] = [None] * ctx.world_size
            dist.all_gather_object(ready, not_ready)  # the client starts once the server listens
            if ctx.rank == src and ready[dst] is not None:
                result = f"server on {labels[j]}: {ready[dst]}"
            elif ctx.rank == src:
                result = _client(device, cfg, table[dst][0], budget / 2)
            got: list[Any] = [None] * ctx.world_size
            dist.all_gather_object(got, result)
        except BaseException:
            if server is not None:   # interrupted, or a peer gone: no server left behind
                server.kill()
                server.wait(5)
            raise
        if server is not None:
            _stop(server)
        ctx.progress()
        base = {"src_host": labels[i], "dst_host": labels[j], "src_rank": src, "dst_rank": dst,
                "device": device, "qps": cfg.rdma_qps, "bidirectional": cfg.rdma_bidirectional}
        text = got[src]
        measured = parse_report(text, base) if isinstance(text, str) and "#bytes" in text else []
        if not measured:   # a report without rows is no measurement: never a number made up
            why = text[:400] if isinstance(text, str) else "no report"
            ctx.fail(f"ib_write_bw {labels[i]} -> {labels[j]}: {why}")
            continue
        ctx.record(measured)


def _start_server(device: str, cfg: Any, wait: float) -> subprocess.Popen | str:
    """This host's ib_write_bw server, listening; or why there is none."""
    if listening(PORT):   # a client connecting now would reach whatever holds the port
        return f"TCP port {PORT} is already in use (another ib_write_bw?)"
    try:
        server = subprocess.Popen(perftest_argv(device, cfg.rdma_qps, cfg.rdma_bidirectional, cfg.rdma_gpu,
                                                port=PORT),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError as e:
        return f"{TOOL} did not start: {e.strerror or e}"
    why = wait_listening(server, PORT, timeout=wait)
    if why is not None:
        _stop(server)
        return why
    return server


def _client(device: str, cfg: Any, server: str, timeout: float) -> str:
    """The client's report, or a line saying why there is none."""
    try:
        r = subprocess.run(perftest_argv(device, cfg.rdma_qps, cfg.rdma_bidirectional, cfg.rdma_gpu,
                                         server=server, port=PORT),
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"no report within {timeout:g} s"
    except OSError as e:
        return f"{TOOL} did not start: {e.strerror or e}"
    if r.returncode != 0:
        return f"exit {r.returncode}: {r.stderr.strip()[:200]}"
    return r.stdout


def _stop(server: subprocess.Popen) -> None:
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(5)
