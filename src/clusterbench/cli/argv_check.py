"""A clusterbench command line parsed by the real CLI, without running it.

``qualify`` checks every step of a suite, and ``launch`` the command it will start on other
nodes, before anything runs: a typo there should be a usage error now, not a failed job on every
node later. The launch commands take the remote command after ``--`` as raw words; those words
are parsed in turn.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import Any

import click

from clusterbench.errors import UsageError
from clusterbench.launch.common import bench_command


def check_argv(argv: Sequence[str], what: str, values: bool = False) -> None:
    """Parse ``argv`` (a command line without ``clusterbench``) as the CLI would: unknown
    commands and options, bad types and choices are a UsageError naming ``what``. ``values``:
    also the values a command can check without this host's hardware (its ``check_params``),
    for a command whose failure would be blamed on the nodes that ran it (sweep, qualify)."""
    from clusterbench.cli import cli  # the root group (not a command's own, when qualify runs it)

    try:
        _parse(cli, list(argv), values)
    except click.ClickException as e:
        raise UsageError(f"{what}: {e.format_message()}") from None
    except UsageError as e:
        raise UsageError(f"{what}: {e}") from None


def _rest(ctx: click.Context) -> list[str]:
    with warnings.catch_warnings():  # click 8.2 keeps the subcommand in protected_args
        warnings.simplefilter("ignore", DeprecationWarning)
        return [*getattr(ctx, "protected_args", []), *ctx.args]


def parsed_command(argv: Sequence[str]) -> tuple[click.Command, dict[str, Any]]:
    """The command ``argv`` (checked by ``check_argv`` first) runs, and its parameters as that
    command will see them (defaults and environment variables included)."""
    from clusterbench.cli import cli

    cmd, ctx = _resolve(cli, list(argv))
    return cmd, dict(ctx.params)


def _resolve(root: click.Group, argv: list[str]) -> tuple[click.Command, click.Context]:
    # Without help options: a line that only prints help would pass for one that runs
    ctx = root.make_context("clusterbench", argv, help_option_names=[])
    cmd: click.Command = root
    rest = _rest(ctx)
    while isinstance(cmd, click.Group):
        if not rest:
            if cmd.invoke_without_command:   # `clusterbench env` runs as it is
                return cmd, ctx
            raise click.UsageError(f"{ctx.command_path} needs a command")
        name, sub, rest = cmd.resolve_command(ctx, rest)
        if sub is None:
            raise click.UsageError(f"unknown command {name!r}")
        ctx = sub.make_context(name or "", list(rest), parent=ctx)
        cmd = sub
        rest = _rest(ctx) if isinstance(sub, click.Group) else []
    return cmd, ctx


def _parse(root: click.Group, argv: list[str], values: bool = False) -> None:
    cmd, ctx = _resolve(root, argv)
    if isinstance(cmd, click.Group):   # a group that runs as it is (`clusterbench env`)
        return
    inner = next((p for p in cmd.params if p.name == "command" and p.nargs == -1
                  and isinstance(p.type, click.types.UnprocessedParamType)), None)
    module = sys.modules.get(getattr(cmd.callback, "__module__", "") or "")
    if inner is not None:   # launch: the command it starts elsewhere
        words = ctx.params.get("command") or ()
        # sweep runs its default test when none follows --; launch has none to run
        default = getattr(module, "DEFAULT_COMMAND", None)
        _parse(root, bench_command(words) if words or default is None else list(default), values)
    if not values:
        return
    # A command whose values can be checked without this host's hardware says so with a
    # ``check_params`` beside it (coll: sizes, ops, dtypes): `-b 1X` fails here, not on every node.
    check = getattr(module, "check_params", None)
    if callable(check):
        # In the line's context, as the command body runs: checks that ask click which options
        # the line gave (refuse_together: --float with --dtype) see this line, not the caller's
        with ctx.scope(cleanup=False):
            check(ctx.params)
