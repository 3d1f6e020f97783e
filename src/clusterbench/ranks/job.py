"""A job and what every rank does with it, however the ranks were started (``ranks/local.py``
starts them, or a launcher did: ``ranks/launched.py``): the rank's context, its header event,
its inventory and telemetry around the per-rank function, and one line for an exception."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clusterbench.envinfo.software import comm_env, software_versions
from clusterbench.errors import ClusterbenchError
from clusterbench.ranks import context as ctxmod
from clusterbench.ranks import hostinfo
from clusterbench.ranks.context import RankContext, RankOptions
from clusterbench.ranks.env import RankEnv
from clusterbench.records import COMPLETE, Event, Header

RankMain = Callable[[RankContext, Any], None]


@dataclass(frozen=True)
class Job:
    target: RankMain                  # a module-level function, called on every rank as fn(ctx, config)
    config: Any = None                # picklable
    options: RankOptions = field(default_factory=RankOptions)
    np: int | None = None             # local ranks to start when not under a launcher


@dataclass
class JobOutcome:
    role: str                      # "root": this process holds the results; "worker": it does not
    status: str = COMPLETE         # complete | incomplete | failed | interrupted
    errors: list[str] = field(default_factory=list)
    exit_code: int = 0

    @property
    def is_root(self) -> bool:
        return self.role == "root"


Sink = Callable[[Event], None]
OnAbort = Callable[[str, int | None], None]   # (message, the stop signal or None for --timeout)


def _header(ctx: RankContext) -> Header:
    return Header(ranks=ctx.world_size, hosts=list(ctx.hosts), devices=list(ctx.device_names),
                  device_type=ctx.device_type, backend=ctx.backend, launcher=ctx.env.launcher,
                  versions=software_versions(), env=comm_env())


def run_rank(env: RankEnv, job: Job, emit: Sink | None, progress: Callable[[int], None] | None) -> None:
    """The one code path of a rank: ``job.target`` between the header and the final barrier."""
    ctx = ctxmod.setup(env, job.options)
    ctx.emit_fn = emit
    ctx.progress_fn = progress
    try:
        ctx.emit(_header(ctx))
        hostinfo.record_inventory(ctx)
        sampler = hostinfo.start_sampler(ctx)
        try:
            job.target(ctx, job.config)
        except BaseException:
            if sampler is not None:
                sampler.stop()
            raise
        hostinfo.finish_sampler(ctx, sampler)
        ctx.barrier()
    finally:
        ctxmod.teardown()


def _text_of(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide which exception it was
        return ""


def describe_exception(exc: BaseException) -> tuple[str, int]:
    """One line for a rank's exception: its first line of text, capped (a message may be
    megabytes), and the exit code it stands for."""
    if isinstance(exc, ClusterbenchError):
        return short(_first_line(_text_of(exc))), exc.exit_code
    return short(f"{type(exc).__name__}: {_first_line(_text_of(exc))}".rstrip(": ")), 1


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def short(message: str) -> str:
    """A rank's message without PyTorch's advice that follows it, at most 240 characters."""
    first = message.split(". This is typically", 1)[0]
    return first if len(first) <= 240 else first[:237] + "..."
