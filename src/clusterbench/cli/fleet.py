"""Options the judging commands share for running a fleet: ``--on-fail drain|taint``,
``--apply``, ``--undrain`` (take failing nodes out of the scheduler, resume them when they pass)
and ``--junit FILE`` (the verdicts for a CI system). validate, preflight, sweep and qualify use
them the same way; the work is done in ``launch.drain`` and ``report.junit``."""

from __future__ import annotations

import functools
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.launch import drain
from clusterbench.printable import printable

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class OnFail:
    """``--on-fail``, ``--apply``, ``--undrain`` as one value."""

    action: str | None = None     # drain (Slurm), taint (Kubernetes), or None
    apply: bool = False
    undrain: bool = False

    def check(self) -> None:
        if self.action is None and (self.apply or self.undrain):
            raise UsageError("--apply and --undrain need --on-fail drain (Slurm) or --on-fail taint (Kubernetes)")


def on_fail_options(f: F) -> F:
    """``--on-fail --apply --undrain`` as one ``on_fail: OnFail`` argument."""
    @functools.wraps(f)
    def command(*args: Any, on_fail_action: str | None, apply: bool, undrain: bool, **kwargs: Any) -> Any:
        of = OnFail(on_fail_action, apply, undrain)
        of.check()
        return f(*args, on_fail=of, **kwargs)

    for opt in reversed([
        click.option("--on-fail", "on_fail_action", type=click.Choice(drain.ON_FAIL), default=None,
                     help="Take failing nodes out of service: drain (Slurm scontrol) or taint "
                          "(Kubernetes). Prints the commands; --apply runs them."),
        click.option("--apply", is_flag=True, help="With --on-fail: run the commands (default: dry run)."),
        click.option("--undrain", is_flag=True,
                     help="With --on-fail: resume nodes that pass again and were drained (tainted) by "
                          "clusterbench; never a node taken out by someone else."),
    ]):
        command = opt(command)
    return command  # type: ignore[return-value]


def _junit_path(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    # `--junit "$JUNIT_FILE"` with the variable unset: an empty name would write nothing and exit
    # 0, and the CI job would find no verdicts
    if value is not None and not value.strip():
        raise UsageError("--junit: an empty file name")
    return value


junit_option = click.option("--junit", "junit", type=click.Path(dir_okay=False), default=None,
                            callback=_junit_path, metavar="FILE",
                            help="Also write the verdicts as JUnit XML (one test case each).")


def take_out(on_fail: OnFail, failed: dict[str, list[str]], passed: Sequence[str], as_json: bool,
             notes: Sequence[str] = ()) -> int:
    """Plan (and with --apply run) the drain/resume commands; print them. Returns 1 when an
    applied command failed, else 0."""
    if on_fail.action is None:
        return 0
    verdicts = [drain.Verdict(n, tuple(p)) for n, p in failed.items()]
    verdicts += [drain.Verdict(n) for n in passed if n not in failed] if on_fail.undrain else []
    actions = drain.plan(on_fail.action, verdicts, on_fail.undrain, need_tool=on_fail.apply)
    if on_fail.apply:
        drain.apply(actions)
    dry = not on_fail.apply
    if as_json:
        from clusterbench.report.jsonl import emit

        for a in actions:
            emit(a.to_dict(dry))
    else:
        out = sys.stdout
        what = "dry run, add --apply to run these" if dry else "applied"
        print(f"# --on-fail {on_fail.action} ({what}):", file=out)
        if not actions:
            print("# no node to act on", file=out)
        for a in actions:
            for argv in a.commands:
                line = shlex.join(argv) if dry or a.applied else f"# FAILED: {shlex.join(argv)}"
                print(printable(line), file=out)
            if a.note:
                print(printable(f"# {a.node}: {a.note}"), file=out)
            if a.error:
                print(printable(f"# {a.node}: {a.error}"), file=out)
    for n in notes:
        print(printable(f"# note: {n}"), file=sys.stderr)
    errors = [a for a in actions if a.error]
    if errors:
        raise ClusterbenchError("; ".join(f"{a.action} {a.node}: {a.error}" for a in errors))
    return 0


def node_name() -> str:
    """This node's name in the scheduler: Slurm's SLURMD_NODENAME inside a job, else the host
    name up to its first dot (how Slurm names nodes; an address stays whole)."""
    import ipaddress
    import os

    from clusterbench.envinfo.inventory import hostname

    if os.environ.get("SLURMD_NODENAME"):
        return os.environ["SLURMD_NODENAME"]
    name = hostname()
    try:
        ipaddress.ip_address(name)
        return name
    except ValueError:
        return name.split(".", 1)[0]
