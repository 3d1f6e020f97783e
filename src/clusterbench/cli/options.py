"""Option bundles shared by every command, so ``--json``, ``--db``, ``--tag``, ``--repeat`` and
the rank options mean the same thing everywhere. A bundle hands the command one typed value
(``out: RunOutput``, ``ranks: RankOptions``) instead of loose keyword arguments."""

from __future__ import annotations

import functools
import os
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from clusterbench.cli.bounds import (
    MAX_INT32,
    MAX_PROCS_PER_NODE,
    MAX_REPEAT,
    NON_NEGATIVE,
    Count,
    FiniteFloat,
)
from clusterbench.errors import UsageError
from clusterbench.printable import not_utf8, printable

F = TypeVar("F", bound=Callable[..., Any])


def _compose(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(f: F) -> F:
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


def json_option(prints: str) -> Callable[[F], F]:
    """``--json``, with what this command prints: every line is one JSON object with a ``kind``
    (docs/json.md), e.g. ``json_option("a `criterion` line per criterion, then a `summary`")``."""
    return click.option("--json", "as_json", is_flag=True,
                        help=f"Print JSON lines instead of text: {prints} (docs/json.md).")


RUN_LINES = ("a `measurement` line per result, then the `run` record (and `efficiency` lines when the run "
             "has a link speed)")


def _since(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from clusterbench.store.selectors import parse_since

    try:
        return parse_since(value) if value else None
    except UsageError as e:
        raise click.BadParameter(str(e), ctx, param) from None


def since_option(f: F) -> F:
    """``--since``: only runs started in a time window (the selector grammar's time filter); the
    command gets the UTC timestamp it means."""
    return click.option("--since", default=None, metavar="AGE|DATE", callback=_since,
                        help="Only runs started since then: 7d, 12h, 30m, 2w, or an ISO date/time (UTC).")(f)


def refuse_together(*names: str) -> None:
    """One line, exit 2, when more than one of these options was given on the command line
    (``--csv`` and ``--json``): a command never silently picks one of two contradicting options."""
    ctx = click.get_current_context()
    given = []
    for name in names:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
            param = next((p for p in ctx.command.params if p.name == name), None)
            opts = list(param.opts) if param is not None else []
            given.append(next((o for o in opts if o.startswith("--")), opts[0] if opts else name))
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)} cannot be used together: give one")


class NoNulText(click.ParamType):
    """Text that is stored or shown (a host name, a page title): a NUL in it is refused, as the
    store refuses it in what it keeps as text (no command line from a shell can hold one)."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        value = str(value)
        if "\x00" in value:
            self.fail("holds a NUL character (\\x00), which no command line from a shell can", param, ctx)
        return value


NO_NUL = NoNulText()


class DatabaseParam(click.ParamType):
    """``--db``: an SQLite file path, ``sqlite:///PATH`` or ``postgresql://USER@HOST:PORT/DB``.
    A URL of any other scheme is refused here, before anything runs, instead of becoming a
    directory named ``mysql:``; the value itself goes on as given. ``writes``: the command may
    create the database, so an SQLite file whose directory does not exist is refused here too
    (a command that only reads says there is no database there)."""

    name = "path|url"

    def __init__(self, writes: bool = False) -> None:
        self.writes = writes

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from clusterbench.store.location import (
            SQLITE,
            missing_directory,
            missing_directory_text,
            parse,
        )

        value = os.fspath(value)
        if value == "":
            self.fail("empty: give a file path or a database URL", param, ctx)
        if "\x00" in value:  # (pathlib's is_dir says False, and opening it raises ValueError)
            self.fail("holds a NUL character (\\x00), which no file name or URL can", param, ctx)
        try:
            where = parse(value)
        except UsageError as e:
            self.fail(str(e), param, ctx)
        if where.kind != SQLITE or where.path is None:
            return value
        missing = missing_directory(where) if self.writes else None
        if missing is not None:   # here, before any rank starts, on every rank alike
            self.fail(missing_directory_text(where, missing), param, ctx)
        try:
            mode = where.path.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):  # a new database; a bad parent says so on open
            return value
        except OSError as e:  # a name longer than the file system takes, a loop of links
            self.fail(f"{where.display}: {e.strerror or e}", param, ctx)
        if stat.S_ISDIR(mode):
            self.fail(f"{where.display} is a directory", param, ctx)
        if not stat.S_ISREG(mode):
            # SQLite would fail with "disk I/O error" after making DEVICE-journal beside it (in /dev)
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
            self.fail(f"{where.display} is {kind}, not a database file", param, ctx)
        return value


def _use_passfile(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if not value:
        return
    mode = os.stat(value).st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        # libpq would ignore it with a warning and then fail to authenticate: say why now
        raise click.BadParameter(f"{value} is accessible by group or others, so libpq ignores it: "
                                 f"chmod 600 {value}", ctx, param)
    # libpq reads the passfile named here for every connection this process (and the ranks it
    # starts) makes; the password itself never appears on a command line.
    os.environ["PGPASSFILE"] = os.path.abspath(value)


db_passfile_option = click.option(
    "--db-passfile", type=click.Path(exists=True, dir_okay=False), expose_value=False,
    callback=_use_passfile, metavar="FILE",
    help="PostgreSQL password file (libpq's PGPASSFILE format: host:port:db:user:password, mode 600).")
DB_HELP = ("Results database: a file path (default ~/.local/share/clusterbench/results.db) "
           "or postgresql://USER@HOST:PORT/DBNAME; env CLUSTERBENCH_DB.")
db_option = _compose(
    click.option("--db", "db", type=DatabaseParam(), envvar="CLUSTERBENCH_DB", default=None, help=DB_HELP),
    db_passfile_option,
)
# --db of a command that stores runs (and may create the database): a file in a directory that
# does not exist is a typo, refused before anything runs
writer_db_option = _compose(
    click.option("--db", "db", type=DatabaseParam(writes=True), envvar="CLUSTERBENCH_DB", default=None,
                 help=DB_HELP + " A new file's directory must exist (but the default's)."),
    db_passfile_option,
)


# A tag is a short label people type and read in tables; longer text is a note, not a tag, and
# would make every listing of the run unreadable (and a selector no command line can hold).
MAX_TAG_KEY = 256
MAX_TAG_VALUE = 4096


def _shown_tag(item: str) -> str:
    # a refused tag may be a megabyte long: the error line quotes its start
    return repr(item if len(item) <= 60 else item[:60] + "...")


def parse_tags(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``KEY=VALUE`` words as tags; every tag stored by ``--tag`` or ``results tag`` passes here.
    Space around the key and the value is dropped; a refused tag is one UsageError line. A key
    given twice must have one value: which of two contradicting values was meant is not ours to
    guess (the same value twice is only said twice)."""
    tags: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not_utf8(item):
            raise UsageError(f"invalid tag {_shown_tag(item)}: not UTF-8 text")
        if not sep or not key:
            raise UsageError(f"invalid tag {_shown_tag(item)}: expected KEY=VALUE")
        if not value:
            raise UsageError(f"invalid tag {_shown_tag(item)}: empty value: expected KEY=VALUE")
        if printable(item) != item:   # a newline or an escape sequence would forge lines where it is shown
            raise UsageError(f"invalid tag {_shown_tag(item)}: holds a control character")
        if len(key) > MAX_TAG_KEY:
            raise UsageError(f"invalid tag {_shown_tag(item)}: the key is {len(key)} characters long, "
                             f"at most {MAX_TAG_KEY}")
        if len(value) > MAX_TAG_VALUE:
            raise UsageError(f"invalid tag {_shown_tag(item)}: the value is {len(value)} characters long, "
                             f"at most {MAX_TAG_VALUE}")
        if key == "link_speed":
            # judged whenever the run is read (results show, validate, report): a rate no judge
            # can read stored the run and then failed every read of it, the command's own
            # table included ("internal error while printing")
            from clusterbench.judge.theory import parse_link

            try:
                parse_link(value)
            except UsageError as e:
                raise UsageError(f"invalid tag {_shown_tag(item)}: {e}") from None
        if tags.get(key, value) != value:
            raise UsageError(f"tag {_shown_tag(key)} given twice with different values, "
                             f"{_shown_tag(tags[key])} and {_shown_tag(value)}: give one")
        tags[key] = value
    return tags


def _check_tags(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    # At parse time, so a command line checked before it runs elsewhere (qualify's steps, launch's
    # remote command) refuses a bad tag then, not on every node later.
    parse_tags(value)
    return value


tag_option = click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", callback=_check_tags,
                          help="Tag the stored run (repeatable), e.g. --tag env=container.")
quiet_option = click.option("--quiet", "-q", "quiet", is_flag=True,
                            help="No progress on stderr (shown only when stderr is a terminal), no line "
                                 "saying how long a run of over a minute will take, and no "
                                 "'# run N stored' line; errors still print.")
repeat_option = click.option("--repeat", type=Count(1, MAX_REPEAT), default=1, show_default=True,
                             help="Run the benchmark N times; each repetition is stored as its own run in one group.")

@dataclass(frozen=True)
class RunOutput:
    """Where a benchmark's runs go and how they print: ``--json``, ``--db``, ``--tag``, ``--repeat``."""

    as_json: bool = False
    db: str | None = None
    tags: dict[str, str] | None = None
    repeat: int = 1
    quiet: bool = False


def run_output(f: F) -> F:
    """``--json --db --tag --repeat --quiet`` as one ``out: RunOutput`` argument."""
    @functools.wraps(f)
    def command(*args: Any, as_json: bool, db: str | None, tags: tuple[str, ...], repeat: int,
                quiet: bool, **kwargs: Any) -> Any:
        return f(*args, out=RunOutput(as_json, db, parse_tags(tags), repeat, quiet), **kwargs)

    return _compose(json_option(RUN_LINES), writer_db_option, tag_option, repeat_option, quiet_option)(command)  # type: ignore[return-value]


_RANK_OPTIONS = (
    click.option("--np", "np", type=Count(0, MAX_PROCS_PER_NODE), default=None,
                 help="Ranks to start on this host (default: one per visible GPU, or 2 CPU ranks). Ignored under torchrun/srun/mpirun."),
    click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
                 help="Device type; cuda also means ROCm GPUs."),
    click.option("--backend", type=click.Choice(["auto", "nccl", "gloo"]), default="auto", show_default=True,
                 help="Process-group backend; nccl is RCCL on ROCm."),
    click.option("--timeout", type=FiniteFloat(1), default=300.0, show_default=True,
                 help="Seconds a rank may go without progress before the run is ended."),
    click.option("--telemetry-interval", type=NON_NEGATIVE, default=1.0, show_default=True,
                 metavar="SECONDS",
                 help="Sample GPU power/temperature/clocks and host CPU every SECONDS during the run (0: off)."),
)


def rank_options(f: F) -> F:
    """``--np --device --backend --timeout --telemetry-interval`` as ``np`` and ``ranks: RankOptions``."""
    @functools.wraps(f)
    def command(*args: Any, device: str, backend: str, timeout: float, telemetry_interval: float,
                **kwargs: Any) -> Any:
        # imported when the command runs: --help and the commands that measure nothing skip it
        from clusterbench.ranks.context import RankOptions

        return f(*args, ranks=RankOptions(device, backend, timeout, telemetry_interval), **kwargs)

    return _compose(*_RANK_OPTIONS)(command)  # type: ignore[return-value]


def node_options(f: F) -> F:
    """The node benchmarks' ``--device --devices --timeout --telemetry-interval``: one rank per
    selected device, as ``devices`` and ``ranks: RankOptions``."""
    @functools.wraps(f)
    def command(*args: Any, device: str, timeout: float, telemetry_interval: float, **kwargs: Any) -> Any:
        from clusterbench.ranks.context import RankOptions

        return f(*args, ranks=RankOptions(device, "auto", timeout, telemetry_interval), **kwargs)

    return _compose(
        click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto",
                     show_default=True, help="Device type; cuda also means ROCm GPUs."),
        click.option("--devices", default=None, metavar="all|0,1",
                     help="Devices to run on at once, one rank each (default: all GPUs; CPU is one device)."),
        _RANK_OPTIONS[3], _RANK_OPTIONS[4],
    )(command)  # type: ignore[return-value]


def fs_text(arg: str) -> str:
    """A path or command-line argument as text every database stores and every terminal shows:
    bytes that are not UTF-8 (which Python keeps as lone surrogates) escaped as ``\\xff``."""
    try:
        return os.fsencode(arg).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:   # a surrogate that no byte maps to: text from a program, not the OS
        return arg.encode("utf-8", "backslashreplace").decode("utf-8")


def command_line() -> list[str]:
    """This process's command line as a run records it and every output shows it (the ``run``
    line of ``--json``, the stored run): text, with the password of any database URL in it
    stripped (``store.location.redact``, the one redaction)."""
    return list(_command_line(tuple(sys.argv[1:])))


def shown_argv(words: Sequence[str]) -> list[str]:
    """A command line as printed or written for people and tools to read (qualify's steps, its
    JUnit file, a dry run): every word as ``command_line`` records it, no password in it."""
    from clusterbench.store.location import redact

    return [redact(fs_text(w)) for w in words]


@functools.lru_cache(maxsize=4)   # asked for once per run of an import of thousands
def _command_line(args: tuple[str, ...]) -> tuple[str, ...]:
    return ("clusterbench", *shown_argv(args))


# a transformer's shape, as train runs it and predict models it (bench/workloads/model.py): each
# overrides the --preset's value
_MODEL_SHAPE = (
    ("--layers", "Transformer blocks."),
    ("--hidden", "Model width (FFN defaults to 4x)."),
    ("--heads", "Attention heads (must divide --hidden)."),
    ("--kv-heads", "Key/value heads for grouped-query attention."),
    ("--seq", "Sequence length in tokens."),
    ("--vocab", "Vocabulary size."),
    ("--ffn", "MLP inner width."),
)


def model_shape_options(f: F) -> F:
    for name, text in reversed(_MODEL_SHAPE):
        f = click.option(name, type=Count(0, MAX_INT32), default=None, help=text)(f)
    return f
