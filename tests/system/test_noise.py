"""System tests (noise): whole commands and real processes: ranks, the CLI as a child,
launchers, servers or namespaces."""

from __future__ import annotations

import io
import json

import node_doubles
from json_schema import check_lines

from clusterbench.bench.stream import main as stream_main
from clusterbench.bench.stream.main import StreamConfig
from clusterbench.judge import noise
from clusterbench.ranks.context import RankOptions
from clusterbench.ranks.driver import Job
from clusterbench.report.terminal import TablePrinter, render_run
from clusterbench.runner import run_job
from clusterbench.store import Store


def _block(lines: list[str]) -> list[str]:
    """The noise block of a run's lines: its ``# warning:`` line and the indented ones below."""
    start = next(i for i, line in enumerate(lines) if line.startswith("# warning:"))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("#  ")), len(lines))
    assert not any(line.startswith("# warning:") for line in lines[end:])
    return lines[start:end]


def test_warnings_print_live_are_stored_and_shown_again(tmp_path):
    db = str(tmp_path / "r.db")
    cfg = StreamConfig(sizes=(4096,), numtimes=12, kernels=("Copy",), backend=node_doubles.SlowStart)
    live = io.StringIO()
    result = run_job(Job(stream_main.main, cfg, RankOptions(device="cpu", telemetry_interval=0), np=1),
                     "stream", ["clusterbench", "stream"], TablePrinter(out=live), db=db,
                     announce=lambda _: None, judge=noise.annotate)
    assert result.exit_code == 0
    live_lines = _block(live.getvalue().splitlines())
    assert live_lines[0].startswith("# warning: noise inside this run")
    assert any("have a first iteration much slower than the rest: stream 1" in line for line in live_lines)
    with Store.open(db) as store:
        run = store.get_run(result.run.id)
        shown = render_run(run, store.measurements(run.id))
    assert [w["kind"] for w in run.meta["noise"]] == [noise.FIRST, noise.SPREAD]
    assert _block(shown) == live_lines   # one block, the same from the stored run
    # after the table: the last row of the table comes before the block
    first_warning = shown.index(live_lines[0])
    assert "Copy" in shown[first_warning - 1]
    # and for scripts: the same warnings as `warning` lines after the run line, live and again
    from clusterbench.report.jsonl import JsonPrinter, run_objects

    printed = io.StringIO()
    JsonPrinter(printed).finish(run, store_ms := Store.open(db).measurements(run.id))
    lines = [json.loads(line) for line in printed.getvalue().splitlines()]
    kinds = [x["kind"] for x in lines]
    assert kinds.index("run") < kinds.index("warning")
    # each benchmark's warning of each kind, as stored (the block above says them together)
    assert [x["text"] for x in lines if x["kind"] == "warning"] == [w["text"] for w in run.meta["noise"]]
    assert [x for x in run_objects(run, store_ms) if x["kind"] == "warning"] == \
        [x for x in lines if x["kind"] == "warning"]
    check_lines(printed.getvalue())
