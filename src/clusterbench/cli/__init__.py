"""The ``clusterbench`` command. Commands live one module each in ``clusterbench.cli.commands``;
every module there exposes ``commands`` (a list of click commands) and is found automatically.
A module holds the command named after it (``serve_metrics``: ``serve-metrics``; ``importcmd``:
``import``), and is imported only when that command runs or help lists every command: a command
pays for its own imports, not for all of them.

Errors end with one line on stderr and an exit code: 2 for usage errors, 1 for failures, 130
and 143 when SIGINT or SIGTERM stopped the command (129: SIGHUP, for measuring commands), 74
when standard output failed (closed or full). Set CLUSTERBENCH_DEBUG=1 to see tracebacks.
"""

from __future__ import annotations

import errno
import importlib
import os
import pkgutil
import signal
import sys
import threading
from types import FrameType

import click

from clusterbench import __version__
from clusterbench.errors import ClusterbenchError, CommittedWhenInterrupted
from clusterbench.output import OUTPUT_FAILED, discard_stdout, standard_streams, stdout_name, why
from clusterbench.printable import printable
from clusterbench.ranks.signals import Interrupted


class _Stopped(ClusterbenchError):
    """A command stopped by SIGINT or SIGTERM: one line, exit 128 + the signal."""

    def __init__(self, e: Interrupted) -> None:
        super().__init__(e.reason)
        self.exit_code = e.exit_code


def _command_name(module: str) -> str:
    return "import" if module == "importcmd" else module.replace("_", "-")


def _modules() -> dict[str, str]:
    """Command name -> its module's name, found without importing them."""
    from clusterbench.cli import commands

    return {_command_name(i.name): f"{commands.__name__}.{i.name}" for i in pkgutil.iter_modules(commands.__path__)}


# ``clusterbench --help`` lists the commands by workflow, as ``git help`` does, one line each,
# after a "start here" for each of the three things people come to do. A command in no group
# shows under "Other" with its own first sentence (tests/cli/test_cli.py fails on one).
WORKFLOWS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Measure (on this node; every run stored with its environment)", (
        ("run", "Collectives, stream and GEMM on this node: the default suite"),
        ("coll", "Collectives swept over sizes, as nccl-tests (algbw, busbw)"),
        ("stream", "Memory bandwidth: BabelStream's kernels"),
        ("gemm", "GEMM throughput per dtype (TFLOP/s)"),
        ("transfer", "Copies: host<->device, device<->device, all-to-all"),
        ("net", "TCP bandwidth and latency between hosts"),
        ("train", "Training throughput (FSDP2 on a synthetic transformer)"),
        ("ddp-comm", "Gradient sync of DistributedDataParallel"),
        ("infer-tp", "Tensor-parallel inference throughput (a toy model)"),
        ("preflight", "Fast health checks: GPUs, PCIe links, ECC, kernel log"),
        ("env", "This host's inventory, and what differs between two runs"),
    )),
    ("Judge (stored runs: against a profile, each other, their past)", (
        ("validate", "Judge runs against a pass/fail profile (exit 1: fail)"),
        ("compare", "A vs B, row by row (Welch's t-test)"),
        ("report", "An HTML page and a Markdown summary, verdict first"),
        ("trend", "Each host's history, and where it stepped"),
        ("baseline", "A profile from known-good runs"),
        ("scaling", "Throughput and efficiency across node counts"),
        ("theory", "The optimal all_reduce bandwidth of n nodes on a link"),
        ("predict", "A training step's time from the curves, and what bounds it"),
    )),
    ("Fleet (many nodes: launch, qualify, find the bad one, watch)", (
        ("qualify", "A profile's whole suite, validated, with report and JUnit"),
        ("launch", "A command across nodes: slurm, mpi, torchrun, k8s, dstack"),
        ("sweep", "Find the bad node: each node alone and in pairs"),
        ("serve-metrics", "/metrics for Prometheus, read from the database"),
    )),
    ("Results (the database: import, list, show, export)", (
        ("import", "The logs of nccl-tests, TransferBench, BabelStream and more"),
        ("results", "Stored runs: list, show, export, delete, tag, copy"),
        ("export", "Stored results for other systems (OpenMetrics)"),
    )),
)


# What to type first for each workflow: lines short enough for an 80-column terminal.
START_HERE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("qualify a new node", ("clusterbench preflight && clusterbench qualify --profile amd-mi300x-oem",)),
    ("find a slow node", ("clusterbench sweep --hosts 'gpu[01-16]'      (each node alone, then pairs)",
                          "clusterbench trend --since 30d               (each node's history)")),
    ("A/B two setups", ("clusterbench run --repeat 5 --tag env=a      (on setup A; on B: --tag env=b)",
                        "clusterbench compare env=a env=b",
                        "clusterbench report env=a env=b -o ab.html   (verdict, plots, what differs)")),
)


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(_MODULES))

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Usage and what the tool is, where to start, the commands by workflow, then options."""
        self.format_usage(ctx, formatter)
        self.format_help_text(ctx, formatter)
        with formatter.section("Start here"):
            for what, lines in START_HERE:
                formatter.write_text(f"{what}:")
                with formatter.indentation():
                    for line in lines:   # commands are not re-wrapped: they are typed as shown
                        formatter.write(f"{'':>{formatter.current_indent}}{line}\n")
        self.format_commands(ctx, formatter)
        click.Command.format_options(self, ctx, formatter)
        formatter.write_paragraph()
        formatter.write_text("'clusterbench COMMAND --help' tells more about each; README.md and docs/ "
                             "show examples.")

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands by workflow, one line each; any other under "Other" with the first
        sentence of its help (its module imported for it)."""
        known = set(self.list_commands(ctx))
        listed: set[str] = set()
        width = max(len(name) for name in known)   # one column for every section
        for title, rows in WORKFLOWS:
            listed.update(name for name, _ in rows)
            shown = [(name.ljust(width), line) for name, line in rows if name in known]
            if shown:
                with formatter.section(title):
                    formatter.write_dl(shown)
        rest = []
        for name in sorted(known - listed):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rest.append((name.ljust(width), cmd.get_short_help_str(formatter.width)))
        if rest:
            with formatter.section("Other"):
                formatter.write_dl(rest)

    def get_command(self, ctx: click.Context | None, cmd_name: str) -> click.Command | None:  # type: ignore[override]
        if cmd_name not in self.commands and cmd_name in _MODULES:
            for cmd in importlib.import_module(_MODULES[cmd_name]).commands:
                self.add_command(cmd)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        # click suggests among the commands loaded so far, which here (each imported when it
        # runs) is none: suggest among all of them, in click's words ("Did you mean 'coll'?")
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as e:
            raise click.exceptions.NoSuchCommand(e.command_name, possibilities=self.list_commands(ctx),
                                                 ctx=ctx) from None

    def invoke(self, ctx: click.Context) -> object:
        # Before click sees it: click would turn the interrupt into "Aborted!" after an empty line
        try:
            return super().invoke(ctx)
        except Interrupted as e:
            raise _Stopped(e) from None
        except CommittedWhenInterrupted as e:   # a command that does not say more about its change
            stop = _Stopped(Interrupted(e.signum))
            stop.args = (f"{stop} as a change was committed: it is in the database",)
            raise stop from None
        except KeyboardInterrupt:
            raise _Stopped(Interrupted(signal.SIGINT)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="clusterbench")
def cli() -> None:
    """Measure, validate and compare AI cluster hardware.

    Collectives with nccl-tests' definitions, memory bandwidth, GEMM, transfers, network and
    workloads on NVIDIA, AMD and CPU; every run is stored with its environment.
    """


_MODULES = _modules()


def all_commands() -> dict[str, click.Command]:
    """Every top-level command, by name (each module imported)."""
    return {name: cmd for name in cli.list_commands(None) if (cmd := cli.get_command(None, name)) is not None}  # type: ignore[arg-type]


# click 8.2+ raises this for a group called without a subcommand; older clicks print help.
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", None) or getattr(
    click.exceptions, "NoArgsIsHelp", click.exceptions.UsageError)


def _fail(message: str, code: int) -> None:
    # the message may quote a tag, a path or a log's text: one line, escaped; a standard error
    # that cannot take it (full, closed) must not change the exit code that says what happened
    try:
        print(f"clusterbench: error: {printable(message)}", file=sys.stderr)
    except OSError:
        pass
    sys.exit(code)


def _terminate(signum: int, _frame: FrameType | None) -> None:
    # SIGTERM ends a command as Ctrl-C does: its transactions roll back, one line, exit 143
    # (a measuring command catches it itself and stores what it measured)
    raise Interrupted(signum)


def _output_failed(e: OSError) -> None:
    name = stdout_name()
    discard_stdout()
    if e.errno == errno.EPIPE:
        # `| head -1`: the reader has what it wanted. As well-behaved Unix tools, no message (`cat`,
        # `grep` die of SIGPIPE silently). The status is OUTPUT_FAILED, not 0 and not 141:
        # non-zero as SIGPIPE's is, so `set -o pipefail` scripts see that not everything was
        # written, and the same code a benchmark whose run was stored but not all shown ends
        # with, so one code means "the output failed" whichever command and whatever the cause
        sys.exit(OUTPUT_FAILED)
    _fail(f"cannot write to {name}: {why(e)}", OUTPUT_FAILED)


def main(argv: list[str] | None = None) -> None:
    if threading.current_thread() is not threading.main_thread():  # signals are the main thread's
        _main(argv)
        return
    old = signal.signal(signal.SIGTERM, _terminate)
    # A closed terminal (SIGHUP) before a run has set its own handlers ended the command silently,
    # killed by the signal; under nohup it stays ignored
    hangup = getattr(signal, "SIGHUP", None)
    old_hangup = signal.getsignal(hangup) if hangup is not None else None
    if hangup is not None and old_hangup == signal.SIG_DFL:
        signal.signal(hangup, _terminate)
    try:
        with standard_streams() as watched:
            try:
                _main(argv)
            except SystemExit as e:
                # click ends a command whose output pipe closed with exit 1 itself: say it as ours
                if e.code == 1 and watched is not None and isinstance(watched.failed, BrokenPipeError):
                    discard_stdout()
                    sys.exit(OUTPUT_FAILED)
                raise
    finally:
        if signal.getsignal(signal.SIGTERM) is _terminate:  # (a run stopped by a signal ignores more)
            signal.signal(signal.SIGTERM, old)
        if hangup is not None and signal.getsignal(hangup) is _terminate:
            signal.signal(hangup, old_hangup)


def _invoke(argv: list[str] | None) -> object:
    """The command's return value, its output flushed: a full or closed output fails here, where
    ``_main`` says so in one line, not in a traceback at exit (the help of a bare group too)."""
    try:
        rc = cli.main(args=argv, prog_name="clusterbench", standalone_mode=False)
    except _NO_ARGS_IS_HELP as e:  # bare group: show its help, as click would
        click.echo(e.ctx.get_help() if e.ctx else "")
        rc = 2
    sys.stdout.flush()
    return rc


def _main(argv: list[str] | None) -> None:
    debug = bool(os.environ.get("CLUSTERBENCH_DEBUG"))
    try:
        rc = _invoke(argv)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        _fail("aborted", 130)
    except click.ClickException as e:
        _fail(e.format_message().replace("\n", " "), e.exit_code)
    except ClusterbenchError as e:
        if debug:
            raise
        _fail(str(e), e.exit_code)
    except Interrupted as e:
        _fail(e.reason, e.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted by SIGINT (Ctrl-C)", 130)
    except OSError as e:
        if isinstance(e, BrokenPipeError) or getattr(sys.stdout, "failed", None) is e:
            _output_failed(e)
        if debug:
            raise
        _fail(f"internal error: {type(e).__name__}: {e} (set CLUSTERBENCH_DEBUG=1 for details)", 1)
    except Exception as e:  # noqa: BLE001 - never a traceback for the user
        if debug:
            raise
        if isinstance(e, ValueError) and "embedded null" in str(e):
            # open() and os.stat() refuse a NUL in a file name (a shell cannot pass one, a
            # caller in-process or a file's text can): bad input, whichever option it came in
            _fail("a file name holds a NUL character (\\x00), which no file system allows", 2)
        if isinstance(e, ImportError) and (e.name or "").split(".")[0] == "torch":
            # an analysis-only install (no torch) asked for a benchmark, or torch failed to load
            from clusterbench.envinfo.torchcheck import torch_unusable

            _fail(torch_unusable(e), 2)
        _fail(f"internal error: {type(e).__name__}: {e} (set CLUSTERBENCH_DEBUG=1 for details)", 1)
    sys.exit(rc if isinstance(rc, int) else 0)
