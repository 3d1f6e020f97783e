"""``clusterbench results``: list, show, export, delete, tag and copy stored runs."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

import click

from clusterbench.cli.bounds import Count
from clusterbench.cli.options import (
    NO_NUL,
    DatabaseParam,
    db_option,
    db_passfile_option,
    json_option,
    parse_tags,
    refuse_together,
    since_option,
)
from clusterbench.errors import CommittedWhenInterrupted, Stopped, UsageError
from clusterbench.families import FAMILIES, family_of
from clusterbench.printable import printable
from clusterbench.ranks.signals import describe as stopped_by_words
from clusterbench.records import WARNINGS, Run
from clusterbench.report.csvout import write_csv
from clusterbench.report.jsonl import (
    emit,
    emit_all,
    measurement_line,
    run_line,
    run_objects,
    summary_line,
)
from clusterbench.report.terminal import render_run
from clusterbench.store import describe
from clusterbench.store.runs import delete_runs, iter_listed, iter_read_runs, tag_runs
from clusterbench.store.selectors import GRAMMAR, MAX_RUN_ID, tag_term

SELECTOR_HELP = f"RUN is {GRAMMAR} (see README, 'Selecting runs')."
_MEASURED_WIDTH = 30


@click.group("results")
def results() -> None:
    """Stored runs: list, show, export, delete, tag, copy."""


def tool_of(run: Run) -> str | None:
    """The tool that wrote an imported log (None for a run clusterbench measured)."""
    tool = run.meta.get("tool")
    return str(tool) if tool else None


def measured_text(benchmarks: list[str], tool: str | None) -> str:
    """What a run measured, short: its benchmarks, or per family when they do not fit
    (``collectives(7),stream,gemm``); an import's tool in brackets."""
    text = ",".join(benchmarks) or "-"
    if len(text) > _MEASURED_WIDTH:
        per: dict[str, list[str]] = {}
        for b in benchmarks:
            family = family_of(b)
            per.setdefault(family.name if family else b, []).append(b)
        order = {f.name: i for i, f in enumerate(FAMILIES)}
        text = ",".join(f"{name}({len(bs)})" if len(bs) > 1 else bs[0]
                        for name, bs in sorted(per.items(), key=lambda kv: order.get(kv[0], len(order))))
    return f"{text} [{tool}]" if tool else text


@results.command("list")
@json_option("a `run` line per run (the run record with `measurements`, `benchmarks`, `families` "
             "and `tool`)")
@db_option
@click.option("--limit", type=Count(1, MAX_RUN_ID), default=50, show_default=True)
@click.option("--benchmark", type=NO_NUL, default=None, metavar="NAME",
              help="Only runs that measured NAME: a benchmark (all_reduce, stream), a family "
                   "(collectives) or, for imports, the tool (rccl-tests).")
@since_option
def list_cmd(as_json: bool, db: str | None, limit: int, benchmark: str | None, since: str | None) -> None:
    """List runs, newest first, with what each measured."""
    listed = iter_listed(db, limit=limit, benchmark=benchmark, since=since)   # printed as read
    if as_json:
        for item in listed:
            families = sorted({f.name for f in map(family_of, item.benchmarks) if f is not None})
            emit(run_line(item.run, measurements=item.measurements, benchmarks=item.benchmarks,
                          families=families, tool=tool_of(item.run)))
        return
    print(f"{'id':>5}  {'started (UTC)':<24} {'measured':<{_MEASURED_WIDTH}} {'status':<10} {'ranks':>5} "
          f"{'meas':>6}  {'hosts':<24} tags")
    for item in listed:
        r = item.run
        hosts = ",".join(r.hosts)
        hosts = hosts if len(hosts) <= 24 else hosts[:21] + "..."
        tags = ",".join(tag_term(k, v) for k, v in r.tags.items())   # itself a selector
        what = measured_text(item.benchmarks, tool_of(r))
        ranks = "?" if r.ranks is None else r.ranks   # an import that does not prove its rank count
        print(printable(f"{r.id:>5}  {r.started_at:<24} {what:<{_MEASURED_WIDTH}} {r.status:<10} {ranks:>5} "
                        f"{item.measurements:>6}  {hosts:<24} {tags}"))


@results.command("show", epilog=SELECTOR_HELP)
@click.argument("selectors", nargs=-1, required=True, metavar="RUN...")
@json_option("per run, a `measurement` line per result, the `run` record, then `efficiency` lines")
@since_option
@db_option
def show_cmd(selectors: tuple[str, ...], as_json: bool, since: str | None, db: str | None) -> None:
    """Re-print stored runs as their tables (nccl-tests format for collectives)."""
    for i, (run, ms) in enumerate(iter_read_runs(db, selectors, since)):   # printed as read
        if as_json:
            emit_all(run_objects(run, ms))
            continue
        if i:
            print()
        lines = [f"# run {run.id}: {run.benchmark} ({run.status}) {run.started_at} .. {run.ended_at or '?'}",
                 f"# source: {run.source}; command: {' '.join(run.command)}"]
        if run.tags:
            lines.append("# tags: " + ", ".join(tag_term(k, v) for k, v in run.tags.items()))
        lines += render_run(run, ms)
        lines += [f"# error: {e}" for e in run.errors]
        lines += [f"# warning: {w}" for w in run.meta.get(WARNINGS) or []]   # an import's doubts
        for text in lines:
            print(printable(text))


@results.command("export", epilog=SELECTOR_HELP)
@click.argument("selectors", nargs=-1, required=True, metavar="RUN...")
@click.option("--json", "as_json", is_flag=True,
              help="JSON lines (the default): per run, a `measurement` line per result, then the `run` "
                   "record, which `clusterbench import -` reads back (docs/json.md).")
@click.option("--csv", "as_csv", is_flag=True, help="CSV with one column per parameter.")
@click.option("--run-info", is_flag=True, hidden=True,
              help="Kept for old scripts: every run's record is printed anyway.")
@since_option
@db_option
def export_cmd(selectors: tuple[str, ...], as_json: bool, as_csv: bool, run_info: bool, since: str | None,
               db: str | None) -> None:
    """Export stored runs' measurements as JSON lines or CSV."""
    refuse_together("as_json", "as_csv")
    # printed as read, a chunk of runs at a time: an export of 100,000 runs holds one chunk
    if not as_csv:
        for run, ms in iter_read_runs(db, selectors, since):
            emit_all([*(measurement_line(m, run.id) for m in ms), run_line(run)])
        return
    write_csv(lambda: iter_read_runs(db, selectors, since))


@contextmanager
def said_when_stopped(what: str) -> Iterator[None]:
    """A signal that stops a delete or a tag says what the database holds: the runs the change
    committed with (it came as the commit ran), or nothing changed (the transaction rolled back).
    Exit 128 + the signal either way: the command was stopped."""
    try:
        yield
    except CommittedWhenInterrupted as e:
        ids = e.done if isinstance(e.done, list) else []
        for run_id in ids:
            print(f"{what} run {run_id}")
        raise Stopped(f"{stopped_by_words(e.signum)} as the change committed: {len(ids)} run(s) {what}", e.signum) from None
    except KeyboardInterrupt as e:
        signum = int(getattr(e, "signum", signal.SIGINT))
        raise Stopped(f"{stopped_by_words(signum)}: nothing {what} (the change was rolled back)", signum) from None


@results.command("delete", epilog=SELECTOR_HELP)
@click.argument("selectors", nargs=-1, required=True, metavar="RUN...")
@since_option
@db_option
def delete_cmd(selectors: tuple[str, ...], since: str | None, db: str | None) -> None:
    """Delete runs and everything stored with them (all the selected runs, or none)."""
    with said_when_stopped("deleted"):
        run_ids = delete_runs(db, selectors, since)
    # said once they are gone: an output that fails (`| head -1`) cannot stop a delete halfway
    for run_id in run_ids:
        print(f"deleted run {run_id}")


@results.command("tag", epilog=SELECTOR_HELP)
@click.argument("selector", metavar="RUN")
@click.argument("tags", nargs=-1, required=True, metavar="KEY=VALUE...")
@since_option
@db_option
def tag_cmd(selector: str, tags: tuple[str, ...], since: str | None, db: str | None) -> None:
    """Add or change tags on stored runs (every run RUN picks, or none)."""
    new = parse_tags(tags)   # a link_speed no judge can read is refused there
    with said_when_stopped("tagged"):
        tag_runs(db, (selector,), new, since)


@results.command("copy")
@click.option("--from", "source", type=DatabaseParam(), required=True, metavar="PATH|URL",
              help="Database to copy from: an SQLite file or postgresql://... (must exist; only read, never "
                   "migrated or written).")
@click.option("--to", "dest", type=DatabaseParam(writes=True), required=True, metavar="PATH|URL",
              envvar="CLUSTERBENCH_DB",
              help="Database to copy into (created and migrated as needed; env CLUSTERBENCH_DB).")
@db_passfile_option
@json_option("one `summary` line: from, to, copied, skipped, measurements and each run's ids")
def copy_cmd(source: str, dest: str, as_json: bool) -> None:
    """Copy every run the destination lacks, e.g. a laptop's history into the team database.

    Runs are known by their uid: a run copied twice is stored once, and a copy that was
    interrupted finishes when run again. Run ids differ between databases; tags do not.
    """
    from clusterbench.store.copy import CopiedRun, copy_databases, same_database

    if same_database(source, dest):   # every run would be skipped: a mistyped --to (or CLUSTERBENCH_DB)
        raise UsageError(f"--from and --to are the same database ({describe(source)}): nothing to copy")

    failed: list[OSError] = []

    def say(item: CopiedRun) -> None:
        if as_json or failed:
            return
        try:
            if item.copied:
                print(printable(f"run {item.source_id}: copied as run {item.dest_id} "
                                f"({item.benchmark}, {item.measurements} measurements)"))
            else:
                print(f"run {item.source_id}: skipped, already there as run {item.dest_id}")
        except OSError as e:
            # an output that fails (`| head -1`, a full disk) stops the printing, not the copy;
            # the command still ends saying so (output.py)
            failed.append(e)

    summary = copy_databases(source, dest, on_run=say)
    if failed:
        raise failed[0]
    if as_json:
        emit(summary_line("results copy", **summary.to_dict()))
        return
    print(f"copied {summary.copied} run(s) ({summary.measurements} measurements), skipped "
          f"{summary.skipped} already present: {summary.source} -> {summary.dest}")


commands = [results]
