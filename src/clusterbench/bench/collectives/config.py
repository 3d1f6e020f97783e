"""The typed, validated configuration of a collective sweep (what ``clusterbench coll`` parsed)."""

from __future__ import annotations

from dataclasses import dataclass

from clusterbench.choices import parse_choices
from clusterbench.errors import UsageError
from clusterbench.families.collectives.spec import (
    DTYPE_ALIASES,
    DTYPES,
    OPS,
    REDOPS,
    op_name,
    sweep_sizes,
)
from clusterbench.units import parse_size

# torch: torch.distributed (gloo, or NCCL/RCCL under PyTorch's process group); nccl: the NCCL/RCCL
# library torch loaded, called directly as nccl-tests calls it (bench/collectives/direct.py)
ENGINES = ("torch", "nccl")

MAX_ROWS = 10_000  # a sweep longer than this is a typo (e.g. -i 1 up to 1G), not a benchmark


@dataclass(frozen=True)
class CollConfig:
    ops: tuple[str, ...]
    dtypes: tuple[str, ...] = ("float",)
    redops: tuple[str, ...] = ("sum",)
    minbytes: int = 8
    maxbytes: int = 32 << 20
    stepfactor: int = 2
    stepbytes: int = 1 << 20
    iters: int = 20
    warmup_iters: int = 5
    check: int = 1          # check iterations; 0 turns the correctness check off
    root: int = 0
    average: int = 1        # 0 rank 0, 1 mean, 2 min, 3 max over ranks
    cycles: int = 1         # -N: run the whole sweep this many times
    graph: int = 0          # -G: replay a CUDA/HIP graph of the iters loop this many times (0: no graph)
    engine: str = "torch"   # ENGINES

    def sizes(self) -> list[int]:
        return sweep_sizes(self.minbytes, self.maxbytes, self.stepfactor, self.stepbytes)


def _runnable_op(word: str) -> str | None:
    op = op_name(word)
    return op if op in OPS else None


def _dtype(word: str) -> str | None:
    name = DTYPE_ALIASES.get(word.lower(), word.lower())
    return name if name in DTYPES else None


def parse_ops(text: str) -> tuple[str, ...]:
    return parse_choices(text, OPS, "collective", _runnable_op)


def parse_dtypes(text: str) -> tuple[str, ...]:
    return parse_choices(text, tuple(DTYPES), "datatype", _dtype)


def parse_redops(text: str) -> tuple[str, ...]:
    return parse_choices(text, REDOPS, "reduction op")


def coll_config(op: str, *, minbytes: str | int = 8, maxbytes: str | int = "32M",
                 stepfactor: int | None = None, stepbytes: str | int | None = None, iters: int = 20,
                 warmup_iters: int = 5, check: int = 1, datatype: str = "float", redop: str = "sum",
                 root: int = 0, average: int = 1, cycles: int = 1, graph: int = 0,
                 engine: str = "torch") -> CollConfig:
    """Validate user input into a ``CollConfig``; every problem is a one-line ``UsageError``."""
    lo = parse_size(minbytes, "minbytes (-b)")
    hi = parse_size(maxbytes, "maxbytes (-e)")
    if lo > hi:
        raise UsageError(f"invalid sizes: minbytes (-b) {lo} is larger than maxbytes (-e) {hi}")
    if stepfactor is not None and stepfactor > 1 and stepbytes is not None:
        raise UsageError(f"-f/--stepfactor {stepfactor} and -i/--stepbytes cannot be used together: "
                         "-i is the step of an additive sweep (-f 1)")
    step = parse_size(stepbytes, "stepbytes (-i)") if stepbytes is not None else 1 << 20
    # nccl-tests adds -i when -f is 1; given -i alone, the user means an additive sweep.
    factor = stepfactor if stepfactor is not None else (1 if stepbytes is not None else 2)
    if factor < 1:
        raise UsageError(f"invalid stepfactor (-f) {factor}: must be at least 1")
    if factor > 1 and lo == 0:
        raise UsageError("minbytes (-b) 0 with a step factor never grows: use -b 1 or more, or -f 1 -i N")
    if factor == 1 and step < 1:
        raise UsageError("stepbytes (-i) must be at least 1 when the step factor (-f) is 1")
    if factor == 1 and (hi - lo) // step + 1 > MAX_ROWS:
        raise UsageError(f"the sweep {lo}..{hi} by {step} bytes has more than {MAX_ROWS} sizes")
    for name, value, low in (("iters (-n)", iters, 1), ("warmup_iters (-w)", warmup_iters, 0),
                             ("check (-c)", check, 0), ("run_cycles (-N)", cycles, 1), ("root (-r)", root, 0),
                             ("cudagraph (-G)", graph, 0)):
        if value < low:
            raise UsageError(f"invalid {name} {value}: must be at least {low}")
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}: expected {' or '.join(ENGINES)}")
    if average not in (0, 1, 2, 3):
        raise UsageError(f"invalid average (-a) {average}: expected 0 (rank 0), 1 (avg), 2 (min) or 3 (max)")
    return CollConfig(
        ops=parse_ops(op), dtypes=parse_dtypes(datatype), redops=parse_redops(redop),
        minbytes=lo, maxbytes=hi, stepfactor=factor, stepbytes=step, iters=iters,
        warmup_iters=warmup_iters, check=check, root=root, average=average, cycles=cycles, graph=graph,
        engine=engine,
    )
