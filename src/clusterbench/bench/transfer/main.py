"""The transfer benchmark: run the planned matrices and config tests in one process, report
per-pair bandwidth, then each matrix's row totals and average."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterbench.bench import devices as devs
from clusterbench.bench.transfer import engine
from clusterbench.bench.transfer.matrices import Planned
from clusterbench.envinfo.software import cpu_model
from clusterbench.families.transfer.spec import BANDWIDTH, BENCHMARK
from clusterbench.ranks.context import RankContext
from clusterbench.records import Measurement


@dataclass(frozen=True)
class TransferConfig:
    planned: tuple[Planned, ...]
    iterations: int = 10
    warmups: int = 3
    check: bool = True
    notes: tuple[str, ...] = ()         # tests skipped before the run (devices this host lacks)
    device_type: str = "cpu"            # cpu: host copies only, even where GPUs exist


def _bw(nbytes: int, seconds: list[float]) -> float:
    return nbytes / (sum(seconds) / len(seconds)) / 1e9


def _params(p: Planned, src: str, dst: str, nbytes: int, stat: str, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"src": src, "dst": dst, "direction": p.direction, "method": p.method,
                         "bytes": nbytes, "test": p.kind if p.kind != "config" else p.test.name}
    if p.host_memory:
        d["host_memory"] = p.host_memory
    d["stat"] = stat
    d.update(extra)
    return d


def test_rows(p: Planned, r: engine.TestResult, test_index: int | None = None) -> list[Measurement]:
    """Per-pair (or per-transfer) bandwidth of one finished test, and its aggregate. A config
    test's rows carry ``test_index`` (its place among the config tests, from 1): two tests may
    share a name (a comment line names a test), and one may be named like a matrix (``h2h``)."""
    ts = p.test.transfers
    rows: list[Measurement] = []
    numbered = {"test_index": test_index} if p.kind == "config" and test_index is not None else {}
    if p.kind == "config":
        for i, (t, secs) in enumerate(zip(ts, r.seconds)):
            rows.append(BANDWIDTH(BENCHMARK, _bw(t.bytes, secs), _params(
                p, t.src, t.dst, t.bytes, "pair", method=t.exe.name, executor=str(t.exe),
                transfer=i, subexecs=t.subexecs, **numbered)))
    elif p.direction == "bi":
        t = ts[0]
        total = sum(_bw(x.bytes, secs) for x, secs in zip(ts, r.seconds))
        rows.append(BANDWIDTH(BENCHMARK, total, _params(p, t.src, t.dst, t.bytes, "pair")))
    else:
        for t, secs in zip(ts, r.seconds):
            rows.append(BANDWIDTH(BENCHMARK, _bw(t.bytes, secs), _params(p, t.src, t.dst, t.bytes, "pair")))
    if len(ts) > 1 or p.kind == "config":
        total_bytes = sum(t.bytes for t in ts)
        extra = {"method": "+".join(sorted({t.exe.name for t in ts})), **numbered} if p.kind == "config" else {}
        rows.append(BANDWIDTH(BENCHMARK, _bw(total_bytes, r.wall), _params(p, "*", "*", total_bytes, "aggregate", **extra)))
    return rows


def summary_rows(p: Planned, pairs: list[Measurement]) -> list[Measurement]:
    """Row totals (per source) and the average over a matrix's pairs; the diagonal (local copies)
    counts only when the matrix has nothing else (one NUMA node, one GPU)."""
    off = [m for m in pairs if m.param("src") != m.param("dst")]
    use = off or pairs
    if not use:
        return []
    nbytes = int(use[0].param("bytes"))
    out = []
    bi = p.direction == "bi"  # a bidirectional pair is stored once (src < dst) and counts for both
    ends = [str(m.param("src")) for m in use] + ([str(m.param("dst")) for m in use] if bi else [])
    for src in dict.fromkeys(ends):
        total = sum(m.value for m in use if m.param("src") == src or (bi and m.param("dst") == src))
        out.append(BANDWIDTH(BENCHMARK, total, _params(p, src, "*", nbytes, "row_total")))
    out.append(BANDWIDTH(BENCHMARK, sum(m.value for m in use) / len(use), _params(p, "*", "*", nbytes, "average")))
    return out


def _group(p: Planned) -> tuple:
    return (p.kind, p.direction, p.method, p.host_memory, p.test.transfers[0].bytes)


def main(ctx: RankContext, cfg: TransferConfig) -> None:
    topo = engine.topology()
    threads = devs.cpu_threads()
    ctx.meta({"threads": threads, "gpus": topo.gpus, "numa_nodes": list(topo.numa_nodes),
              "device_names": _names(topo)})
    if topo.gpus == 0:
        ctx.note(f"no GPU: host memory copies, {threads} CPU thread(s), {len(topo.numa_nodes)} NUMA node(s)",
                 BENCHMARK)
    for note in cfg.notes:
        ctx.note(note, BENCHMARK)
    pending: list[Measurement] = []
    current: tuple | None = None
    last: Planned | None = None
    # every test; its work, the bytes its transfers move over all iterations
    plan = ctx.plan(BENCHMARK, "tests", [sum(t.bytes for t in p.test.transfers) for p in cfg.planned])
    for p in cfg.planned:
        if p.kind != "config" and _group(p) != current:
            _flush(ctx, last, pending)
            pending, current = [], _group(p)
        last = p
        r = engine.run_test(p.test, topo, cfg.iterations, cfg.warmups, cfg.check)
        ctx.progress()
        plan.step()
        if r.skipped:
            ctx.note(f"skipped {p.test.name}: {r.skipped}", BENCHMARK)
            continue
        for e in r.errors:
            ctx.fail(f"transfer check failed in {p.test.name}: {e}")
        rows = test_rows(p, r, p.index if p.kind == "config" else None)
        if p.kind == "config":
            ctx.record(rows)
        else:
            pending += rows
    _flush(ctx, last, pending)


def _flush(ctx: RankContext, p: Planned | None, pending: list[Measurement]) -> None:
    """A matrix is emitted whole, so its table prints complete with totals."""
    if p is None or not pending:
        return
    pairs = [m for m in pending if m.param("stat") == "pair"]
    ctx.record(pending + summary_rows(p, pairs))


def _names(topo: engine.Topology) -> dict[str, str]:
    import torch

    names = {f"G{i}": torch.cuda.get_device_name(i) for i in range(topo.gpus)}
    names.update({f"C{n}": cpu_model() for n in topo.numa_nodes})
    return names
