"""``clusterbench import``: read the logs of the standard tools into the results store."""

from __future__ import annotations

import gzip
import io
import os
import sys
from collections.abc import Iterator
from typing import IO

import click

from clusterbench.cli.options import command_line, db_option, json_option, parse_tags, tag_option
from clusterbench.errors import ClusterbenchError
from clusterbench.ingest import TOOLS, ImportedRun, iter_runs
from clusterbench.printable import printable
from clusterbench.records import COMPLETE, FAILED, INCOMPLETE, RUN_STATUSES
from clusterbench.report.jsonl import emit, emit_all, note_line, run_line, run_objects, summary_line
from clusterbench.store import Store

MAX_ERRORS_SHOWN = 3


def _stdin() -> IO[str]:
    """Standard input as text; undecodable bytes become U+FFFD, as for files."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # already text (a test harness, an embedding program)
        return sys.stdin
    return io.TextIOWrapper(buffer, encoding="utf-8", errors="replace", newline="")


def _runs_of(path: str, tool: str | None) -> Iterator[ImportedRun]:
    if path == "-":  # e.g. kubectl logs POD | clusterbench import -
        yield from iter_runs(_stdin(), tool, name="stdin")
        return
    if os.path.isdir(path):
        raise ClusterbenchError("is a directory")
    try:
        # errors="replace": junk bytes become U+FFFD, which the binary check then reports
        opener = gzip.open if path.endswith(".gz") else open  # rotated logs are often compressed
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as f:
            yield from iter_runs(f, tool, name=path[:-3] if path.endswith(".gz") else path)
    except (OSError, EOFError) as e:  # EOFError: a .gz file cut short
        raise ClusterbenchError(getattr(e, "strerror", None) or str(e) or "unreadable file") from None


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


@click.command("import")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--tool", type=click.Choice(TOOLS), default=None,
              help="The tool that wrote the logs (default: detected from each file's content).")
@tag_option
@click.option("--host", default=None, metavar="NAME",
              help="Host the logs come from, for logs that do not name their hosts.")
@json_option("per imported run, a `measurement` line per result and the `run` record with its status, "
             "errors, `file` and measurement count (with --dry-run only the `run` lines), then a "
             "`summary` with the files that failed and the exit code")
@click.option("--dry-run", is_flag=True, help="Parse and print, but store nothing.")
@db_option
def import_cmd(paths: tuple[str, ...], tool: str | None, tags: tuple[str, ...], host: str | None,
               as_json: bool, dry_run: bool, db: str | None) -> int:
    """Import nccl-tests/rccl-tests, TransferBench, BabelStream, rocblas-bench, hipblaslt-bench,
    perftest, iperf3 -J, OSU and vLLM serving results, and clusterbench's own --json lines
    (PATH '-' reads standard input: kubectl logs POD | clusterbench import -).

    One run is stored per file, or per run when a file holds several (concatenated nccl-tests
    logs). A file is stored whole or not at all; files that cannot be read are listed, the others
    are still stored. Exit code: 0 when every run imported is complete; 1 when a run is failed or
    incomplete (its log ends early or reports a failed check); 2 when a file could not be read or
    recognised.
    """
    run_tags = parse_tags(tags)
    store = None if dry_run else Store.open(db)
    if store is not None:
        # Each run is still one atomic transaction, but a commit does not wait for the disk,
        # which makes storing thousands of runs from one log feasible
        store.relax_durability()
    failed: list[dict[str, str]] = []
    statuses: dict[str, int] = {s: 0 for s in RUN_STATUSES}
    run_ids: list[int] = []
    try:
        for path in paths:
            stored: list[int] = []
            counted: dict[str, int] = {}
            try:
                for item in _runs_of(path, tool):
                    run = item.run
                    run.tags.update(run_tags)
                    if not run.command:  # only a re-imported clusterbench run has the command it ran
                        run.command = command_line()
                    if host and not run.hosts:
                        run.hosts = [host]
                    if store is not None:
                        stored.append(store.save_run_rows(run, item.store_rows()))
                    counted[run.status] = counted.get(run.status, 0) + 1
                    extra = dict(file=path, stored=store is not None, measurements=len(item),
                                 benchmarks=item.benchmarks())
                    if not as_json:
                        for text in _summary(path, item, dry_run):
                            print(printable(text))
                    elif dry_run:
                        emit(run_line(run, **extra))
                    else:  # streamed: a log of thousands of runs is never held whole
                        emit_all(run_objects(run, item.measurements, **extra))
            except (ClusterbenchError, KeyboardInterrupt) as e:
                if store is not None:  # a file is stored whole or not at all
                    for run_id in stored:
                        store.delete_run(run_id)
                if isinstance(e, KeyboardInterrupt):
                    raise
                if as_json and stored:
                    emit(note_line(f"{path}: run(s) {', '.join(map(str, stored))} printed above were removed "
                                   "again: a file is stored whole or not at all"))
                failed.append({"file": path, "error": str(e)})
                print(printable(f"clusterbench: error: {path}: {e}"), file=sys.stderr)
                continue
            run_ids += stored
            for status, n in counted.items():
                statuses[status] += n
    finally:
        if store is not None:
            store.close()
    if failed and len(paths) > 1:
        print(f"clusterbench: error: {len(failed)} of {len(paths)} files not imported", file=sys.stderr)
    code = 2 if failed else (1 if statuses[FAILED] or statuses[INCOMPLETE] else 0)
    if as_json:
        emit(summary_line("import", files=len(paths), stored=not dry_run, runs=run_ids, counts=statuses,
                          failed_files=failed, exit_code=code))
    return code


commands = [import_cmd]
