"""The default suite: what ``clusterbench run`` measures on this machine, one step after another
inside ONE job (one process group, one stored run).

Add a step by appending a ``SuiteEntry`` to ``SUITE``: a per-rank main (called as
``fn(ctx, config)`` on every rank, like any benchmark) and its config on CPU ranks and, where it
differs, on GPU ranks. Steps run in list order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clusterbench.bench.collectives import rank as collectives
from clusterbench.bench.collectives.config import CollConfig
from clusterbench.bench.gemm import main as gemm
from clusterbench.bench.gemm.main import GemmConfig
from clusterbench.bench.stream import main as stream
from clusterbench.bench.stream.main import StreamConfig
from clusterbench.families.collectives.spec import OPS
from clusterbench.ranks.context import RankContext
from clusterbench.records import Event, Failure, Note


@dataclass(frozen=True)
class SuiteEntry:
    name: str          # what the step measures, for people reading the list
    target: Callable[[RankContext, Any], None]   # run on every rank as fn(ctx, config)
    cpu: Any           # its config on CPU ranks
    gpu: Any = None    # its config on GPU ranks (None: the CPU config)

    def config_for(self, device_type: str) -> Any:
        return self.gpu if device_type == "cuda" and self.gpu is not None else self.cpu



# CPU ranks (gloo over loopback): a short sweep, the whole suite in about 20 s on 2 cores.
# GPUs: nccl-tests' usual -b 8 -e 256M -f 2 sweep.
SUITE: list[SuiteEntry] = [
    SuiteEntry(
        name="collectives",
        target=collectives.main,
        cpu=CollConfig(ops=OPS, minbytes=8, maxbytes=1 << 20, stepfactor=8, iters=20, warmup_iters=5),
        gpu=CollConfig(ops=OPS, minbytes=8, maxbytes=256 << 20, stepfactor=2, iters=20, warmup_iters=5),
    ),
    # Node benchmarks: every GPU at once (rank 0 alone on CPU). Stream as `clusterbench stream`
    # runs it by default: arrays of 2^25 elements or 4x the last-level cache, whichever is larger,
    # 100 iterations (2^22 doubles and 10 iterations measured the 32 MiB L3 of a 2-core VM: Copy
    # 47-80 GB/s where its memory gives 22). About 30 s on 2 cores; 2^27 on GPUs (BENCHMARKS.md).
    SuiteEntry(
        name="memory bandwidth (stream)",
        target=stream.main,
        cpu=StreamConfig(numtimes=100, strict_size=False),
        gpu=StreamConfig(sizes=(1 << 27,), numtimes=100, device_type="cuda", strict_size=False),
    ),
    SuiteEntry(
        name="gemm",
        target=gemm.main,
        cpu=GemmConfig(m=512, n=512, k=512, dtypes=("fp32", "bf16"), iterations=5, samples=3,
                       strict_size=False),
        gpu=GemmConfig(m=8192, n=8192, k=8192, dtypes=("fp32", "tf32", "bf16", "fp16", "fp8_e4m3"),
                       trans_b="T", device_type="cuda", strict_size=False),
    ),
]


SUITE_META = "suite"   # run.meta key: each step's name, status and what it skipped or failed


@dataclass
class _Step:
    """What one step of the suite came to, as rank 0 saw it through its events."""
    name: str
    status: str = "not run"      # not run, started (never finished: a rank died, a signal), done, failed
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def stored(self) -> dict[str, Any]:
        return {"step": self.name, "status": self.status, "failures": list(self.failures),
                "skipped": list(self.skipped)}

    @classmethod
    def from_stored(cls, d: dict[str, Any]) -> _Step:
        return cls(str(d.get("step")), str(d.get("status")), list(d.get("failures") or []),
                   list(d.get("skipped") or []))

    def line(self) -> str:
        why = self.failures[:1] or self.skipped[:1]
        more = len(self.failures or self.skipped) - 1
        detail = f" ({why[0]}{f'; and {more} more' if more > 0 else ''})" if why else ""
        count = f", {len(self.skipped)} note(s) of skipped rows" if self.skipped and self.status == "done" else ""
        return f"{self.name}: {self.status}{count}{detail}"


def summary(stored: list[Any]) -> str:
    """The suite's closing line from its steps as stored in ``run.meta[SUITE_META]``: live at the
    end of the suite, and by ``run`` for a run a dead rank or a signal ended first."""
    return "suite: " + "; ".join(_Step.from_stored(d).line() for d in stored if isinstance(d, dict))


def _is_skip(text: str) -> bool:
    # the families say why a row was not measured in a note that starts with the word
    return text.lower().startswith("skipped") or " skipped" in text.lower()


def main(ctx: RankContext, entries: list[SuiteEntry]) -> None:
    """Every step in order. Rank 0 stores each step's status in the run's meta as it goes (so a
    run cut short by a dead rank or a signal says which step it stopped in and which never ran)
    and ends with a note that says, step by step, what was done, failed or skipped and why."""
    steps = [_Step(e.name) for e in entries]
    emit = ctx.emit_fn
    current: list[_Step] = []

    def watch(event: Event) -> None:
        if current and isinstance(event, Failure):
            current[0].failures.append(event.reason)
        elif current and isinstance(event, Note) and _is_skip(event.text):
            current[0].skipped.append(event.text)
        if emit is not None:
            emit(event)

    def store() -> None:
        ctx.meta({SUITE_META: [s.stored() for s in steps]})

    store()
    ctx.emit_fn = watch if ctx.is_root else emit
    try:
        for entry, step in zip(entries, steps):
            step.status = "started"
            current[:] = [step]
            store()
            entry.target(ctx, entry.config_for(ctx.device_type))
            step.status = "failed" if step.failures else "done"
            current.clear()
            store()
            ctx.progress()
    finally:
        ctx.emit_fn = emit
    ctx.note(summary([s.stored() for s in steps]), SUITE_META)
