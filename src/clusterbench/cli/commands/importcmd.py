"""``clusterbench import``: read the logs of the standard tools into the results store."""

from __future__ import annotations

import sys

import click

from clusterbench.cli.bounds import Count
from clusterbench.cli.options import (
    NO_NUL,
    command_line,
    fs_text,
    json_option,
    parse_tags,
    tag_option,
    writer_db_option,
)
from clusterbench.errors import Stopped
from clusterbench.ingest import TOOLS, ImportedRun
from clusterbench.ingest.load import ImportOptions, import_files
from clusterbench.printable import printable
from clusterbench.ranks.signals import describe
from clusterbench.records import COMPLETE, Run
from clusterbench.report.jsonl import (
    dumps,
    emit,
    emit_all,
    note_line,
    run_line,
    run_objects,
    summary_line,
)
from clusterbench.units import id_ranges

MAX_ERRORS_SHOWN = 3


def _summary(path: str, item: ImportedRun, dry_run: bool) -> list[str]:
    run = item.run
    benches = item.benchmarks()
    where = "parsed (not stored)" if dry_run else f"run {run.id}"
    lines = [f"{path}: {where}: {run.source or run.meta.get('tool')} {','.join(benches) or '-'} "
             f"{run.status}, {len(item)} measurements"]
    if run.status != COMPLETE:
        shown = run.errors[:MAX_ERRORS_SHOWN]
        lines += [f"#   error: {e}" for e in shown]
        if len(run.errors) > len(shown):
            lines.append(f"#   ... {len(run.errors) - len(shown)} more error line(s): clusterbench results show")
    return lines


def _unstored_json(name: str, run: Run, item: ImportedRun) -> str:
    """A run parsed with --dry-run --json: its `run` line (it runs where the run was parsed)."""
    return dumps(run_line(run, file=name, stored=False, measurements=len(item),
                          benchmarks=item.benchmarks())) + "\n"


def _unstored_text(name: str, run: Run, item: ImportedRun) -> str:
    """A run parsed with --dry-run: its summary lines."""
    return "".join(printable(text) + "\n" for text in _summary(name, item, True))


class _Printer:
    """What ``import`` prints as it goes: a summary (or the JSON lines) per stored run, notes,
    the files skipped and the files that failed."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def stored(self, name: str, run: Run, item: ImportedRun) -> None:
        if not self.as_json:
            for text in _summary(name, item, False):
                print(printable(text))
        else:  # streamed: a log of thousands of runs is never held whole
            emit_all(run_objects(run, item.measurements, file=name, stored=True, measurements=len(item),
                                 benchmarks=item.benchmarks()))

    def shown(self, text: str) -> None:
        sys.stdout.write(text)

    def not_stored(self, name: str, text: str) -> None:
        if self.as_json:
            emit(note_line(text))
        else:
            print(printable(f"# note: {text}"), file=sys.stderr)

    def already_imported(self, name: str, text: str) -> None:
        if self.as_json:
            emit(note_line(text))
        else:
            print(printable(text))

    def failed(self, name: str, error: str) -> None:
        print(printable(f"clusterbench: error: {name}: {error}"), file=sys.stderr)


@click.command("import")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--tool", type=click.Choice(TOOLS), default=None,
              help="The tool that wrote the logs (default: detected from each file's content).")
@tag_option
@click.option("--host", type=NO_NUL, default=None, metavar="NAME",
              help="Host the logs come from, for logs that do not name their hosts.")
@json_option("per imported run, a `measurement` line per result and the `run` record with its status, "
             "errors, `file` and measurement count (with --dry-run only the `run` lines), then a "
             "`summary` with the files that failed and the exit code")
@click.option("--dry-run", is_flag=True, help="Parse and print, but store nothing.")
@click.option("--jobs", "-j", type=Count(1, 64), default=None, metavar="N",
              help="Processes that parse a large nccl-tests text log or file of clusterbench JSON lines "
                   "(one file of 24 MB or more) at once "
                   "(default: 2 where the machine has 2 or more CPUs; the runs are the same with any N).")
@writer_db_option
def import_cmd(paths: tuple[str, ...], tool: str | None, tags: tuple[str, ...], host: str | None,
               as_json: bool, dry_run: bool, jobs: int | None, db: str | None) -> int:
    """Import nccl-tests/rccl-tests, TransferBench, BabelStream, rocblas-bench, hipblaslt-bench,
    perftest, iperf3 -J, OSU and vLLM serving results, and clusterbench's own --json lines
    (PATH '-' reads standard input: kubectl logs POD | clusterbench import -).

    One run is stored per file, or per run when a file holds several (concatenated nccl-tests
    logs). A file is stored whole or not at all, in one transaction (an error, Ctrl-C, SIGTERM or
    a killed process leave none of its runs); a file already imported (same content, --tag,
    --host and --tool) is skipped,
    so an import that was stopped completes when run again. Files that cannot be read are
    listed, the others are still stored. Exit code: 0 when every run imported is complete; 1 when
    a run is failed or incomplete (its log ends early or reports a failed check); 2 when a file
    could not be read or recognised.
    """
    opts = ImportOptions(tool=tool, host=host, tags=parse_tags(tags), command=tuple(command_line()), jobs=jobs)
    # fs_text: what is stored and printed (a file name need not be UTF-8)
    result = import_files([(path, fs_text(path)) for path in paths], opts, _Printer(as_json), db=db,
                          dry_run=dry_run, render=_unstored_json if as_json else _unstored_text)
    failed = result.failed_files
    if failed and len(paths) > 1:
        print(f"clusterbench: error: {len(failed)} of {len(paths)} files not imported", file=sys.stderr)
    code = result.exit_code
    if result.output_error is not None:   # said once the transactions' outcome is known
        stored = "nothing is stored (--dry-run)" if dry_run else "every run imported is stored"
        print(printable(f"clusterbench: error: {result.output_error}; {stored}"), file=sys.stderr)
    elif as_json:
        emit(summary_line("import", files=len(paths), stored=not dry_run, runs=result.runs, counts=result.counts,
                          failed_files=failed, already_imported=result.already_imported, exit_code=code))
    if result.stopped is not None:   # the signal came as a file committed: what is stored, then the exit
        name, signum = result.stopped
        rest = len(paths) - [fs_text(p) for p in paths].index(name) - 1 if name in map(fs_text, paths) else 0
        raise Stopped(f"{describe(signum)} as {name} was stored: run(s) {id_ranges(result.runs) or 'none'} are stored"
                      + (f"; {rest} file(s) after it were not imported" if rest > 0 else ""), signum)
    return code


commands = [import_cmd]
