"""``clusterbench import``: read the logs of the standard tools into the results store."""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from collections.abc import Iterator
from contextlib import nullcontext
from typing import IO

import click

from clusterbench.cli.options import command_line, db_option, json_option, parse_tags, tag_option
from clusterbench.errors import ClusterbenchError
from clusterbench.ingest import TOOLS, ImportedRun, iter_runs
from clusterbench.report.jsonl import run_lines
from clusterbench.store import Store


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
    except zlib.error as e:  # a .gz file with a valid header and damaged data
        raise ClusterbenchError(f"corrupt compressed data: {e}") from None


def _summary(path: str, item: ImportedRun, dry_run: bool) -> str:
    run = item.run
    benches = item.benchmarks()
    where = "parsed (not stored)" if dry_run else f"run {run.id}"
    return (f"{path}: {where}: {run.source or run.meta.get('tool')} {','.join(benches) or '-'} "
            f"{run.status}, {len(item)} measurements")


@click.command("import")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--tool", type=click.Choice(TOOLS), default=None,
              help="The tool that wrote the logs (default: detected from each file's content).")
@tag_option
@click.option("--host", default=None, metavar="NAME",
              help="Host the logs come from, for logs that do not name their hosts.")
@json_option
@click.option("--dry-run", is_flag=True, help="Parse and print, but store nothing.")
@db_option
def import_cmd(paths: tuple[str, ...], tool: str | None, tags: tuple[str, ...], host: str | None,
               as_json: bool, dry_run: bool, db: str | None) -> int:
    """Import nccl-tests/rccl-tests, TransferBench, BabelStream, rocblas-bench, hipblaslt-bench,
    perftest, iperf3 (-J or text), OSU and vLLM serving results, and clusterbench's own --json lines
    (PATH '-' reads standard input: kubectl logs POD | clusterbench import -).

    One run is stored per file, or per run when a file holds several (concatenated nccl-tests
    logs). A file is stored whole or not at all; files that cannot be read are listed, the others
    are still stored, and the exit code is 2 if any file failed.
    """
    run_tags = parse_tags(tags)
    store = None if dry_run else Store.open(db)
    if store is not None:
        # A file is one transaction (stored whole or not at all), and its commit does not wait
        # for the disk: storing thousands of runs from one log takes seconds
        store.relax_durability()
    failed = 0
    try:
        for path in paths:
            try:
                with store.transaction() if store is not None else nullcontext():
                    for item in _runs_of(path, tool):
                        run = item.run
                        run.tags.update(run_tags)
                        if not run.command:  # only a re-imported clusterbench run has the command it ran
                            run.command = command_line()
                        if host and not run.hosts:
                            run.hosts = [host]
                        if store is not None:
                            store.save_run_rows(run, item.store_rows())
                        if as_json:
                            for line in run_lines(run, item.measurements):
                                print(line)
                        else:
                            print(_summary(path, item, dry_run))
            except (ClusterbenchError, KeyboardInterrupt) as e:   # the file's transaction rolled back
                if isinstance(e, KeyboardInterrupt):
                    raise
                failed += 1
                print(f"clusterbench: error: {path}: {e}", file=sys.stderr)
    finally:
        if store is not None:
            store.close()
    if failed and len(paths) > 1:
        print(f"clusterbench: error: {failed} of {len(paths)} files not imported", file=sys.stderr)
    return 2 if failed else 0


commands = [import_cmd]
