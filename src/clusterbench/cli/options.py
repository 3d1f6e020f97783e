"""Option bundles shared by every command, so ``--json``, ``--db``, ``--tag`` and the rank
options mean the same thing everywhere."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from clusterbench.dist.context import DistOptions
from clusterbench.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])


def _compose(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(f: F) -> F:
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print one JSON object per measurement instead of a table.")
db_option = click.option("--db", "db", type=click.Path(dir_okay=False), envvar="CLUSTERBENCH_DB",
                         default=None, help="Results database (default ~/.local/share/clusterbench/results.db; env CLUSTERBENCH_DB).")
tag_option = click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE",
                          help="Tag the stored run (repeatable), e.g. --tag env=container.")
repeat_option = click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
                             help="Run the benchmark N times; each repetition is stored as its own run in one group.")

dist_options = _compose(
    click.option("--np", "np", type=int, default=None,
                 help="Ranks to start on this host (default: one per visible GPU, or 2 CPU ranks). Ignored under torchrun/srun/mpirun."),
    click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
                 help="Device type; cuda also means ROCm GPUs."),
    click.option("--backend", type=click.Choice(["auto", "nccl", "gloo"]), default="auto", show_default=True,
                 help="Process-group backend; nccl is RCCL on ROCm."),
    click.option("--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
                 help="Seconds a rank may go without progress before the run is ended."),
    click.option("--telemetry-interval", type=click.FloatRange(min=0), default=1.0, show_default=True,
                 metavar="SECONDS",
                 help="Sample GPU power/temperature/clocks and host CPU every SECONDS during the run (0: off)."),
)

store_options = _compose(json_option, db_option, tag_option)


def parse_tags(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    tags: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"invalid tag {item!r}: expected KEY=VALUE")
        tags[key.strip()] = value.strip()
    return tags


def dist_from(kwargs: dict[str, Any]) -> DistOptions:
    return DistOptions(device=kwargs["device"], backend=kwargs["backend"], timeout=kwargs["timeout"],
                       telemetry_interval=kwargs.get("telemetry_interval", 1.0))


def command_line() -> list[str]:
    return ["clusterbench", *sys.argv[1:]]
