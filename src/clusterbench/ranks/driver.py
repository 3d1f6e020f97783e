"""Run a per-rank benchmark function on every rank and stream rank 0's events to one sink.

Two ways in, one code path per rank (``ranks/job.py``):
- under a launcher (torchrun, srun, mpirun), this process *is* a rank: it runs the function
  itself, and rank 0 feeds the sink (``ranks/launched.py``);
- otherwise the driver starts ``np`` local ranks (a forkserver that has imported torch once,
  so ranks start in milliseconds), relays rank 0's events to the sink as they arrive, and
  watches every rank: one that exits, raises, or makes no progress for ``timeout`` seconds
  ends the whole run, with the rank and host named. Events that arrived before the failure
  are kept, so the caller can store the finished rows as an incomplete run (``ranks/local.py``).

The per-rank function is a module-level function (pickled by reference for local ranks), called
as ``fn(ctx, config)`` on every rank. Here: how many local ranks a job gets, and ``execute``.
"""

from __future__ import annotations

import os

from clusterbench.envinfo.software import usable_cores
from clusterbench.errors import UsageError
from clusterbench.ranks import context as ctxmod
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.env import detect
from clusterbench.ranks.job import Job, JobOutcome, OnAbort, RankMain, Sink
from clusterbench.ranks.launched import run_launched

# _context and _stop (the fork server's context, stopping ranks) by their old names here too: the
# hang tests (tests/system/test_hangs.py) start a rank of their own through them
from clusterbench.ranks.local import _context, _stop, run_local  # noqa: F401
from clusterbench.ranks.signals import Interrupted
from clusterbench.records import INTERRUPTED


def default_np(options: RankOptions) -> int:
    device_type = ctxmod.resolve_device_type(options.device)
    return ctxmod.local_device_count(device_type) if device_type == "cuda" else 2


MAX_LOCAL_RANKS_ENV = "CLUSTERBENCH_MAX_LOCAL_RANKS"
RANKS_PER_CORE = 4


def max_local_ranks() -> tuple[int, str]:
    """How many ranks this host may start at once, and where that limit comes from: 4 per CPU
    core (each rank is a process with a PyTorch runtime), or ``CLUSTERBENCH_MAX_LOCAL_RANKS``."""
    text = os.environ.get(MAX_LOCAL_RANKS_ENV, "").strip()
    if text:
        try:
            limit = int(text)
        except ValueError:
            limit = 0
        if limit < 1:
            raise UsageError(f"{MAX_LOCAL_RANKS_ENV}={text!r}: expected a whole number of ranks, at least 1")
        return limit, f"{MAX_LOCAL_RANKS_ENV}={limit}"
    cores = usable_cores()
    return RANKS_PER_CORE * cores, f"{RANKS_PER_CORE} x {cores} CPU core(s); set {MAX_LOCAL_RANKS_ENV} to change it"


def check_local_ranks(np: int, options: RankOptions) -> None:
    """Refuse, before any rank starts, a number of local ranks this host cannot run: hundreds
    of processes on a few cores swap and time out instead of measuring anything."""
    if np < 1:
        raise UsageError(f"--np must be at least 1, got {np}")
    device_type = ctxmod.resolve_device_type(options.device)
    if device_type == "cuda" and np > ctxmod.local_device_count("cuda"):
        raise UsageError(f"--np {np} is larger than the {ctxmod.local_device_count('cuda')} visible GPUs")
    limit, why = max_local_ranks()
    if np > limit:
        raise UsageError(f"--np {np}: more local ranks than this host runs at once (at most {limit}: {why})")


def planned_world_size(np: int | None, options: RankOptions) -> int:
    """The ranks a job will have: the launcher's, else ``np``, else the default."""
    env = detect()
    if env is not None:
        return env.world_size
    n = np if np is not None else default_np(options)
    check_local_ranks(n, options)
    return n


def host_ranks(world: int) -> int:
    """Ranks that share this host's memory: the launcher's local ranks, else all local ranks."""
    env = detect()
    return env.local_world_size if env is not None else world


def execute(job: Job, sink: Sink, on_abort: OnAbort | None = None) -> JobOutcome:
    """Run ``job`` on every rank. Returns on every rank; only the root's outcome holds results.

    ``on_abort(message, signum)`` is called (from a watchdog thread, under a launcher) just
    before a hung process exits, so the caller can store what it has; ``signum``: the stop
    signal that could not reach the main thread, None for --timeout.
    """
    env = detect()
    if env is not None:   # the launcher's ranks, whatever job.np says (--np: "ignored under torchrun")
        return run_launched(env, job, sink, on_abort or (lambda _m, _s: None))
    np = job.np if job.np is not None else default_np(job.options)
    check_local_ranks(np, job.options)
    try:
        return run_local(job, sink, np)
    except Interrupted as e:  # before the ranks ran (they were stopped): nothing measured
        return JobOutcome("root", INTERRUPTED, [e.reason], exit_code=e.exit_code)


__all__ = ["Job", "JobOutcome", "RankMain", "Sink", "check_local_ranks", "default_np", "execute", "host_ranks",
           "max_local_ranks", "planned_world_size"]
