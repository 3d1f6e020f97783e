"""``clusterbench results``: list, show, export, delete, tag and copy stored runs."""

from __future__ import annotations

import csv
import json
import sys

import click

from clusterbench.cli.options import DatabaseParam, db_option, db_passfile_option, json_option
from clusterbench.records import WARNINGS
from clusterbench.report.terminal import render_run
from clusterbench.store import Store


@click.group("results")
def results() -> None:
    """Stored runs: list, show, export, delete, tag, copy."""


@results.command("list")
@json_option
@db_option
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--benchmark", default=None, help="Only runs of this benchmark (coll, stream, import, ...).")
def list_cmd(as_json: bool, db: str | None, limit: int, benchmark: str | None) -> None:
    """List runs, newest first."""
    with Store.open(db) as store:
        runs = store.list_runs(limit=limit, benchmark=benchmark)
        counts = store.measurement_counts()
    if as_json:
        for r in runs:
            print(json.dumps({**r.to_dict(), "measurements": counts.get(r.id, 0)}))
        return
    print(f"{'id':>5}  {'started (UTC)':<24} {'benchmark':<14} {'status':<10} {'ranks':>5} "
          f"{'meas':>6}  {'hosts':<24} tags")
    for r in runs:
        hosts = ",".join(r.hosts)
        hosts = hosts if len(hosts) <= 24 else hosts[:21] + "..."
        tags = ",".join(f"{k}={v}" for k, v in r.tags.items())
        print(f"{r.id:>5}  {r.started_at:<24} {r.benchmark:<14} {r.status:<10} {r.ranks:>5} "
              f"{counts.get(r.id, 0):>6}  {hosts:<24} {tags}")


@results.command("show")
@click.argument("run_id", type=int)
@json_option
@db_option
def show_cmd(run_id: int, as_json: bool, db: str | None) -> None:
    """Re-print a stored run as its table (nccl-tests format for collectives)."""
    with Store.open(db) as store:
        run = store.get_run(run_id)
        ms = store.measurements(run_id)
    if as_json:
        for m in ms:
            print(m.to_json(run.id))
        return
    print(f"# run {run.id}: {run.benchmark} ({run.status}) {run.started_at} .. {run.ended_at or '?'}")
    print(f"# source: {run.source}; command: {' '.join(run.command)}")
    if run.tags:
        print("# tags: " + ", ".join(f"{k}={v}" for k, v in run.tags.items()))
    for line in render_run(run, ms):
        print(line)
    for e in run.errors:
        print(f"# error: {e}")
    for w in run.meta.get(WARNINGS) or []:   # doubts about the figures (an import's checks)
        print(f"# warning: {w}")


@results.command("export")
@click.argument("run_id", type=int)
@click.option("--json", "fmt", flag_value="json", default=True, help="JSON lines (default).")
@click.option("--csv", "fmt", flag_value="csv", help="CSV with one column per parameter.")
@click.option("--run-info", is_flag=True, help="With --json: print the run record first.")
@db_option
def export_cmd(run_id: int, fmt: str, run_info: bool, db: str | None) -> None:
    """Export a run's measurements as JSON lines or CSV."""
    with Store.open(db) as store:
        run = store.get_run(run_id)
        ms = store.measurements(run_id)
    if fmt == "json":
        if run_info:
            print(json.dumps({"run_record": run.to_dict()}))
        for m in ms:
            print(m.to_json(run.id))
        return
    keys: list[str] = []
    for m in ms:
        for k in m.params:
            if k not in keys:
                keys.append(k)
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["run", "benchmark", "metric", "value", "unit", *keys])
    for m in ms:
        w.writerow([run.id, m.benchmark, m.metric, repr(m.value) if isinstance(m.value, float) else m.value,
                    m.unit, *[m.params.get(k, "") for k in keys]])


@results.command("delete")
@click.argument("run_ids", type=int, nargs=-1, required=True)
@db_option
def delete_cmd(run_ids: tuple[int, ...], db: str | None) -> None:
    """Delete runs and everything stored with them."""
    with Store.open(db) as store:
        for rid in run_ids:
            store.delete_run(rid)
            print(f"deleted run {rid}")


@results.command("tag")
@click.argument("run_id", type=int)
@click.argument("tags", nargs=-1, required=True, metavar="KEY=VALUE...")
@db_option
def tag_cmd(run_id: int, tags: tuple[str, ...], db: str | None) -> None:
    """Add or change tags on a stored run."""
    from clusterbench.cli.options import parse_tags

    with Store.open(db) as store:
        store.set_tags(run_id, parse_tags(tags))



@results.command("copy")
@click.option("--from", "source", type=DatabaseParam(), required=True, metavar="PATH|URL",
              help="Database to copy from: an SQLite file or postgresql://... (must exist).")
@click.option("--to", "dest", type=DatabaseParam(), required=True, metavar="PATH|URL",
              envvar="CLUSTERBENCH_DB",
              help="Database to copy into (created and migrated as needed; env CLUSTERBENCH_DB).")
@db_passfile_option
@click.option("--json", "as_json", is_flag=True, help='Print one {"kind": "summary", ...} object.')
def copy_cmd(source: str, dest: str, as_json: bool) -> None:
    """Copy every run the destination lacks, e.g. a laptop's history into the team database.

    Runs are known by their uid: a run copied twice is stored once, and a copy that was
    interrupted finishes when run again. Run ids differ between databases; tags do not.
    """
    from clusterbench.store.copy import CopiedRun, copy_runs

    def say(item: CopiedRun) -> None:
        if as_json:
            return
        if item.copied:
            print(f"run {item.source_id}: copied as run {item.dest_id} "
                  f"({item.benchmark}, {item.measurements} measurements)")
        else:
            print(f"run {item.source_id}: skipped, already there as run {item.dest_id}")

    with Store.open(source, create=False) as src, Store.open(dest) as dst:
        summary = copy_runs(src, dst, on_run=say)
    if as_json:
        print(json.dumps(summary.to_dict()))
        return
    print(f"copied {summary.copied} run(s) ({summary.measurements} measurements), skipped "
          f"{summary.skipped} already present: {summary.source} -> {summary.dest}")


commands = [results]
