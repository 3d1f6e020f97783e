"""Per-rank functions used by driver tests (imported by the ranks by module path)."""

from __future__ import annotations

import os
import signal
import time

import torch
import torch.distributed as dist

from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job, execute
from clusterbench.records import Measurement, Rows


def sum_ranks(ctx, config):
    t = torch.tensor([float(ctx.rank + 1)])
    for step in range(config.get("steps", 3)):
        dist.all_reduce(t)
        ctx.progress()
        ctx.record([Measurement("selftest", "value", float(t.item()), "", {"step": step})])
        t = torch.tensor([float(ctx.rank + 1)])


def die_after(ctx, config):
    for step in range(10):
        if ctx.rank == config["rank"] and step == config["step"]:
            if config.get("how") == "hang":
                time.sleep(3600)
            os._exit(9)
        t = torch.ones(4)
        dist.all_reduce(t)
        ctx.progress()
        ctx.record([Measurement("selftest", "value", float(t[0]), "", {"step": step})])


def raise_on(ctx, config):
    if ctx.rank == config["rank"]:
        raise ValueError("boom from a rank")
    dist.barrier()


def exit_after_rows(ctx, config):
    """Rank ``config["rank"]`` records ``config["rows"]`` rows, then exits at once (no flush)."""
    for step in range(config["rows"]):
        dist.all_reduce(torch.ones(2))
        ctx.progress()
        ctx.record([Measurement("selftest", "value", 1.0, "", {"step": step})])
    if ctx.rank == config["rank"]:
        os._exit(config.get("code", 3))
    dist.all_reduce(torch.ones(2))


def raise_unprintable(ctx, config):
    if ctx.rank == config["rank"]:
        raise UnprintableError()
    dist.barrier()


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise ValueError("no text")


def raise_huge(ctx, config):
    if ctx.rank == config["rank"]:
        raise RuntimeError("x" * 1_000_000)
    dist.barrier()


def send_unpicklable(ctx, config):
    ctx.meta({"callback": lambda: None})
    dist.barrier()
    ctx.record([Measurement("selftest", "value", 1.0, "", {})])


def record_value(ctx, config):
    dist.barrier()
    ctx.record([Measurement("selftest", "value", 1.0, "", {"step": 0})])
    ctx.record([Measurement("selftest", "value", config["value"], "", {"step": 1})])


def print_to_stdout(ctx, config):
    print("RANK-STDOUT-LINE", flush=True)
    dist.barrier()
    ctx.record([Measurement("selftest", "value", 1.0, "", {})])


def mismatched_collectives(ctx, config):
    """Rank 1 calls a different collective than its peers (a broadcast against an all_reduce)."""
    dist.barrier()
    ctx.record([Measurement("selftest", "value", 1.0, "", {"step": 0})])
    t = torch.ones(4)
    if ctx.rank == 1:
        dist.broadcast(t, src=0)
    else:
        dist.all_reduce(t)
    ctx.progress()
    ctx.record([Measurement("selftest", "value", float(t[0]), "", {"step": 1})])


def spin_holding_the_gil(ctx, config):
    """Rank ``config["rank"]`` records one row, then loops inside one C call that never lets
    another thread of its process run (its companion thread included)."""
    dist.barrier()
    ctx.record([Measurement("selftest", "value", 1.0, "", {"step": 0})])
    if ctx.rank == config["rank"]:
        sum(range(10**15))
    dist.barrier()


def spin_forever(ctx, config):
    """Rank ``config["rank"]`` loops in Python forever, calling ``ctx.progress()`` if told to."""
    dist.barrier()
    ctx.record([Measurement("selftest", "value", 1.0, "", {"step": 0})])
    if ctx.rank == config["rank"]:
        while True:
            if config.get("progress"):
                ctx.progress()
    dist.barrier()


def never_reach_barrier(ctx, config):
    """Rank ``config["rank"]`` sleeps before the first barrier its peers wait at."""
    if ctx.rank == config["rank"]:
        time.sleep(3600)
    dist.barrier()
    ctx.record([Measurement("selftest", "value", 1.0, "", {"step": 0})])


def steady_rows(ctx, config):
    """Rows forever, one per ``config["every"]`` seconds: a run to stop from outside."""
    step = 0
    while step < config.get("steps", 10**9):
        dist.all_reduce(torch.ones(2))
        ctx.progress()
        ctx.record([Measurement("selftest", "value", 1.0, "", {"step": step})])
        step += 1
        time.sleep(config.get("every", 0.05))


def sleep_handling_sigterm(ready) -> None:
    """A process that handles SIGTERM itself (as a rank's runtime may): exit code 143."""
    import signal

    signal.signal(signal.SIGTERM, lambda _s, _f: os._exit(143))
    ready.set()
    time.sleep(3600)


def slow_steps(ctx, config):
    """Per-rank function (imported by the ranks): a few steps long enough for several ticks."""
    for step in range(config["steps"]):
        time.sleep(config["sleep"])
        t = torch.ones(1)
        dist.all_reduce(t)
        ctx.progress()
        ctx.record([Measurement("selftest", "value", float(t.item()), "", {"step": step})])


def step_ok(ctx, config):
    dist.barrier()
    ctx.record([Measurement("selftest", "value", 1.0, "", {"step": "ok"})])
    ctx.progress()


def step_killed(ctx, config):
    dist.barrier()
    if ctx.rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.barrier()


def step_ctrl_c(ctx, config):
    dist.barrier()
    if ctx.rank == 0:
        os.killpg(os.getpgid(0), signal.SIGINT)   # Ctrl-C: the whole foreground process group
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.1)


def _run(target, config, np, timeout=30.0):
    events = []
    outcome = execute(Job(target, config, RankOptions(device="cpu", timeout=timeout), np=np), events.append)
    return outcome, events


def run_rows(target, config, np=2, timeout=20.0):
    """``target`` on ``np`` CPU ranks, no telemetry: the job's outcome and the Rows it sent."""
    events: list = []
    options = RankOptions(device="cpu", timeout=timeout, telemetry_interval=0)
    outcome = execute(Job(target, config, options, np=np), events.append)
    return outcome, [e for e in events if isinstance(e, Rows)]


SUITE_META = "suite"   # run.meta key of the steps (suite.SUITE_META)


def step_skips(ctx, config):
    ctx.record([Measurement("selftest", "value", 2.0, "", {"step": "skips"})])
    ctx.note("skipped tf32 on cpu: tf32 is a GPU tensor-core mode", "selftest")
