"""The ``clusterbench`` command. Commands live one module each in ``clusterbench.cli.commands``;
every module there exposes ``commands`` (a list of click commands) and is found automatically.

Errors end with one line on stderr and an exit code: 2 for usage errors, 1 for failures.
Set CLUSTERBENCH_DEBUG=1 to see tracebacks.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys

import click

from clusterbench import __version__
from clusterbench.errors import ClusterbenchError
from clusterbench.printable import printable


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="clusterbench")
def cli() -> None:
    """Measure, validate and compare AI cluster hardware.

    Collectives with nccl-tests' definitions, memory bandwidth, GEMM, transfers, network and
    workloads on NVIDIA, AMD and CPU; every run is stored with its environment.
    """


def _register() -> None:
    from clusterbench.cli import commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        for cmd in getattr(module, "commands", []):
            cli.add_command(cmd)


_register()


# click 8.2+ raises this for a group called without a subcommand; older clicks print help.
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", None) or getattr(
    click.exceptions, "NoArgsIsHelp", click.exceptions.UsageError)


def _fail(message: str, code: int) -> None:
    # the message may quote a tag, a path or a log's text: one line, escaped
    print(f"clusterbench: error: {printable(message)}", file=sys.stderr)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    debug = bool(os.environ.get("CLUSTERBENCH_DEBUG"))
    try:
        rc = cli.main(args=argv, prog_name="clusterbench", standalone_mode=False)
    except _NO_ARGS_IS_HELP as e:  # bare group: show its help, as click would
        click.echo(e.ctx.get_help() if e.ctx else "")
        sys.exit(2)
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
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - never a traceback for the user
        if debug:
            raise
        if isinstance(e, ModuleNotFoundError) and (e.name or "").split(".")[0] == "torch":
            # an analysis-only install (no torch) asked for a benchmark
            from clusterbench.envinfo.torchcheck import TORCH_MISSING

            _fail(TORCH_MISSING, 2)
        _fail(f"internal error: {type(e).__name__}: {e} (set CLUSTERBENCH_DEBUG=1 for details)", 1)
    sys.exit(rc if isinstance(rc, int) else 0)
